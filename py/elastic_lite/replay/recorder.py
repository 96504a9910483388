"""The session recorder: what every executed cell read, wrote and did (for replay).

Per cell it keeps: execution count, code, the names read (each with the *version* it read:
the id of the cell that last wrote that name, 0 for a value from outside the recorded
history), the names written and deleted, ok/failed, run time and side-effect flags. Planning
a replay (`replay/engine.py`) is then a walk over versions: to recreate a value, re-run the cell that
wrote that version, after recreating the versions that cell read.

How a write is found, cheaply (no walk of the objects):
- the cell's syntax tree (`replay.cell_ast.analyze`): assignments, imports, defs, `del`, and
  in-place changes (`x.a = ..`, `x[i] = ..`, method calls, `next(x)`...);
- calls of notebook functions: the globals their bodies rebind or change (analyzed when the
  function was defined), and the arguments they change;
- a before/after comparison of the namespace by identity (`id()` of each binding) for what the
  code does not name: `exec`, `globals()[...] = ...`, `from m import *`;
- reading a *stateful* value (an iterator, a file, a database connection or cursor) counts as
  writing it: `next(gen)`, `for row in cur`, `f.readline()` advance it.

Side effects come from the syntax tree (print, open(..., "w"), plt.show(), fetch, ...), with
the effects of the notebook functions a cell calls. Optionally (`Recorder(audit=True)`) also at
run time, from an audit hook: files opened for writing, removed or renamed, network
connections, subprocesses, sqlite databases on disk — also when library code does them. It is
off by default because an audit hook can never be removed and Python calls it for every
`id()` in the process (measured: `id()` 5.6x slower, +0.5 us a call), which would slow every
later checkpoint's grouping walk and this recorder's own namespace comparison.

Hooks: `attach(shell)` uses IPython's pre_run_cell/post_run_cell events (silent cells, such
as the JupyterLite extension's own snippets, are not recorded); hosts without IPython call
`before(code)` / `after(ok)` around each cell. The recorder never raises into the cell it
records: a failure of its own marks that cell as not replayable, with the reason.

Memory stays bounded: cells no plan could ever need (nothing they wrote is still current,
directly or through what later cells read) are dropped; code longer than `max_cell_code` is
not kept; past `max_code` characters in total the oldest cells lose their code, and past
`max_cells` the oldest cells are dropped (what needed them is then reported as unavailable).
"""

import builtins
import dis
import io
import itertools
import operator
import os
import re
import sys
import time
import types

from ..capture.selection import KERNEL_NAMES, default_namespace, ipython_shell
from .cell_ast import IPYTHON_HISTORY, FunctionInfo, analyze
from .._words import quoted

HISTORY_FORMAT = "elastic-lite-history"
HISTORY_VERSION = 1
NO_REPLAY = re.compile(r"^[ \t]*#[ \t]*elastic-lite:[ \t]*no-replay\b", re.M)


class HistoryError(ValueError):
    """A saved session history that cannot be read (damaged or not a history at all)."""


# -- values ------------------------------------------------------------------------------

_PLAIN = frozenset({int, float, complex, str, bytes, bytearray, bool, type(None), list, dict,
                    tuple, set, frozenset, range, types.FunctionType, type})
_STATEFUL_MODULES = frozenset({"sqlite3", "_sqlite3", "socket", "_socket", "ssl", "_ssl",
                               "selectors", "select", "io", "_io", "zipfile", "tarfile"})
_IMMUTABLE = frozenset({int, float, complex, str, bytes, bool, type(None), tuple, frozenset,
                        range})


def is_stateful(value):
    """True if merely using the value may change it: iterators and generators (next),
    files (read position), database connections and cursors, sockets."""
    t = type(value)
    if t in _PLAIN:
        return False
    if hasattr(t, "__next__") or hasattr(t, "__anext__"):
        return True
    if getattr(t, "__module__", None) in _STATEFUL_MODULES:
        return True
    return isinstance(value, io.IOBase)


_DEREF_STORES = frozenset({"STORE_DEREF", "DELETE_DEREF"})
_UNCHANGING = (types.BuiltinFunctionType, type, types.ModuleType)


def _stores_free_variable(code):
    """Whether the code (or code nested in it) rebinds a variable of an enclosing function
    (`nonlocal total; total += k`)."""
    free = set(code.co_freevars)
    for ins in dis.get_instructions(code):
        if ins.opname in _DEREF_STORES and ins.argval in free:
            return True
    return any(_stores_free_variable(c) for c in code.co_consts if isinstance(c, types.CodeType))


