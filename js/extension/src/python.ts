// The Python snippets the extension runs in the kernel. Each defines one private coroutine,
// awaits it (top-level await works in the Pyodide kernel) and deletes it again, so nothing is
// left in the user's namespace; the result is one JSON line after MARKER (see kernel.ts).
import { MARKER } from './kernel';

// Python string literal for any JS string (JSON string syntax is valid Python here).
const py = (s: string | null): string => (s === null ? 'None' : JSON.stringify(s));

function wrap(body: string): string {
  const indented = body
    .split('\n')
    .map(l => '        ' + l)
    .join('\n');
  return `async def _elastic_lite_cmd():
    import json as _json
    def _out(d):
        print(${py(MARKER)} + _json.dumps(d, default=repr))
    try:
        try:
            import elastic_lite
        except ImportError:
            # not preloaded by this deployment: install it from the site's own piplite index
            import piplite
            await piplite.install("elastic-lite")
            import elastic_lite
${indented}
    except Exception as e:
        _out({"ok": False, "error": f"{type(e).__name__}: {e}"})
await _elastic_lite_cmd()
del _elastic_lite_cmd
`;
}

// elastic_lite.checkpoint() returns a Snapshot: report its names, size and what it skipped
// (never the bytes themselves, which can be large).
export function checkpointCode(name: string, notebook: string): string {
  return wrap(`snap = await elastic_lite.checkpoint(${py(name)}, notebook=${py(notebook)})
_out({"ok": True, "names": snap.names, "size": snap.size, "ms": snap.ms,
      "skipped": [{"name": s["name"], "reason": s["reason"]} for s in snap.skipped]})`);
}

// elastic_lite.restore() returns a RestoreReport: what came back, and what did not and why.
export function restoreCode(name: string): string {
  return wrap(`rep = await elastic_lite.restore(${py(name)})
d = rep.to_dict()
_out({"ok": True, "complete": rep.ok, "restored": d["restored"], "failed": d["failed"],
      "modules": [m for m in d["modules"] if not m["ok"]], "warnings": d["warnings"], "ms": d["ms"]})`);
}

// Ties the kernel's later checkpoints to the notebook: `%checkpoint` and
// `elastic_lite.checkpoint(name)` in a cell then carry `meta.notebook`, so the sidebar lists
// them with the notebook's own and the restore offer after a reload can pick them.
export function setNotebookCode(notebook: string): string {
  return wrap(`elastic_lite.set_notebook(${py(notebook)})
_out({"ok": True})`);
}
