export default { summary: 'TODO', usage: 'import', options: {}, async run() { return 4; } };
