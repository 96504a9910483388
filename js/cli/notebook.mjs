// Reads the code cells of a Jupyter notebook (.ipynb, nbformat 4) for `elastic-lite run`.
//
// The cells are returned as written: IPython syntax in them (`%time x = f()`, `%matplotlib`,
// `!pip`, `%%time`) is elastic_lite.host.run_cell's business (it runs the statement of the
// timing magics and skips the rest with a warning naming the line).
import fs from 'node:fs/promises';
import { CliError, EXIT } from './errors.mjs';

/**
 * @returns {Promise<{ cells: { number: number, index: number, source: string }[],
 *                     language: string|null }>}
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
  nb.cells.forEach((cell, index) => {
    if (!cell || cell.cell_type !== 'code') return;
    const source = Array.isArray(cell.source) ? cell.source.join('') : String(cell.source ?? '');
    cells.push({ number: index + 1, index, source });
  });
  return { cells, language };
}
