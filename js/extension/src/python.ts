// The Python snippets the extension runs in the kernel. Each defines one private coroutine,
// awaits it (top-level await works in the Pyodide kernel) and deletes it again, so nothing is
// left in the user's namespace; the result is one JSON line after MARKER (see kernel.ts).
// Every operation is a call of elastic_lite.host (docs/INTERFACES.md, "Report schema"): the
// extension renders its report and judges nothing itself.
import { MARKER } from './kernel';

// Python string literal for any JS string (JSON string syntax is valid Python here).
const py = (s: string): string => JSON.stringify(s);

function wrap(body: string): string {
  const indented = body
    .split('\n')
    .map(l => '        ' + l)
    .join('\n');
  return `async def _elastic_lite_cmd():
    import json as _json
    import sys as _sys
    def _out(text):
        print(${py(MARKER)} + text)
    try:
        try:
            import elastic_lite
        except ImportError:
            if _sys.platform != "emscripten":  # desktop Jupyter: nothing to install it from
                raise ImportError("elastic_lite is not installed in this kernel's Python "
                                  f"({_sys.executable}): pip install elastic-lite into its "
                                  "environment, then restart the kernel") from None
            # not preloaded by this deployment: install it from the site's own piplite index
            import piplite
            await piplite.install("elastic-lite")
            import elastic_lite
        if _sys.platform != "emscripten":
            # a desktop CPython kernel (ipykernel): what "%load_ext elastic_lite" does, before
            # anything else (idempotent): its store (a folder beside the notebook), its
            # automatic point after each cell
            from IPython import get_ipython as _shell
            if _shell() is not None:
                _shell().extension_manager.load_extension("elastic_lite")
${indented}
    except Exception as e:
        _out(_json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
await _elastic_lite_cmd()
del _elastic_lite_cmd
`;
}

/** Base64 of bytes, in chunks (String.fromCharCode of a large array overflows the stack). */
function base64(bytes: Uint8Array): string {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

/**
 * `await elastic_lite.host.call(op, kwargs)`: its report as the result. `data`: container
 * bytes (an import), carried into the kernel as base64 inside the snippet.
 */
export function hostCode(op: string, kwargs: Record<string, unknown>, data?: Uint8Array): string {
  const bytes = data ? `__import__("base64").b64decode(${py(base64(data))})` : 'None';
  return wrap(`import elastic_lite.host
_out(await elastic_lite.host.call(${py(op)}, ${py(JSON.stringify(kwargs))}, ${bytes}))`);
}

// Ties the kernel's later checkpoints to the notebook: `%checkpoint` and
// `elastic_lite.checkpoint(name)` in a cell then carry `meta.notebook`, so the sidebar lists
// them with the notebook's own and the restore offer after a reload can pick them. It also
// starts the session recorder (idempotent): the cells run from then on are the history a
// checkpoint carries, and restore recomputes by replaying them what could not be saved.
//
// It answers which kind of kernel this is (`host`): a desktop CPython kernel keeps its store
// in a folder beside the notebook on the server's machine and takes the automatic point after
// each cell itself (wrap loads its IPython extension), so the page lists, deletes and exports
// through the kernel and takes no automatic point of its own (controller.ts).
export function setNotebookCode(notebook: string, label: string | null = null): string {
  return wrap(`elastic_lite.set_notebook(${py(notebook)}, label=${label === null ? 'None' : py(label)})
elastic_lite.record_session()
_out(_json.dumps({"ok": True, "host": "pyodide" if _sys.platform == "emscripten" else "cpython"}))`);
}

/** host.list of each notebook in `notebooks` (null: every checkpoint), in one request, and
 * the folder the kernel's store keeps them in: `{ok, lists: [report, ...], store}`. */
export function listCode(notebooks: (string | null)[]): string {
  return wrap(`import elastic_lite.host
_out(_json.dumps({"ok": True, "lists": [await elastic_lite.host.list(notebook=_n)
                                        for _n in _json.loads(${py(JSON.stringify(notebooks))})],
                  "store": getattr(await elastic_lite.get_store(), "dir", None)}, default=str))`);
}

/** host.export with its bytes as base64 (host.call leaves bytes out of its JSON). */
export function exportCode(name: string): string {
  return wrap(`import base64 as _b64
import elastic_lite.host
_r = await elastic_lite.host.export(${py(name)})
_d = _r.pop("data", None)
_r["base64"] = None if _d is None else _b64.b64encode(_d).decode("ascii")
_out(_json.dumps(_r, default=str))`);
}
