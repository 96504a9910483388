"""elastic_lite.host: the one API every host calls, and the one report shape it answers with.

The CLI (`elastic-lite`), the demo page's worker, the JupyterLite extension and the IPython
magics do not orchestrate anything themselves: they call these coroutines and render the
report; checkpoint, restore, list, delete, export and inspect are the kernel session's
(session.kernel), as are the public `elastic_lite.checkpoint()`... (the same words, the same
report). Each returns ONE JSON-able dict (docs/INTERFACES.md, "Report schema"):

    {"op": "checkpoint" | "restore" | "list" | "delete" | "import" | "export" | "inspect"
           | "run_cell",
     "ok": bool, "problems": [problem...], "warnings": [str...], "timings": {"..._ms": float},
     ...fields of the operation}

A problem is {kind, names, record, message, code, calls, offset} (_report.problem): kinds
damaged / refused / needs / failed, decided from structure (the core's record state and error
code, the deny-list, an exception's type), never from message text. Hosts never re-validate:
restore reports the inspection load_snapshot validated with.

Policies that live here (the others: in the kernel session):
- import validates before it stores: a file that is not whole (any damaged record, or no
  checkpoint at all) is refused and nothing is stored; a whole file whose records would call
  code-running globals is stored, and the report lists those records as `refused` problems;
  an imported checkpoint stays foreign: restore loads nothing of it until trusted;
- the metadata of a store entry comes from `_report.checkpoint_meta`;
- `run_cell` is how hosts without IPython run a notebook cell (top-level await, the final
  expression's repr, a traceback from the cell's own frame, %time-style magics), and
  `observers` is where a session recorder hooks in.

JS hosts go through `call(op, kwargs_json, data, progress)`: JSON in, JSON text out, bytes as
a Uint8Array, progress as a JS function receiving JSON text.
"""

import ast
import inspect as _pyinspect
import json
import linecache
import sys
import time
import traceback

from . import _jsbytes
from .replay import recorder as _recorder
from .session import timeline as _timeline
from .store import stores as _stores
from .capture.selection import default_namespace
from .session.kernel import (SESSION, EMPTY, _ms, bad_name, fail, inspection, is_manifest,
                             new_report, quoted, store_failure)
from ._report import checkpoint_meta, describe_error, inspection_problems, problem

# run_cell observers: objects with optional `before(source, raw=None)` and `after(ok,
# error=None)` methods, called around every cell run_cell executes (after the session
# recorder of the namespace, which run_cell feeds itself).
observers = []


_as_bytes = _jsbytes.as_buffer  # a JS Uint8Array (JsProxy) is copied in once


def _data_records(info):
    """The records holding variables (not the manifest, not a session history)."""
    return [r for r in info.get("records") or []
            if r.get("kind") in ("data", None) and not is_manifest(r)]


# --- the operations of the kernel session (session.kernel.KernelSession) ---------------------

checkpoint, restore, inspect = SESSION.checkpoint, SESSION.restore, SESSION.inspect
list, delete, export = SESSION.list, SESSION.delete, SESSION.export  # noqa: A001


