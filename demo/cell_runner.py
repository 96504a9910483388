"""Runs one demo cell in the notebook namespace, the way a notebook kernel would.

Loaded by demo/worker.mjs into its own module (not into ``__main__``), so nothing here shows up
among the user's variables or in a checkpoint. Cells run in ``__main__.__dict__``: that is the
namespace ``elastic_lite.checkpoint()`` captures and ``restore()`` fills, so what a cell defines
is what gets saved, and what a restore brings back is visible to the next cell.
"""

import linecache
import sys
import traceback

from pyodide.code import eval_code_async


async def run_cell(source: str, cell_id: str) -> dict:
    filename = f"<cell {cell_id}>"
    # Register the source so tracebacks can show the offending line, as in Jupyter.
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    namespace = sys.modules["__main__"].__dict__
    try:
        value = await eval_code_async(
            source, namespace, filename=filename, return_mode="last_expr"
        )
    except BaseException as exc:  # the user's error is output, not a worker failure
        return {
            "ok": False,
            "ename": type(exc).__name__,
            "evalue": str(exc),
            "traceback": _format_user_traceback(exc, filename),
        }
    if value is not None:
        # Like a notebook's Out[n]: the last expression's value. Keep `_` for the user too.
        namespace["_"] = value
    return {"ok": True, "repr": None if value is None else _safe_repr(value)}


def _format_user_traceback(exc: BaseException, filename: str) -> str:
    # Drop the frames of Pyodide's own evaluation machinery: the person wants to see their
    # cell's lines (and anything their code called), not eval_code_async internals.
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _safe_repr(value, limit: int = 10_000) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not look like a failed cell
        return f"<repr failed: {type(exc).__name__}: {exc}>"
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"
