// The Python half of the demo's checkpoint pipeline: installs elastic_lite into the worker's
// Pyodide through the shared glue, and loads demo/bridge.py, which calls elastic_lite's public
// snapshot()/load_snapshot() and hands back plain data (bytes + JSON) for the page.
import { installElasticLite } from '../js/pyodide-glue.mjs';
import { loadPythonModule } from './worker-pymodule.mjs';

export async function pythonSide(pyodide, { wheelsUrl, store }) {
  const el = await installElasticLite(pyodide, { wheelsUrl, store });
  el.destroy();
  const bridge = await loadPythonModule(pyodide, 'elastic_lite_demo_bridge', new URL('./bridge.py', import.meta.url));
  const takeSnapshot = bridge.take_snapshot.copy();
  const load = bridge.load.copy();
  const refused = bridge.refused.copy();
  bridge.destroy();

  return {
    // progress(done, total, label) is called from Python before each record is written.
    snapshot(progress) {
      const out = takeSnapshot(progress);
      const report = JSON.parse(out.report);
      return { bytes: out.bytes, ...report };
    },
    // Records of an inspection report that restore would refuse (deny-listed calls).
    refused(records) {
      return JSON.parse(refused(JSON.stringify(records)));
    },
    load(bytes) {
      const result = JSON.parse(load(bytes));
      if (result.error) {
        const err = new Error(result.error);
        err.checkpointError = true;
        throw err;
      }
      return result;
    },
  };
}