async def import_checkpoint(data, name=None, *, notebook=None, replace=False, unique=False,
                            source=None, trust=False):
    """Validate container bytes from elsewhere, then store them as `name`.

    A file that is not whole is refused and nothing is stored. A whole file is stored even
    when some records would call code-running globals: those are listed as `refused`
    problems (`ok` stays true), because restore refuses them unless trusted. A name already
    in the store is a problem unless `replace` (overwrite) or `unique` (store as "name (2)"...).
    `source`: where the bytes came from (a file name), kept in the metadata as `imported`.
    It is stored unsigned, so restore treats it as foreign (loads nothing unconfirmed) —
    unless `trust`: the person looked at what it would import and vouches for it; it is then
    signed as this store's own. Without a name: "<notebook> imported <UTC time>" for a
    notebook (its label), else "imported".
    """
    t0 = time.perf_counter()
    if not name:
        name = (_timeline.point_name(f"{SESSION.label_of(notebook)} imported", auto=False)
                if notebook is not None else "imported")
    report = new_report("import", name=name, size=0, stored=False, variables=[], meta=None)
    data = _as_bytes(data)
    report["size"] = len(data)
    if len(data) == 0:
        return fail(report, "damaged", EMPTY, code="empty")
    if bad_name(report, name):
        return report
    info, _, judgement = inspection(data)
    report["timings"]["validate_ms"] = _ms(t0)
    found = inspection_problems(info, judgement=judgement)
    damaged = [p for p in found if p["kind"] == "damaged"]
    if damaged or not info.get("ok"):
        report["problems"] = damaged or found
        report["ok"] = False
        report["warnings"].append("nothing was imported")
        return report
    report["problems"] = found  # refused records only: stored, restore refuses them
    names = [n for r in _data_records(info) for n in r.get("names") or []]
    report["variables"] = names
    try:
        store = await SESSION.get_store()
    except Exception as exc:
        return store_failure(report, exc)
    try:
        taken = {e["name"] for e in await store.list()}
        if name in taken and unique:
            base, i = name, 2
            while name in taken:
                name, i = f"{base} ({i})", i + 1
            report["name"] = name
        elif name in taken and not replace:
            return fail(report, "failed", f"a checkpoint named {quoted(name)} already exists; "
                         "choose another name or replace it", code="exists")
        meta = checkpoint_meta(names, [], len(data), notebook=notebook,
                               imported=source or True, keep=True,
                               originalCreatedMs=info.get("created_ms"),
                               producer=info.get("producer"), python=info.get("python"))
        t1 = time.perf_counter()
        await store.put(name, data, meta, sign=bool(trust))
    except _stores.StoreError as exc:
        return store_failure(report, exc)
    report["timings"].update(store_ms=_ms(t1), total_ms=_ms(t0))
    report.update(stored=True, meta=meta, signed=bool(trust))
    return report


# --- run_cell -----------------------------------------------------------------------------

_TIMING = ("time", "timeit")
_TIMEIT_VALUE_OPTIONS = ("-n", "-r", "-p")


def _timeit_statement(text):
    """The statement of `%timeit [options] STATEMENT` (options dropped)."""
    words = text.split(" ")
    i = 0
    while i < len(words) and (words[i].startswith("-") or words[i] == ""):
        if words[i] in _TIMEIT_VALUE_OPTIONS:
            i += 1  # "-n 100": the value is its own word
        i += 1
    return " ".join(words[i:]).strip()


def _ipython_shell(namespace):
    """IPython's shell when IPython runs this kernel and `namespace` is its user namespace."""
    ipython = sys.modules.get("IPython")
    try:
        shell = ipython.get_ipython() if ipython is not None else None
    except Exception:
        return None
    return shell if shell is not None and getattr(shell, "user_ns", None) is namespace else None


def _without_magics(code, label):
    """Plain Python for a cell that may hold IPython syntax, and a warning per changed line.

    `%time STMT`, `%timeit [options] STMT` and `%%time` / `%%timeit` cells run their statement
    once (untimed: they define names the next cells use); any other magic or `!shell` line
    becomes `pass`; another cell magic skips the cell. Line numbers are kept. Code that parses
    as Python is left alone (a `%` line inside a string stays as it is)."""
    try:
        ast.parse(code)
        return code, []
    except SyntaxError:
        pass
    lines = code.split("\n")
    warnings = []
    head = lines[0].strip()
    if head.startswith("%%"):
        magic, _, rest = head[2:].partition(" ")
        if magic not in _TIMING:
            warnings.append(f'{label}: skipped, it is an IPython cell magic ("{head}") and this '
                            "kernel has no IPython")
            return "pass", warnings
        setup = _timeit_statement(rest) if magic == "timeit" else ""
        warnings.append(f'{label}, line 1: ran the cell of "%%{magic}" once, without timing it')
        lines[0] = setup
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        if stripped.startswith("%") and not stripped.startswith("%%"):
            magic, _, rest = stripped[1:].partition(" ")
            stmt = rest.strip() if magic == "time" else _timeit_statement(rest)
            if magic in _TIMING and stmt:
                lines[i] = indent + stmt
                warnings.append(f'{label}, line {i + 1}: ran the statement of "{stripped}" once, '
                                "without timing it")
                continue
        elif not stripped.startswith("!"):
            continue
        lines[i] = indent + "pass"
        warnings.append(f'{label}, line {i + 1}: skipped IPython line "{stripped}" (this kernel '
                        "has no IPython)")
    return "\n".join(lines), warnings


