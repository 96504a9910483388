export default { summary: 'TODO', usage: 'inspect', options: {}, async run() { return 4; } };
