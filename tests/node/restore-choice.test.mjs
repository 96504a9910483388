// The rule every host applies when a restore names no checkpoint (js/shared/report.mjs
// restoreChoice, the page's side of Python's session.timeline.restore_choice): after a kernel
// restart, the point the new kernel's first cell left is never what Restore or the restore
// offer bring back; the state that was lost is.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { holdsNothing, restoreChoice } from '../../js/shared/report.mjs';

const entry = (name, meta) => ({ name, meta });
const STARTED = 1_000_000; // when the restoring kernel started (ms)
const OWN = ['nb [1] new', 'nb [2] new']; // the names of the points the restoring kernel took

test('the offer and Restore skip the new kernel\'s own automatic points and empty ones', () => {
  const own = entry('nb [1] new', { auto: true, createdMs: STARTED + 5, variables: 1, names: ['y'] });
  const ownEmpty = entry('nb [2] new', { auto: true, createdMs: STARTED + 9, variables: 0, names: [], skipped: [] });
  const lost = entry('nb [7] old', { auto: true, createdMs: STARTED - 50, variables: 3, names: ['a', 'b', 'c'] });
  const older = entry('nb [6] old', { auto: true, createdMs: STARTED - 90, variables: 2, names: ['a', 'b'] });
  assert.equal(restoreChoice([ownEmpty, own, lost, older], OWN), lost);
  // a checkpoint a person saved in this kernel is a state they asked for: it is the choice
  const saved = entry('saved', { createdMs: STARTED + 7, variables: 1, names: ['y'], keep: true });
  assert.equal(restoreChoice([ownEmpty, saved, own, lost], OWN), saved);
  // an empty point of an earlier kernel (it ran only `1+1`) is passed over too
  const emptyOld = entry('nb [1] between', { auto: true, createdMs: STARTED - 10, variables: 0, names: [], skipped: [] });
  assert.equal(restoreChoice([emptyOld, lost], OWN), lost);
  // one whose variables all come back by replay is not empty
  const replayed = entry('nb [2] gen', { auto: true, createdMs: STARTED - 5, variables: 0, names: [], skipped: [{ name: 'g' }] });
  assert.equal(restoreChoice([replayed, lost], OWN), replayed);
  // fallbacks: only empty ones of others -> the newest of them; only own -> the newest; none -> null
  assert.equal(restoreChoice([own, emptyOld], OWN), emptyOld);
  assert.equal(restoreChoice([ownEmpty, own], OWN), ownEmpty);
  assert.equal(restoreChoice([], OWN), null);
  // no point of its own known: nothing is passed over as its own
  assert.equal(restoreChoice([own, lost]), own);
});

test('holdsNothing: no variable saved and none skipped', () => {
  assert.equal(holdsNothing({ variables: 0, names: [], skipped: [] }), true);
  assert.equal(holdsNothing(undefined), true);
  assert.equal(holdsNothing({ variables: 1, names: ['x'] }), false);
  assert.equal(holdsNothing({ variables: 0, names: [], skipped: [{ name: 'f' }] }), false);
});