def closure_changes(value, depth=0):
    """True if calling the function may change state only its closure holds: it rebinds a
    variable it closes over, or closes over an object that can change in place (a list, a
    dict, an instance). A closure over functions, classes, modules and immutable values (a
    decorator's wrapper, `lambda x: x * k`) changes nothing by being called."""
    if type(value) is not types.FunctionType or not value.__closure__:
        return False
    if _stores_free_variable(value.__code__):
        return True
    for cell in value.__closure__:
        try:
            held = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
        if type(held) is types.FunctionType:
            if depth < 4 and closure_changes(held, depth + 1):
                return True
        elif type(held) is tuple:
            if any(type(x) not in _IMMUTABLE for x in held):
                return True
        elif type(held) not in _IMMUTABLE and not isinstance(held, _UNCHANGING):
            return True
    return False


def _tracked(name):
    """Names the history follows: not dunders, not IPython's own (In, Out, _5, _i3...)."""
    return (isinstance(name, str) and not (name.startswith("__") and name.endswith("__"))
            and name not in KERNEL_NAMES and not IPYTHON_HISTORY.match(name))


def _code_names(code):
    """Every global name a code object (and the code nested in it) may load: a reading of a
    notebook function we never saw defined (restored, or made by a factory)."""
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


# -- side effects seen at run time ---------------------------------------------------------

_FILE_EVENTS = frozenset("""
os.remove os.rename os.mkdir os.rmdir os.truncate os.chmod os.chown os.link os.symlink
os.utime os.chflags os.lchflags shutil.copyfile shutil.copymode shutil.copystat
shutil.copytree shutil.rmtree shutil.move shutil.make_archive shutil.unpack_archive
""".split())
_NETWORK_EVENTS = frozenset("""
socket.connect socket.getaddrinfo socket.gethostbyname socket.gethostbyaddr socket.sendto
socket.bind urllib.Request http.client.connect ftplib.connect smtplib.connect
imaplib.open poplib.connect nntplib.connect telnetlib.Telnet.open webbrowser.open
""".split())
_COMMAND_EVENTS = frozenset("""
os.system subprocess.Popen os.exec os.spawn os.posix_spawn os.fork os.forkpty pty.spawn
os.startfile os.kill os.killpg
""".split())
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_CODE_FILE = re.compile(r"(\.(py|pyc|pyi|so|zip|whl|pth)$|/site-packages/|/lib/python\d)")
_MAX_RUNTIME_EFFECTS = 16


class _RuntimeEffects:
    """The one audit hook, installed by the first Recorder(audit=True). Collects into the
    innermost open collector (a recorded cell, or a replay); returns at once when none is
    open."""

    def __init__(self):
        self.stack = []
        self.installed = False

    def start(self, install=False):
        if install and not self.installed:
            sys.addaudithook(self._hook)
            self.installed = True
        self.stack.append({})

    def stop(self):
        found = self.stack.pop() if self.stack else {}
        if self.stack:
            self.stack[-1].update(found)
        return found

    def _hook(self, event, args):
        if not self.stack:
            return
        try:
            found = self.stack[-1]
            if len(found) >= _MAX_RUNTIME_EFFECTS:
                return
            effect = self._classify(event, args)
            if effect is not None:
                found.setdefault(effect)
        except Exception:  # an audit hook that raises would break the operation audited
            pass

    @staticmethod
    def _classify(event, args):
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if isinstance(mode, str):
                writes = any(c in mode for c in "wax+")
            else:
                writes = isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
            if writes:
                return ("writes-files", f"open({path!r}, {mode!r})" if mode else f"open({path!r})")
            if isinstance(path, str) and not _CODE_FILE.search(path):
                return ("reads-files", f"open({path!r})")
            return None
        if event == "sqlite3.connect":
            db = args[0] if args else None
            if isinstance(db, (str, bytes, os.PathLike)):
                db = os.fsdecode(db)
                if db in ("", ":memory:") or db.startswith("file::memory:") or "mode=memory" in db:
                    return None
            return ("writes-files", f"sqlite3.connect({db!r})")
        if event in _FILE_EVENTS:
            return ("writes-files", f"{event}({', '.join(repr(a) for a in args[:2])})")
        if event in _NETWORK_EVENTS:
            return ("network", f"{event}({args[1]!r})" if len(args) > 1 and event.startswith(
                "socket.") else event)
        if event in _COMMAND_EVENTS:
            return ("runs-command", event)
        return None


RUNTIME_EFFECTS = _RuntimeEffects()


# -- the record of one cell ----------------------------------------------------------------

