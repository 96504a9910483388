export default { summary: 'TODO', usage: 'restore', options: {}, async run() { return 4; } };
