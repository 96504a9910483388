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
    import json as _json, dataclasses as _dc
    def _plain(x):
        if _dc.is_dataclass(x) and not isinstance(x, type):
            return _dc.asdict(x)
        if isinstance(x, (dict, list, tuple, str, int, float, bool)) or x is None:
            return x
        if hasattr(x, "__dict__"):
            return {k: v for k, v in vars(x).items() if not k.startswith("_")}
        return repr(x)
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

export function checkpointCode(name: string, notebook: string): string {
  return wrap(`r = await elastic_lite.checkpoint(${py(name)}, notebook=${py(notebook)})
_out({"ok": True, "result": _plain(r)})`);
}

export function restoreCode(name: string): string {
  return wrap(`r = await elastic_lite.restore(${py(name)})
_out({"ok": True, "result": _plain(r)})`);
}

/** Only makes sure elastic_lite is importable (used when a kernel becomes ready). */
export function pingCode(): string {
  return wrap(`_out({"ok": True, "version": getattr(elastic_lite, "__version__", None)})`);
}