class CellRecord:
    """One executed cell. JSON shape: see `to_json` (docs/INTERFACES.md, "Session history")."""

    def __init__(self, id, count, code):
        self.id = id  # the recorder's own sequence number (execution counts can repeat)
        self.count = count  # the execution count a person sees: In [count]
        self.code = code  # Python source as executed; None if not kept (see note)
        self.raw = None  # the cell as typed, when it differs (IPython magics)
        self.reads = {}  # name -> version read (writer cell id; 0: from outside the history)
        self.writes = []
        self.deletes = []
        self.ok = True
        self.error = None  # "ZeroDivisionError: division by zero"
        self.ms = 0.0
        self.effects = []  # [kind, detail, "code" | "run"]
        self.defs = {}  # name -> FunctionInfo.to_json() of functions/classes it defined
        self.opaque = None  # why its reads cannot be known, or None
        self.replay = True  # False: marked not to be replayed
        self.note = None  # why it cannot be replayed (code dropped, recorder failure...)
        self.started_ms = 0

    @property
    def label(self):
        return f"cell [{self.count}]" if self.count is not None else f"cell #{self.id}"

    @property
    def first_line(self):
        code = self.raw or self.code or ""
        for line in code.splitlines():
            if line.strip():
                return line.strip()[:80]
        return ""

    def to_json(self):
        return {"id": self.id, "count": self.count, "code": self.code, "raw": self.raw,
                "reads": dict(self.reads), "writes": list(self.writes),
                "deletes": list(self.deletes), "ok": self.ok, "error": self.error,
                "ms": round(self.ms, 3), "effects": [list(e) for e in self.effects],
                "defs": dict(self.defs), "opaque": self.opaque, "replay": self.replay,
                "note": self.note, "started_ms": self.started_ms}

    @classmethod
    def from_json(cls, d, where):
        c = cls(_int(d.get("id"), where + ".id", minimum=1), _opt_int(d.get("count"), where),
                _opt_str(d.get("code"), where + ".code"))
        c.raw = _opt_str(d.get("raw"), where + ".raw")
        reads = d.get("reads") or {}
        if not isinstance(reads, dict):
            raise HistoryError(f"{where}.reads is not an object")
        c.reads = {_str(k, where + ".reads"): _int(v, where + ".reads", minimum=0)
                   for k, v in reads.items()}
        c.writes = _str_list(d.get("writes"), where + ".writes")
        c.deletes = _str_list(d.get("deletes"), where + ".deletes")
        c.ok = bool(d.get("ok", True))
        c.error = _opt_str(d.get("error"), where + ".error")
        ms = d.get("ms", 0)
        c.ms = float(ms) if isinstance(ms, (int, float)) and not isinstance(ms, bool) else 0.0
        effects = d.get("effects") or []
        if not isinstance(effects, list) or not all(
                isinstance(e, list) and len(e) == 3 and all(isinstance(x, str) for x in e)
                for e in effects):
            raise HistoryError(f"{where}.effects is not a list of [kind, detail, source]")
        c.effects = [tuple(e) for e in effects]
        defs = d.get("defs") or {}
        if not isinstance(defs, dict) or not all(isinstance(v, dict) for v in defs.values()):
            raise HistoryError(f"{where}.defs is not an object of objects")
        c.defs = defs
        c.opaque = _opt_str(d.get("opaque"), where + ".opaque")
        c.replay = bool(d.get("replay", True))
        c.note = _opt_str(d.get("note"), where + ".note")
        c.started_ms = d.get("started_ms") if isinstance(d.get("started_ms"), (int, float)) else 0
        return c


def _int(v, where, minimum=None):
    if not isinstance(v, int) or isinstance(v, bool) or (minimum is not None and v < minimum):
        raise HistoryError(f"{where} is not an integer" + (
            f" >= {minimum}" if minimum is not None else ""))
    return v


def _opt_int(v, where):
    return None if v is None else _int(v, where + ".count")


def _str(v, where):
    if not isinstance(v, str):
        raise HistoryError(f"{where} holds a non-string name")
    return v


def _opt_str(v, where):
    if v is not None and not isinstance(v, str):
        raise HistoryError(f"{where} is not a string")
    return v


def _str_list(v, where):
    if v is None:
        return []
    if not isinstance(v, list):
        raise HistoryError(f"{where} is not a list")
    return [_str(x, where) for x in v]


# -- the recorder --------------------------------------------------------------------------

class _Pending:
    """What `before` learned about the running cell, for `after`."""

    def __init__(self, cell, ids, t0):
        self.cell = cell
        self.ids = ids
        self.t0 = t0
        self.writes = {}  # names the code writes or changes in place (from the syntax tree)
        self.rebinds = set()  # of those, the ones it rebinds (not changes in place)
        self.defs = {}  # name -> FunctionInfo of the functions/classes it defines


