// The notebook reader of `elastic-lite run`: which cells run, as written (IPython syntax in
// them is elastic_lite.host.run_cell's business: tests/py/test_host.py). No Python needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { readNotebook } from '../../js/cli/notebook.mjs';
import { tempWorkdir, NOTEBOOKS } from './cli-helpers.mjs';

async function nbFile(doc) {
  const file = path.join(await tempWorkdir('el-nb-'), 'n.ipynb');
  await fs.writeFile(file, typeof doc === 'string' ? doc : JSON.stringify(doc));
  return file;
}
const code = (source) => ({ cell_type: 'code', metadata: {}, source, outputs: [], execution_count: null });

test('code cells in order, numbered as the notebook shows them; markdown and raw cells ignored', async () => {
  const { cells } = await readNotebook(path.join(NOTEBOOKS, 'basic.ipynb'));
  assert.deepEqual(cells.map((c) => c.number), [2, 3, 4, 5]);
  assert.match(cells[0].source, /^import math\nfrom collections import Counter\n/);
});

test('cells come as written, IPython lines included; source lists are joined', async () => {
  const file = await nbFile({
    nbformat: 4, metadata: {},
    cells: [code(['%matplotlib inline\n', 'x = 1\n', 'if x:\n', '    !ls\n', '    y = 2']), code('%%time\nz = 3'),
      { cell_type: 'raw', source: 'raw' }, code('w = 4')],
  });
  const { cells } = await readNotebook(file);
  assert.deepEqual(cells.map((c) => [c.number, c.source]), [
    [1, '%matplotlib inline\nx = 1\nif x:\n    !ls\n    y = 2'], [2, '%%time\nz = 3'], [4, 'w = 4']]);
});

test('not a notebook, an old notebook, another language: clear errors', async () => {
  await assert.rejects(readNotebook(await nbFile('{"cells": 3}')), /not a Jupyter notebook in nbformat 4 \(no "cells" list\)\.$/);
  await assert.rejects(readNotebook(await nbFile({ nbformat: 3, worksheets: [] })), /nbformat 3 notebook: open and save it in Jupyter/);
  await assert.rejects(readNotebook(await nbFile({ nbformat: 4, cells: [], metadata: { kernelspec: { language: 'R' } } })),
    /the notebook's language is R; elastic-lite runs Python notebooks/);
  await assert.rejects(readNotebook(await nbFile('\u0000\u0001binary')), /not valid JSON/);
  await assert.rejects(readNotebook('/nonexistent/x.ipynb'), (err) => err.exitCode === 3 && /no such notebook file/.test(err.message));
});
