// The words of the one restore path's five situations (tests/vectors/host-words.json `restore`:
// empty store, ok, missing name, foreign, damaged), for the JS tests of a host's leg that read
// them off a page or a terminal rather than a report.
import fs from 'node:fs';

export const RESTORE_WORDS = Object.fromEntries(JSON.parse(fs.readFileSync(new URL('../vectors/host-words.json', import.meta.url), 'utf8'))
  .restore.map((w) => [w.situation, w]));

/** Whether `text` (a line or a page's words) shows the problem sentence `want` asks for. */
export const shows = (text, want) => ('message' in want ? text.includes(want.message)
  : 'contains' in want ? text.includes(want.contains) : new RegExp(want.pattern.replace(/^\^/, '')).test(text));
