// The Python half of the demo's checkpoint pipeline (filled in when js/pyodide-glue.mjs lands).
export async function pythonSide(pyodide, { wheelsUrl, store }) {
  const { installElasticLite } = await import('../js/pyodide-glue.mjs');
  await installElasticLite(pyodide, { wheelsUrl, store });
  throw new Error('the demo does not drive elastic_lite yet');
}
