export default { summary: 'TODO', usage: 'run', options: {}, async run() { return 4; } };