class Recorder:
    """Records the cells of one session. See the module docstring."""

    def __init__(self, namespace=None, *, audit=False, max_cell_code=64 * 1024,
                 max_code=8 * 1024 * 1024, max_cells=5000):
        self._namespace = namespace
        self.audit = audit  # also watch side effects at run time (see the module docstring)
        self.max_cell_code = max_cell_code
        self.max_code = max_code
        self.max_cells = max_cells
        self.cells = []  # CellRecord, in execution order
        self.versions = {}  # name -> id of the cell that last wrote it (0: from outside)
        self.functions = {}  # name -> FunctionInfo of the notebook functions/classes bound now
        self.next_id = 1
        self.dropped_before = 0  # cells with a smaller id were dropped for the memory cap
        self._counter = 0
        self._depth = 0
        self._pending = None
        self._last_ids = None
        self._shell = None
        self._shell_cell = None  # ExecutionInfo of the shell's cell recorded now, if any
        # Execution counts the shell gave to requests a person never sees (_hidden_request);
        # subtracted, so a cell's count is the number its prompt shows.
        self._count_offset = 0
        self._attached_in = None  # (the attaching request was hidden, the count then)
        self._code_chars = 0
        self._since_prune = 0

    @property
    def namespace(self):
        if self._namespace is None:
            self._namespace = default_namespace()
        return self._namespace

    # -- hooks -----------------------------------------------------------------------------
    def before(self, code, count=None, raw=None):
        """Call just before a cell runs, with the Python source that will run (`raw`: the
        cell as typed, when it differs). Nested calls (a cell running a cell) are ignored."""
        self._depth += 1
        if self._depth > 1:
            return
        cell = CellRecord(self.next_id, count, None)
        self.next_id += 1
        cell.started_ms = int(time.time() * 1000)
        self._pending = pending = _Pending(cell, ([], []), None)
        try:
            ns = self.namespace
            pending.ids = self._ids(ns)
            self._sync_outside_changes(pending.ids, ns)
            self._analyze(pending, code, raw, ns)
        except Exception as exc:  # never break the person's cell because of the recorder
            cell.note = f"the recorder failed on this cell ({type(exc).__name__}: {exc})"
            cell.replay = False
        if self.audit:
            RUNTIME_EFFECTS.start(install=True)
        pending.t0 = time.perf_counter()

    def after(self, ok=True, error=None, count=None):
        """Call just after the cell ran: `ok` False if it raised (`error`: the exception or
        its text); `count` overrides the execution count given to `before`."""
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth:
            return
        pending, self._pending = self._pending, None
        t1 = time.perf_counter()
        runtime = RUNTIME_EFFECTS.stop() if self.audit else {}
        cell = pending.cell
        cell.ms = (t1 - pending.t0) * 1000.0
        cell.ok = bool(ok)
        if error is not None:
            cell.error = error if isinstance(error, str) else \
                f"{type(error).__name__}: {error}"[:300]
        if count is not None:
            cell.count = count
        elif cell.count is None:
            self._counter += 1
            cell.count = self._counter
        self._counter = max(self._counter, cell.count)
        try:
            self._finish(pending, runtime)
        except Exception as exc:  # as in before(): the recorder must not break the session
            cell.note = f"the recorder failed on this cell ({type(exc).__name__}: {exc})"
            cell.replay = False
            self.cells.append(cell)

    def attach(self, shell=None):
        """Record every (non-silent) cell of an IPython shell, through its events."""
        shell = shell or ipython_shell()
        if shell is None:
            raise RuntimeError("no IPython shell is running; call recorder.before(code) and "
                               "recorder.after(ok) around each cell instead")
        self.detach()
        self._namespace = shell.user_ns
        self._shell = shell
        self._attached_in = (self._hidden_request(), shell.execution_count)
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)
        return self

    def detach(self):
        shell, self._shell = self._shell, None
        if shell is not None:
            for event, fn in (("pre_run_cell", self._pre_run_cell),
                              ("post_run_cell", self._post_run_cell)):
                try:
                    shell.events.unregister(event, fn)
                except ValueError:
                    pass

    def _hidden_request(self):
        """Whether the kernel's current request is one a person does not see (silent, or
        without history: the JupyterLite extension's own snippets). JupyterLite's kernel runs
        every request with store_history=True and never silent, so only the request itself
        (the kernel's parent message) says so; its prompt numbers count only the others."""
        try:
            content = self._shell.kernel.get_parent()["content"]
            return bool(content.get("silent")) or content.get("store_history", True) is False
        except Exception:  # not a Jupyter kernel, or one that keeps no parent message
            return False

    def _pre_run_cell(self, info):
        if info.silent or not info.store_history:
            return
        if self._attached_in is not None:
            hidden, count = self._attached_in
            self._attached_in = None
            if hidden and self._shell.execution_count > count:
                self._count_offset += 1  # the hidden request that attached us was counted
        if self._shell_cell is not None:
            self._close_unsignalled()
        if self._hidden_request():  # counted by the shell, not shown: not a cell of the notebook
            self._count_offset += 1
            return
        self._shell_cell = info
        raw = info.raw_cell
        code = getattr(info, "transformed_cell", None)
        if code is None:
            try:
                code = self._shell.transform_cell(raw)
            except Exception:
                code = raw
        self.before(code, raw=raw if raw.strip() != code.strip() else None)

    def _post_run_cell(self, result):
        info = result.info
        if info is None or info.silent or not info.store_history or info is not self._shell_cell:
            return
        self._shell_cell = None
        err = result.error_in_exec or result.error_before_exec
        self.after(ok=result.success, error=err, count=self._shown_count(result))

    def _shown_count(self, result):
        count = result.execution_count
        return count - self._count_offset if isinstance(count, int) else count

    def _close_unsignalled(self):
        """The shell's previous cell ended without post_run_cell: IPython sends it only from
        `run_cell`, and JupyterLite's kernel calls `run_cell_async` itself for cells that
        await. The shell's last result tells how it went; without it the cell counts as
        failed (so it is never replayed)."""
        info, self._shell_cell = self._shell_cell, None
        result = getattr(self._shell, "last_execution_result", None)
        if result is not None and getattr(result, "info", None) is info:
            err = result.error_in_exec or result.error_before_exec
            self.after(ok=result.success, error=err, count=self._shown_count(result))
        else:
            self.after(ok=False, error="the shell did not report how this cell ended")

    # -- per-cell control ------------------------------------------------------------------
    def set_replay(self, count, allowed):
        """Allow or forbid replaying the cell shown as In [count] (the latest such cell).
        Also: a line `# elastic-lite: no-replay` in a cell forbids it."""
        for cell in reversed(self.cells):
            if cell.count == count:
                cell.replay = bool(allowed)
                return cell
        raise KeyError(f"no recorded cell [{count}] (it may have been dropped: it wrote "
                       "nothing that is still in the namespace)")

    # -- internals -------------------------------------------------------------------------
    def _hidden(self, ns):
        shell = self._shell or ipython_shell()
        if shell is None or getattr(shell, "user_ns", None) is not ns:
            return {}
        return getattr(shell, "user_ns_hidden", None) or {}

    @staticmethod
    def _ids(ns):
        """(names, ids) of every binding, untracked names included, as two aligned lists: a
        C-level copy (about 0.1 us a name); the names that differ are filtered afterwards
        (`_keep`). Holding ids, not the objects, keeps no overwritten value alive."""
        return list(ns), list(map(id, ns.values()))

    def _keep(self, ns, names):
        """The names the history follows, in order: not IPython's own (see `_tracked`)."""
        hidden = self._hidden(ns)
        return [n for n in names if _tracked(n) and not (
            n in hidden and (n not in ns or hidden[n] is ns[n]))]

    def _sync_outside_changes(self, ids, ns):
        """Bindings changed between recorded cells (a restore, a silent snippet, a debugger)
        are not what the history made: their version becomes 0 (from outside)."""
        if ids == self._last_ids:
            return  # the usual case, compared in C
        for name in [n for n in self.versions if n not in ns]:
            del self.versions[name]
            self.functions.pop(name, None)
        if self._last_ids is None:
            return
        for name in _differences(self._last_ids, ids)[0]:
            if self.versions.get(name, 0):
                self.versions[name] = 0
                self.functions.pop(name, None)

    def _resolver(self, ns):
        hidden = self._hidden(ns)
        ns_name = ns.get("__name__", "__main__")

        def resolve(name):
            if name not in ns:
                return f"builtins.{name}" if hasattr(builtins, name) else None
            v = ns[name]
            if name in hidden and hidden[name] is v:
                return f"builtins.{name}"  # IPython's own `open`, `display`...
            return _qualified_binding(name, v, ns_name)
        return resolve

    def _analyze(self, pending, code, raw, ns):
        cell = pending.cell
        if not isinstance(code, str):
            raise TypeError(f"cell code must be str, not {type(code).__name__}")
        if len(code) + len(raw or "") <= self.max_cell_code:
            cell.code, cell.raw = code, raw
        else:
            cell.note = (f"its code ({len(code)} characters) is over the "
                         f"{self.max_cell_code}-character limit kept per cell")
        if NO_REPLAY.search(code):
            cell.replay = False
            cell.note = cell.note or "marked `# elastic-lite: no-replay`"
        cc = analyze(code, self._resolver(ns))
        if cc.error:
            cell.opaque = f"its code does not parse ({cc.error})"
            return
        cell.opaque = cc.opaque
        if cc.history_reads:
            cell.opaque = cell.opaque or (
                "it reads IPython's output history (" + ", ".join(cc.history_reads) + ")")
        reads = dict(cc.reads)
        writes = dict(cc.writes)
        writes.update(cc.mutates)
        effects = {(k, d, "code"): None for k, d in cc.effects}
        # Calls of notebook functions: what their bodies read, rebind, change and do.
        called = [name for name, _, _ in cc.calls]
        for name in cc.method_receivers:  # obj.method(): the methods of obj's notebook class
            cls = type(ns.get(name))
            cname = getattr(cls, "__name__", None)
            if cname in self.functions and ns.get(cname) is cls:
                called.append(cname)
        info = self._expand(called, ns)
        # A closure that keeps state (a counter, an accumulator) is changed by being called,
        # though no name in the cell says so: a replay must call one recreated by the replay.
        # So is an instance of a notebook class called like a function (its __call__): the
        # name is called, so only "an instance, of a class the notebook defined" is left to ask.
        for name in called:
            value = ns.get(name)
            if closure_changes(value) or (not isinstance(value, type)
                                          and type(value).__module__ == ns.get("__name__")):
                writes.setdefault(name)
        reads.update(info.reads)
        writes.update(info.writes)
        writes.update(info.mutates)
        for kind, detail in info.effects:
            effects.setdefault((kind, detail, "code"))
        for name, arg_bases, kw_bases in cc.calls:
            fn = self.functions.get(name)
            if fn is None or not fn.params_mutated:
                continue
            for i, base in enumerate(arg_bases):
                if base and i < len(fn.params) and fn.params[i] in fn.params_mutated:
                    writes.setdefault(base)
            for kw, base in kw_bases.items():
                if base and kw in fn.params_mutated:
                    writes.setdefault(base)
        pending.writes = writes
        pending.defs = cc.defs
        pending.rebinds = set(cc.writes)
        bound = [n for n in reads if n in ns]  # not builtins, not typos
        cell.reads = {n: self.versions.get(n, 0) for n in self._keep(ns, bound)}
        cell.effects = list(effects)

    def _expand(self, names, ns):
        """The union of the FunctionInfo of `names` and of what they call, transitively."""
        total = FunctionInfo()
        seen, stack = set(), list(names)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            info = self.functions.get(name)
            if info is None:
                info = _unknown_function_info(ns.get(name), ns)
                if info is None:
                    continue
            total.reads.update(info.reads)
            total.writes.update(info.writes)
            total.mutates.update(info.mutates)
            total.effects.update(info.effects)
            stack.extend(info.calls)
        return total

    def _finish(self, pending, runtime):
        cell = pending.cell
        ns = self.namespace
        after = self._ids(ns)
        changed, deleted = _differences(pending.ids, after)
        changed = set(self._keep(ns, changed))
        deleted = self._keep(ns, deleted)
        written = set(changed)
        for name in self._keep(ns, pending.writes):
            if name not in ns or name in written:
                continue
            if name not in pending.rebinds and type(ns.get(name)) in _IMMUTABLE:
                continue  # `s.upper()` cannot change a str in place
            written.add(name)
        for name in cell.reads:
            if name in ns and name not in written and is_stateful(ns[name]):
                written.add(name)  # next(gen), f.readline(), for row in cursor
        order = list(pending.writes) + sorted(written - set(pending.writes))
        cell.writes = [n for n in order if n in written]
        cell.deletes = deleted
        for kind, detail in runtime:
            if (kind, detail, "code") not in cell.effects:
                cell.effects.append((kind, detail, "run"))
        defs = pending.defs
        for name in cell.writes:
            self.versions[name] = cell.id
            value = ns.get(name)
            if name in defs and isinstance(value, (type, types.FunctionType)):
                self.functions[name] = defs[name]
                cell.defs[name] = defs[name].to_json()
            elif name in changed:
                self.functions.pop(name, None)
        for name in deleted:
            self.versions.pop(name, None)
            self.functions.pop(name, None)
        self.cells.append(cell)
        if cell.code:
            self._code_chars += len(cell.code) + len(cell.raw or "")
        self._last_ids = after
        self._since_prune += 1
        if (self._since_prune >= max(64, len(self.cells) // 2)
                or self._code_chars > self.max_code or len(self.cells) > self.max_cells):
            self.prune()

    # -- memory ----------------------------------------------------------------------------
    def needed_cells(self):
        """Ids of the cells some plan could still need: the writers of every current version
        and, transitively, the writers of the versions they read."""
        by_id = {c.id: c for c in self.cells}
        live = {v for v in self.versions.values() if v > 0}
        stack = list(live)
        while stack:
            cell = by_id.get(stack.pop())
            if cell is None:
                continue
            for v in cell.reads.values():
                if v > 0 and v not in live:
                    live.add(v)
                    stack.append(v)
        return live

    def prune(self):
        """Drop what no plan can need, then enforce the caps (oldest first)."""
        self._since_prune = 0
        live = self.needed_cells()
        self.cells = [c for c in self.cells if c.id in live]
        if len(self.cells) > self.max_cells:
            cut = len(self.cells) - self.max_cells
            self.dropped_before = max(self.dropped_before, self.cells[cut].id)
            self.cells = self.cells[cut:]
        self._code_chars = sum(len(c.code or "") + len(c.raw or "") for c in self.cells)
        for cell in self.cells:
            if self._code_chars <= self.max_code:
                break
            if cell.code is not None:
                self._code_chars -= len(cell.code) + len(cell.raw or "")
                cell.code = cell.raw = None
                cell.note = (f"its code was dropped to keep the history under "
                             f"{self.max_code} characters")

    # -- JSON (the kind-3 record of a checkpoint) --------------------------------------------
    def to_json(self):
        """The history as plain JSON data (what no plan can need is dropped first)."""
        self.prune()
        return {"format": HISTORY_FORMAT, "version": HISTORY_VERSION,
                "next_id": self.next_id, "dropped_before": self.dropped_before,
                "counter": self._counter,
                "versions": dict(self.versions),
                "functions": {n: f.to_json() for n, f in self.functions.items()},
                "cells": [c.to_json() for c in self.cells]}

    @classmethod
    def from_json(cls, data, namespace=None, **limits):
        """A recorder continuing a saved history (e.g. after a restore). The namespace as it
        is now is taken to be the state the history describes."""
        rec = cls(namespace, **limits)
        rec.load(data)
        return rec

    def load(self, data):
        """Replace this recorder's history by a saved one (`to_json`'s shape); raises
        HistoryError with what is wrong if it is not one."""
        if not isinstance(data, dict) or data.get("format") != HISTORY_FORMAT:
            raise HistoryError("this is not an Elastic Lite session history "
                               f"(expected format {quoted(HISTORY_FORMAT)})")
        version = data.get("version")
        if version != HISTORY_VERSION:
            raise HistoryError(f"session history version {quoted(version)} is not supported by this "
                               f"elastic-lite (it reads {HISTORY_VERSION}); upgrade elastic-lite")
        cells_data = data.get("cells")
        if not isinstance(cells_data, list) or not all(isinstance(c, dict) for c in cells_data):
            raise HistoryError("session history: 'cells' is not a list of objects")
        cells = [CellRecord.from_json(c, f"cells[{i}]") for i, c in enumerate(cells_data)]
        ids = [c.id for c in cells]
        if len(set(ids)) != len(ids) or ids != sorted(ids):
            raise HistoryError("session history: cell ids are not unique and increasing")
        versions = data.get("versions")
        if not isinstance(versions, dict):
            raise HistoryError("session history: 'versions' is not an object")
        versions = {_str(k, "versions"): _int(v, "versions", minimum=0)
                    for k, v in versions.items()}
        functions = data.get("functions") or {}
        if not isinstance(functions, dict) or not all(
                isinstance(v, dict) for v in functions.values()):
            raise HistoryError("session history: 'functions' is not an object of objects")
        next_id = _int(data.get("next_id"), "next_id", minimum=1)
        if ids and next_id <= ids[-1]:
            raise HistoryError("session history: next_id is not past the last cell")
        self.cells = cells
        self.versions = versions
        try:
            self.functions = {n: FunctionInfo.from_json(f) for n, f in functions.items()}
        except (TypeError, AttributeError) as exc:
            raise HistoryError(f"session history: a function entry is malformed ({exc})")
        self.next_id = next_id
        self.dropped_before = _int(data.get("dropped_before", 0), "dropped_before", minimum=0)
        self._counter = _int(data.get("counter", 0), "counter", minimum=0)
        self._code_chars = sum(len(c.code or "") + len(c.raw or "") for c in self.cells)
        self._last_ids = self._ids(self.namespace)  # the namespace now is what it describes
        if self._pending is not None:
            # Loaded while a recorded cell runs (`%restore` in a cell): that cell continues
            # the loaded history, and what the load itself bound is not the cell's writing.
            self._pending.cell.id = self.next_id
            self.next_id += 1
            self._pending.ids = self._last_ids
        return self

    def checkpoint_json(self):
        """`to_json()` for a checkpoint taken now. Names whose value the history cannot vouch
        for get version 0 (from outside): those a cell still running has written or may
        change (a checkpoint from inside a cell: `%checkpoint`, an auto-checkpoint hook that
        runs before ours), and those rebound between recorded cells. Without this a plan
        would re-run an older cell and recreate a value the session has moved past."""
        info = self._shell_cell
        if info is not None and getattr(
                getattr(self._shell, "last_execution_result", None), "info", None) is info:
            self._close_unsignalled()  # it has ended (see there), unsignalled
        ns = self.namespace
        ids = self._ids(ns)
        unsure = set()
        pending = self._pending
        if pending is not None:
            changed, deleted = _differences(pending.ids, ids)
            unsure.update(self._keep(ns, changed), deleted, pending.writes)
            unsure.update(n for n in pending.cell.reads if n in ns and is_stateful(ns[n]))
        else:
            self._sync_outside_changes(ids, ns)
            self._last_ids = ids
        data = self.to_json()
        for name in unsure:
            if name in data["versions"]:
                data["versions"][name] = 0
        return data


# -- one recorder per namespace (kept by the kernel session) ---------------------------------

def recorder_for(namespace, create=False):
    """The recorder of `namespace` (None if there is none and not `create`). Hosts without
    IPython get one per namespace they run cells in (host.run_cell creates it)."""
    from ..session.kernel import SESSION
    return SESSION.recorder(namespace, create=create)


def record_session(shell=None):
    """Record the session from now on (idempotent); returns its Recorder. In an IPython
    kernel (JupyterLite) the recorder hooks the shell's cell events: `%load_ext
    elastic_lite` and the JupyterLite extension (when a kernel starts) call this. Elsewhere
    it is the recorder of the user namespace, fed by `elastic_lite.host.run_cell`."""
    shell = shell or ipython_shell()
    rec = recorder_for(default_namespace() if shell is None else shell.user_ns, create=True)
    if shell is not None and rec._shell is not shell:
        rec.attach(shell)
    return rec


def stop_recording(namespace=None):
    """Stop recording the cells of `namespace` (default: the user namespace) and forget
    their history; later checkpoints carry none (and so recompute nothing)."""
    from ..session.kernel import SESSION
    return SESSION.stop_recording(namespace)


def _differences(before, after):
    """(names rebound or added, names deleted) between two `Recorder._ids` snapshots. When
    no name was deleted (new names are appended at the end of a dict) it is all C-level."""
    bk, bv = before
    ak, av = after
    n = len(bk)
    if ak[:n] == bk:
        return list(itertools.compress(bk, map(operator.ne, bv, av))) + ak[n:], []
    old = dict(zip(bk, bv))
    changed = [k for k, i in zip(ak, av) if old.get(k) != i]
    deleted = sorted(set(bk).difference(ak))
    return changed, deleted


def _qualified_binding(name, value, ns_name):
    """'numpy' for a module, 'numpy.mean' for a library function or class, 'random.random'
    for a bound method of a module-level instance, 'js.fetch' for a JavaScript object bound
    to `fetch`; None for data and for the notebook's own functions and classes."""
    if isinstance(value, types.ModuleType):
        return getattr(value, "__name__", None)
    tname = type(value).__name__
    if tname.startswith("Js") and type(value).__module__ in ("pyodide.ffi", "pyodide"):
        return "js" if name == "js" else f"js.{name}"  # `import js`, `from js import fetch`
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type,
                          types.MethodType)) or tname in ("method_descriptor", "builtin_method"):
        mod = getattr(value, "__module__", None)
        qual = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        owner = getattr(value, "__self__", None)
        if mod is None and owner is not None and not isinstance(owner, types.ModuleType):
            mod = type(owner).__module__
            qual = getattr(value, "__name__", qual)
        if not isinstance(mod, str) or not isinstance(qual, str):
            return None
        if mod in (ns_name, "__main__"):
            return None
        if "." in qual and owner is not None:
            qual = qual.rsplit(".", 1)[1]
        return f"{mod}.{qual}"
    return None


def _unknown_function_info(value, ns):
    """Reads of a notebook function whose definition the recorder did not see."""
    func = getattr(value, "__wrapped__", None) or getattr(value, "__func__", None) or value
    if type(func) is not types.FunctionType or func.__globals__ is not ns:
        return None
    info = FunctionInfo()
    info.reads = dict.fromkeys(sorted(_code_names(func.__code__)))
    return info