def _cell_traceback(exc, filename):
    """The traceback from the first frame of the cell itself onwards."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    if tb is None:  # e.g. a SyntaxError: raised while compiling, before any cell frame
        return "".join(traceback.format_exception_only(type(exc), exc))
    return "".join(traceback.format_exception(type(exc), exc, tb))


async def _execute(source, filename, ns):
    """Runs `source` in `ns` like a notebook cell; returns the final expression's value."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = ast.parse(source, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    for node, mode in ((tree, "exec"), (last, "eval")):
        if node is None:
            continue
        code = compile(node, filename, mode, flags=flags)
        value = eval(code, ns)
        if code.co_flags & _pyinspect.CO_COROUTINE:  # the cell itself awaits something
            value = await value
    return value if last is not None else None


def _notify(watchers, method, report, *args, **kwargs):
    for obs in watchers:
        fn = getattr(obs, method, None)
        if fn is None:
            continue
        try:
            fn(*args, **kwargs)
        except Exception as exc:  # a broken observer must not break the person's cell
            report["warnings"].append(f"cell observer {obs!r}.{method} failed: "
                                      f"{type(exc).__name__}: {exc}")


async def run_cell(code, label=None, *, namespace=None, count=None):
    """Run `code` as the next notebook cell: in the user namespace, top-level `await` allowed,
    the final expression's repr as `value` (and bound to `_`, as IPython does), a failure as
    `traceback` starting at the cell's own frame. IPython syntax: see _without_magics (where
    IPython runs the kernel, IPython transforms the cell instead). The session recorder of
    the namespace records it (as `In [count]`; default: the next number), then observers."""
    t0 = time.perf_counter()
    label = label or "cell"
    ns = default_namespace() if namespace is None else namespace
    report = new_report("run_cell", label=label, value=None, traceback=None, error=None)
    filename = f"<{label}>"
    shell = _ipython_shell(ns)
    if shell is not None:
        source = shell.transform_cell(code)
    else:
        source, report["warnings"] = _without_magics(code, label)
    # Tracebacks show the cell's lines, as in a notebook (one entry per cell label).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    watchers = [_recorder.recorder_for(ns, create=True), *observers]
    raw = code if code != source else None
    _notify(watchers[:1], "before", report, source, raw=raw, count=count)
    _notify(watchers[1:], "before", report, source, raw=raw)
    error = None
    try:
        value = await _execute(source, filename, ns)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are failures of the cell too
        error = exc
        report.update(ok=False, traceback=_cell_traceback(exc, filename),
                      error={"type": type(exc).__name__, "message": str(exc)})
        report["problems"].append(problem("failed", f"{type(exc).__name__}: {exc}",
                                          code="exception"))
        value = None
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    if value is not None:
        ns["_"] = value  # like IPython; names starting with "_" are never checkpointed
        try:
            report["value"] = repr(value)
        except Exception as exc:  # a broken __repr__ must not turn success into failure
            report["value"] = f"<repr() failed: {type(exc).__name__}: {exc}>"
    _notify(watchers, "after", report, report["ok"], error=error)
    report["timings"]["run_ms"] = _ms(t0)
    return report


# --- the JS hosts' entry point ----------------------------------------------------------------

_OPS = {"checkpoint": checkpoint, "restore": restore, "list": list, "delete": delete,
        "import": import_checkpoint, "export": export, "inspect": inspect, "run_cell": run_cell}


async def call(op, kwargs_json="{}", data=None, progress=None, utf8=False):
    """Run operation `op` with keyword arguments from JSON text; returns the report as JSON
    text. `data`: container bytes (a JS Uint8Array) for restore / inspect / import;
    `progress`: a JS function called with each progress event as JSON text. `utf8` (a JS
    caller): the report as a Uint8Array of its UTF-8 JSON instead -- Pyodide hands a str of
    64 ASCII characters or more that lies above 2 GiB of its heap to JS as NULs (_jsbytes),
    and a report made after a large state was loaded can lie there."""
    fn = _OPS.get(op)
    if fn is None:
        raise ValueError(f"unknown operation {op!r}; one of {', '.join(_OPS)}")
    kwargs = json.loads(kwargs_json or "{}")
    if not _stores._is_nullish(data):
        kwargs["data"] = _as_bytes(data)
    if not _stores._is_nullish(progress) and op in ("checkpoint", "restore"):
        kwargs["progress"] = lambda event: _jsbytes.call(None, progress, (json.dumps(event),))
    report = await fn(**kwargs)
    report.pop("data", None)
    text = json.dumps(report, default=str)
    return _jsbytes.to_js(text.encode()) if utf8 else text


__all__ = ["checkpoint", "restore", "list", "delete", "import_checkpoint", "export", "inspect",
           "run_cell", "call", "observers", "describe_error"]
