export default { summary: 'TODO', usage: 'verify', options: {}, async run() { return 4; } };
