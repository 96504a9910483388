// Reads the code cells of a Jupyter notebook (.ipynb, nbformat 4) for `elastic-lite run`.
//
// The CLI runs plain Python in Pyodide, without IPython: lines that are IPython syntax
// (`%magic`, `!shell`) and cells that are cell magics (`%%time`) cannot run, so they are
// turned into comments and reported as warnings instead of failing the whole notebook.
import fs from 'node:fs/promises';
import { CliError, EXIT } from './errors.mjs';

const MAGIC_LINE = /^\s*[%!]/;

/**
 * @returns {Promise<{ cells: { number: number, index: number, source: string }[],
 *                     warnings: string[], language: string|null }>}
 *   number: the cell's 1-based position among ALL cells (what a person sees in the notebook)
 */
export async function readNotebook(file) {
  let text;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT') throw new CliError(`${file}: no such notebook file.`, EXIT.NOT_FOUND);
    throw new CliError(`${file}: cannot read the notebook (${err.message}).`, EXIT.ENV);
  }
  let nb;
  try {
    nb = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${file}: not a Jupyter notebook (the file is not valid JSON: ${err.message}).`);
  }
  if (!nb || typeof nb !== 'object' || !Array.isArray(nb.cells)) {
    const old = nb && Array.isArray(nb.worksheets);
    throw new CliError(`${file}: not a Jupyter notebook in nbformat 4 (no "cells" list)` +
      (old ? '; it is an nbformat 3 notebook: open and save it in Jupyter to upgrade it.' : '.'));
  }
  const language = nb.metadata?.kernelspec?.language ?? nb.metadata?.language_info?.name ?? null;
  if (language && String(language).toLowerCase() !== 'python') {
    throw new CliError(`${file}: the notebook's language is ${language}; elastic-lite runs Python notebooks.`);
  }
  const cells = [];
  const warnings = [];
  nb.cells.forEach((cell, index) => {
    if (!cell || cell.cell_type !== 'code') return;
    const number = index + 1;
    const raw = Array.isArray(cell.source) ? cell.source.join('') : String(cell.source ?? '');
    if (/^\s*%%/.test(raw)) {
      warnings.push(`cell ${number}: skipped, it is an IPython cell magic (${raw.trim().split('\n')[0]}); ` +
        'the CLI runs plain Python');
      return;
    }
    const lines = raw.split('\n').map((line, i) => {
      if (!MAGIC_LINE.test(line)) return line;
      warnings.push(`cell ${number}, line ${i + 1}: skipped IPython line "${line.trim()}"; the CLI runs plain Python`);
      return line.replace(/^(\s*)/, '$1pass  # elastic-lite: skipped IPython line: ');
    });
    cells.push({ number, index, source: lines.join('\n') });
  });
  return { cells, warnings, language };
}
