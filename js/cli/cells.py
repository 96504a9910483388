# Runs code the way the next notebook cell would: in __main__'s namespace, with top-level
# await, the value of a final expression shown like Out[n], and a traceback that starts at the
# user's code (not at Pyodide's machinery). Loaded by js/cli/pyodide-session.mjs into a private
# dict, so nothing here ends up in the user's namespace or in a checkpoint.
import linecache
import sys
import traceback

from pyodide.code import eval_code_async


def _cell_traceback(exc, filename):
    """The traceback text from the first frame of the cell itself onwards."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    if tb is None:  # e.g. a SyntaxError: raised while compiling, before any cell frame
        return "".join(traceback.format_exception_only(type(exc), exc))
    return "".join(traceback.format_exception(type(exc), exc, tb))


async def run_cell(source, label):
    """Returns [ok, repr of the final expression or None, traceback text or None]."""
    filename = f"<{label}>"
    namespace = sys.modules["__main__"].__dict__
    # Tracebacks show the cell's source lines, as in a notebook (one entry per cell label).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        value = await eval_code_async(source, namespace, filename=filename)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are failures of the cell too
        return [False, None, _cell_traceback(exc, filename)]
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    if value is None:
        return [True, None, None]
    namespace["_"] = value  # like IPython; names starting with "_" are never checkpointed
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not turn success into failure
        text = f"<repr() failed: {type(exc).__name__}: {exc}>"
    return [True, text, None]


def fresh_main():
    """Removes what setting up the interpreter left in __main__ (e.g. the glue's own imports),
    so the notebook starts from an empty namespace like a new kernel, and checkpoints do not
    carry bindings the user never made. Returns the names removed."""
    namespace = sys.modules["__main__"].__dict__
    leftovers = [n for n in namespace if not n.startswith("_")]
    for n in leftovers:
        del namespace[n]
    return leftovers
