"""What restoring a checkpoint would import, told truthfully, and how restore judges it.

A pickle stream imports globals (GLOBAL, INST, STACK_GLOBAL, EXT1/2/4) and may call them. The
C core lists every import of every record without unpickling anything (module, name as the
stream writes them, the dotted prefixes, the opcode, the protocol in force, EXT codes
unresolved). What pickle really gets is another matter, and this module works it out the way
the unpickler would, WITHOUT running code:

- at protocol <= 2 the unpickler maps Python 2 names (`_compat_pickle`): `cPickle.loads` is
  `pickle.loads`, `commands.getoutput` is `subprocess.getoutput`;
- at protocol >= 4 a dotted name is an attribute path: `cloudpickle` + `builtins.exec` is
  `builtins.exec`, `os` + `path.os.system` is `posix.system`. The path is walked through the
  `__dict__`s of modules already imported and of classes (never `getattr`, never an import);
  what the walk meets is named by its real identity (`module.qualname`), and every step is
  judged, not only the string the stream wrote;
- an EXT code is whatever copyreg's extension registry maps it to NOW, before loading (a
  stream can register a code while it loads and use it later: a code not registered now is
  unknown);
- a name that cannot be resolved statically (a dotted path through a module not imported
  here, a module `__getattr__`, a descriptor, a property) is UNKNOWN, and unknown counts as
  dangerous.

A name of a module not imported here yet is judged by its name (pickle will import it and
take that attribute). Manifest module bindings (`np = numpy`, `print = builtins.exec` in a
hostile file) are judged the same way.

Three ways to judge (`mode`):
- "deny" (the default for a checkpoint of this origin): a record whose imports hit the
  deny-list (`denylist.json`: globals that run commands or code, touch files, processes, the
  network or the page's JavaScript) or are unknown is refused; the rest load. NOT a sandbox:
  pickle can reach such callables indirectly (`getattr` on a module object a legitimate stream
  may import), and a record that rebuilds a notebook function can run any code when a REDUCE
  calls it. That is why provenance, not a list, is the boundary: a foreign checkpoint loads
  nothing until a person has seen this module's listing and confirmed (see _restore).
- "data" (data-only, like a weights-only loader): every import must be on the allow-list
  (`allowlist.json`: standard data types, numpy/pandas reconstruction, our own array helper)
  and none may build code; dill records (objects plain pickle cannot save) are refused. The
  same check runs again inside the unpickler (`find_class`), so an import this module could
  not foresee is refused too.
- "trust": nothing is refused (the person confirmed, or passed trust=True).

Both lists are data files next to this module, shipped in the wheel; every host judges
through elastic_lite.host, so this is their only reader. Patterns: `module` and each of
`names` are matched against whole strings; `*` matches any run of characters (dots
included), nothing else is special.
"""

import collections
import copyreg
import enum
import functools
import inspect as _inspect
import io
import json
import os
import pickle
import re
import sys
import types

import _compat_pickle

from .._words import quoted

_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package's folder

DENY, DATA, TRUST = "deny", "data", "trust"
MODES = (DENY, DATA, TRUST)

# What an import is, as judged (the "danger" of a judged import):
RUNS_CODE = "runs-code"      # on the deny-list
UNKNOWN = "unknown"          # cannot be resolved without running code: counts as dangerous
BUILDS_CODE = "builds-code"  # rebuilds notebook functions/classes: their code can run
NOT_DATA = "not-data"        # data-only mode: not on the allow-list


# --- the lists ------------------------------------------------------------------------------

def _pattern(text):
    return re.compile("".join(".*" if part == "*" else re.escape(part)
                              for part in re.split(r"(\*)", text)) + r"\Z", re.S)


class _Rules:
    """One list of {module, names, why[, on_import]} entries from a JSON file next to us."""

    def __init__(self, filename, key):
        self.path = os.path.join(_DIR, filename)
        self.key = key
        self._rules = None
        self._module_cache = {}

    def rules(self):
        if self._rules is None:
            with open(self.path, encoding="utf-8") as f:
                entries = json.load(f)[self.key]
            self._rules = [(_pattern(e["module"]), [_pattern(n) for n in e["names"]], e["why"],
                            bool(e.get("on_import"))) for e in entries]
            # Entries naming one module exactly are found by that name; only the others
            # ("multiprocessing.*") are tried against every module. Order is kept.
            self._by_module, self._wild = {}, []
            for i, (e, rule) in enumerate(zip(entries, self._rules)):
                if "*" in e["module"]:
                    self._wild.append((i, rule))
                else:
                    self._by_module.setdefault(e["module"], []).append((i, rule))
        return self._rules

    def _for_module(self, module):
        """The entries that may match `module`, in file order (cached: a file of many
        distinct imports costs one lookup per module, not a pass over every entry)."""
        found = self._module_cache.get(module)
        if found is None:
            self.rules()
            found = [rule for _, rule in sorted(self._by_module.get(module, []) + [
                r for r in self._wild if r[1][0].match(module)])]
            if len(self._module_cache) > 50_000:
                self._module_cache.clear()
            self._module_cache[module] = found
        return found

    def why(self, module, name):
        """The reason of the first entry matching module + name, else None."""
        for mod_re, name_res, why, _ in self._for_module(module):
            if mod_re.match(module) and any(r.match(name) for r in name_res):
                return why
        return None

    def why_import(self, module):
        """The reason when importing `module` at all runs something (an `on_import` entry)."""
        for mod_re, _, why, on_import in self._for_module(module):
            if on_import and mod_re.match(module):
                return why
        return None


DENYLIST = _Rules("denylist.json", "entries")
ALLOWLIST = _Rules("allowlist.json", "allow")
BUILDERS = _Rules("allowlist.json", "builds_code")


def why_denied(module, name):
    """The reason ("runs commands", ...) when module.name is on the deny-list, else None."""
    return DENYLIST.why(module, name)


# --- resolving an import without running code ------------------------------------------------

_MODULE_DICT = types.ModuleType.__dict__["__dict__"]
_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]
# C-level callables and descriptors: reading or binding them runs no Python code.
_C_DESCRIPTORS = (types.MethodDescriptorType, types.WrapperDescriptorType,
                  types.ClassMethodDescriptorType, types.GetSetDescriptorType,
                  types.MemberDescriptorType)
_C_CALLABLES = (types.BuiltinFunctionType, types.MethodWrapperType) + _C_DESCRIPTORS


class _Dynamic(Exception):
    """Resolving this step would run code (a __getattr__, a descriptor's __get__, ...)."""


def _module_dict(mod):
    return _MODULE_DICT.__get__(mod)


def _plain_str(value):
    return value if type(value) is str else None


def _dotted(module, name):
    return f"{module}.{name}" if module else name


def identity(obj):
    """`module.qualname` of a module, class, function or method, read without running code;
    None for any other object (an instance: see _describe)."""
    t = type(obj)
    if issubclass(t, types.ModuleType):
        return _plain_str(_module_dict(obj).get("__name__"))
    if issubclass(t, type):
        return _dotted(_plain_str(_TYPE_MODULE.__get__(obj)), _plain_str(_TYPE_QUALNAME.__get__(obj)))
    if t is types.FunctionType:
        return _dotted(_plain_str(obj.__module__), _plain_str(obj.__qualname__))
    if t in (types.MethodType, staticmethod, classmethod):  # what runs is the function
        return identity(obj.__func__)
    if t is functools.partial:  # calling it calls .func
        return identity(obj.func)
    if t is types.BuiltinFunctionType:
        owner = obj.__self__
        if owner is None or issubclass(type(owner), types.ModuleType):
            return _dotted(_plain_str(obj.__module__) or (owner and identity(owner)), obj.__name__)
        return f"{identity(owner if issubclass(type(owner), type) else type(owner))}.{obj.__name__}"
    if t in _C_CALLABLES:
        owner = getattr(obj, "__objclass__", None)
        return f"{identity(owner if owner is not None else type(obj.__self__))}.{obj.__name__}"
    return None


def _describe(obj):
    """A name for any object, without running its code: its identity, or 'a X instance'."""
    ident = identity(obj)
    return ident if ident is not None else f"a {identity(type(obj))} instance"


def _python_hook(cls, name):
    """True when `cls` or a base (object, type and ModuleType aside) defines `name` in
    Python (a C slot wrapper, e.g. dict's own __getattribute__, runs no Python code)."""
    for klass in _TYPE_MRO.__get__(cls):
        if klass in (object, type, types.ModuleType):
            continue
        value = _TYPE_DICT.__get__(klass).get(name)
        if value is not None and not isinstance(value, types.WrapperDescriptorType):
            return True
    return False


def _has_get(cls):
    return any("__get__" in _TYPE_DICT.__get__(k) for k in _TYPE_MRO.__get__(cls)
               if k is not object)


def _static_getattr(obj, name):
    """What `getattr(obj, name)` returns, found without running code: a module's own dict,
    a class's MRO dicts (functions, static/class methods, plain values, C descriptors), an
    instance's dict or C slots. Raises AttributeError when the attribute does not exist
    (pickle then fails to load: harmless) and _Dynamic when finding it needs code to run."""
    t = type(obj)
    what = identity(obj) or _describe(obj)
    if _python_hook(t, "__getattribute__"):
        raise _Dynamic(f"{what} computes its attributes (__getattribute__)")
    if issubclass(t, types.ModuleType):
        d = _module_dict(obj)
        if name in d:
            return d[name]
        if "__getattr__" in d or _python_hook(t, "__getattr__"):
            raise _Dynamic(f"module {what} computes {quoted(name)} with its __getattr__")
        raise AttributeError(name)
    try:
        raw = _inspect.getattr_static(obj, name)
    except AttributeError:
        if _python_hook(t, "__getattr__"):
            raise _Dynamic(f"{what} computes {quoted(name)} with its __getattr__") from None
        raise AttributeError(name) from None
    kind = type(raw)
    is_class = issubclass(t, type)
    if kind is types.FunctionType:
        return raw
    if kind is staticmethod:
        return raw.__func__
    if kind is classmethod:
        return types.MethodType(raw.__func__, obj if is_class else t)
    if kind in (types.MemberDescriptorType, types.GetSetDescriptorType) and not is_class:
        return raw.__get__(obj, t)  # a C slot or getter of an instance: its value
    if kind in _C_CALLABLES or kind is property and is_class or not _has_get(kind):
        return raw
    raise _Dynamic(f"{what}.{name} is computed when read (a {identity(kind)} descriptor)")


def _map_python2(module, name, protocol):
    """(module, name) as the unpickler looks them up: Python 2 names mapped at protocol <= 2."""
    if protocol is not None and protocol < 3:
        if (module, name) in _compat_pickle.NAME_MAPPING:
            return _compat_pickle.NAME_MAPPING[(module, name)]
        if module in _compat_pickle.IMPORT_MAPPING:
            return _compat_pickle.IMPORT_MAPPING[module], name
    return module, name


def _parents(module):
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def resolve(module, name, protocol=5, ext=None, serializer=None):
    """What the unpickler would get for one import of a stream, worked out without running
    code. Returns a dict:

    written   the import as the stream writes it ("cloudpickle builtins.exec", "EXT code 7")
    raw       the (module, name) the unpickler's find_class will be called with
    module, name   after the Python 2 mapping (what pickle imports and looks up)
    state     "resolved" (walked here), "by-name" (module not imported yet: pickle will import
              it and take that attribute), "unknown" (cannot be known without running code),
              "missing" (does not exist here: loading it fails, harmlessly)
    target    the real identity of what pickle gets ("posix.system"), else module.name
    steps     the real identity of each step of the attribute path
    note      why it is unknown or missing, or how a name was mapped
    object    what pickle would get (resolved only; not JSON: judge_import drops it)
    """
    out = {"written": None, "raw": None, "module": None, "name": None, "state": "resolved",
           "target": None, "steps": [], "note": None, "dotted": False, "object": None}
    if ext is not None:
        out["written"] = f"EXT code {ext}"
        key = copyreg._inverted_registry.get(ext)
        cached = copyreg._extension_cache.get(ext)
        if cached is not None:  # the unpickler takes the cache first
            out.update(target=_describe(cached), steps=[_describe(cached)], object=cached,
                       note=f"extension code {ext} is cached here as {_describe(cached)}")
            if key is not None:
                out.update(raw=tuple(key), module=key[0], name=key[1])
            return out
        if key is None:
            out.update(state="unknown", target=f"EXT code {ext}", note=(
                f"extension code {ext} is not registered with copyreg here: a stream can "
                "register one while it loads, so what it imports cannot be known"))
            return out
        module, name = key
        out["note"] = f"extension code {ext} is registered here as {module}.{name}"
    elif not isinstance(module, str) or not isinstance(name, str):
        out.update(written="?", state="unknown", target="?",
                   note="the stream does not say what it imports")
        return out
    else:
        out["written"] = f"{module} {name}"
    out["raw"] = (module, name)
    if serializer == "dill":
        if (module, name) == ("__builtin__", "__main__"):  # dill's find_class: a dict
            out.update(module=module, name=name, target="dill: the restoring notebook's namespace")
            return out
        if (module, name) == ("__builtin__", "NoneType"):
            out.update(module=module, name=name, target="builtins.NoneType")
            return out
        if module == "dill.dill":
            module = "dill._dill"
    mapped = _map_python2(module, name, protocol)
    if mapped != (module, name):
        out["note"] = "; ".join(filter(None, [out["note"], (
            f"a Python 2 name: {module}.{name} is loaded as {mapped[0]}.{mapped[1]}")]))
    module, name = mapped
    dotted = protocol is not None and protocol >= 4 and "." in name
    out.update(module=module, name=name, dotted=dotted, target=f"{module}.{name}")
    obj = sys.modules.get(module)
    if obj is None:
        if dotted:
            out.update(state="unknown", note=(
                f"module {module} is not imported here, so the attribute path {quoted(name)} "
                "cannot be followed without running it"))
        else:
            out["state"] = "by-name"
        return out
    try:
        for part in name.split(".") if dotted else [name]:
            obj = _static_getattr(obj, part)
            out["steps"].append(_describe(obj))
    except AttributeError:
        out.update(state="missing", note=f"{module} has no attribute {quoted(name)} here: loading fails")
        return out
    except _Dynamic as exc:
        out.update(state="unknown", note=str(exc))
        return out
    out.update(target=out["steps"][-1], object=obj)
    return out


# --- judging -----------------------------------------------------------------------------------

_ORDER = {RUNS_CODE: 0, UNKNOWN: 1, NOT_DATA: 2, BUILDS_CODE: 3, None: 4}


def _split(ident):
    """'posix.system' -> every (module, name) split of a dotted identity, longest module
    first: a list entry names a module and a (possibly dotted) name."""
    parts = (ident or "").split(".")
    return [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]


def _candidates(res):
    """Every (module, name) a list entry may name for this import: as written, as mapped,
    each dotted prefix, and the real identity of each step (functions, classes, methods,
    the class of an instance), so neither an alias nor a path hides what is reached."""
    pairs = []
    if res["raw"] is not None:
        pairs.append(res["raw"])
    if res["module"] is not None:
        module, name = res["module"], res["name"]
        pairs.append((module, name))
        if res["dotted"]:
            parts = name.split(".")
            pairs += [(module, ".".join(parts[:i])) for i in range(1, len(parts))]
    for step in res["steps"]:
        if step.startswith("a ") and step.endswith(" instance"):
            step = step[2:-len(" instance")]
        pairs += _split(step)
    seen, out = set(), []
    for p in pairs:
        if p not in seen and all(p):
            seen.add(p)
            out.append(p)
    return out


def _import_danger(module):
    """(package, why) when importing `module` (its parent packages first, as __import__
    does) runs something by itself: an `on_import` entry of the deny-list."""
    for m in _parents(module):
        why = DENYLIST.why_import(m)
        if why:
            return m, why
    return None


def _not_data(res, serializer):
    """Why an import is not allowed in data-only mode (None when it is)."""
    if serializer == "dill":
        return "written by dill (what plain pickle cannot save is not data)"
    if res["state"] in ("unknown", "missing") or res["module"] is None:
        return res["note"] or "it cannot be resolved"
    if res["dotted"]:
        return "an attribute path (methods and nested classes are not data)"
    if not ALLOWLIST.why(res["module"], res["name"]):
        return "not on the data-only allow-list"
    return None


def judge_import(imp, serializer=None, mode=DENY):
    """One import of the core's report (`{"module", "name", "ext", "protocol", "opcode",
    "calls"}`), resolved and judged: resolve()'s fields (JSON-able) plus `opcode`,
    `protocol`, `ext`, `calls`, `danger` (RUNS_CODE, UNKNOWN, BUILDS_CODE, NOT_DATA or None)
    and `why`."""
    res = resolve(imp.get("module"), imp.get("name"), imp.get("protocol"), imp.get("ext"),
                  serializer)
    pairs = _candidates(res)
    obj = res.pop("object")
    if obj is not None and identity(obj) is None:  # an instance: judge its class too
        pairs += _split(identity(type(obj)))
    out = dict(res, raw=list(res["raw"]) if res["raw"] else None, opcode=imp.get("opcode"),
               protocol=imp.get("protocol"), ext=imp.get("ext"),
               calls=list(imp.get("calls") or []), danger=None, why=None)
    denied = next(((m, n, w) for m, n in pairs for w in [DENYLIST.why(m, n)] if w), None)
    on_import = _import_danger(res["module"]) if res["module"] else None
    builds = next(((m, n, w) for m, n in pairs for w in [BUILDERS.why(m, n)] if w), None)
    if denied:
        out.update(danger=RUNS_CODE, why=f"{denied[0]}.{denied[1]}: {denied[2]}")
    elif on_import:
        out.update(danger=RUNS_CODE, why=f"importing {on_import[0]} {on_import[1]}")
    elif res["state"] == "unknown":
        out.update(danger=UNKNOWN, why=res["note"])
    elif isinstance(obj, types.ModuleType):
        out.update(danger=UNKNOWN, why=_MODULE_OBJECT.format(identity(obj)))
    elif builds:
        out.update(danger=BUILDS_CODE, why=builds[2])
    elif mode == DATA:
        why = _not_data(res, serializer)
        if why:
            out.update(danger=NOT_DATA, why=why)
    return out


def judge_binding(binding, mode=DENY):
    """One manifest module binding ({"name", "module", "attr"}: restore imports `module` and
    binds it, or its attribute `attr`, to `name`), judged like an import. Nothing is called
    when it is bound: the danger is a person calling it later by a name that says something
    else (`print = builtins.exec`). So in the default mode a code-running target is refused
    only under another name; `from os import system` restores as it was (and is listed)."""
    name, module, attr = binding.get("name"), binding.get("module"), binding.get("attr")
    out = {"name": name, "module": module, "attr": attr, "target": None, "state": "resolved",
           "danger": None, "why": None, "note": None}
    if not (isinstance(name, str) and name.isidentifier() and isinstance(module, str)
            and all(p.isidentifier() for p in module.split("."))
            and (attr is None or isinstance(attr, str) and attr.isidentifier())):
        out.update(state="unknown", danger=UNKNOWN, target=repr((name, module, attr)),
                   why="a malformed module binding (Elastic Lite never writes one)")
        return out
    out["target"] = f"{module}.{attr}" if attr else module
    if name.startswith("_"):
        out.update(danger=RUNS_CODE,
                   why=f"it binds the private name {quoted(name)} (Elastic Lite never saves one)")
        return out
    if attr is not None:
        judged = judge_import({"module": module, "name": attr, "protocol": 3}, None, mode)
        out.update({k: judged[k] for k in ("target", "state", "danger", "why", "note")})
        if mode == DATA and out["danger"] is None and not own_name(name, module, attr):
            out.update(danger=NOT_DATA, why=(
                f"data-only mode binds {module}.{attr} only under its own name {attr}"))
        return out
    hit = _import_danger(module)
    if hit:
        out.update(danger=RUNS_CODE, why=f"importing {hit[0]} {hit[1]}")
    elif mode == DATA and not own_name(name, module):
        out.update(danger=NOT_DATA, why=(
            f"data-only mode binds a module only under its own name, and {name} is not the "
            f"name of {module}"))
    elif mode == DATA and module not in sys.modules and not _data_module(module):
        out.update(danger=NOT_DATA, why="data-only mode imports no module it does not need")
    return out


@functools.lru_cache(maxsize=None)
def _module_aliases():
    with open(ALLOWLIST.path, encoding="utf-8") as f:
        pairs = json.load(f)["module_aliases"]
    return frozenset((p["name"], p["module"]) for p in pairs)


def own_name(name, module, attr=None):
    """Is `name` what the bound thing is called: `json` for module json, `pyplot` for
    matplotlib.pyplot, `OrderedDict` for collections.OrderedDict, or one of the well-known
    aliases of allowlist.json's `module_aliases` (np for numpy, pd for pandas...)? Data-only
    mode binds nothing else: a file's `json = pickle` would make a later json.loads run it."""
    if attr is not None:
        return name == attr
    return name == module or name == module.rsplit(".", 1)[-1] or (name, module) in \
        _module_aliases()


def binding_text(binding):
    """A module binding as a person reads it: `json` when the name is the module's own,
    `np → numpy`, `json → pickle` (a name that says something else is shown as such)."""
    name, module, attr = binding.get("name"), binding.get("module"), binding.get("attr")
    target = f"{module}.{attr}" if attr else str(module)
    return str(name) if name == (attr or module) else f"{name} \u2192 {target}"


def _data_module(module):
    """A module some allow-list entry names (numpy, pandas, datetime...)."""
    return any(mod_re.match(module) for mod_re, _, _, _ in ALLOWLIST.rules())


def refuses(danger, mode):
    """Does `mode` refuse an import of this danger?"""
    if mode == TRUST or danger is None:
        return False
    return mode == DATA or danger in (RUNS_CODE, UNKNOWN)


def refuses_binding(binding, mode):
    """Does `mode` refuse this judged module binding? (see judge_binding)"""
    if mode == DENY and binding["danger"] == RUNS_CODE and binding["attr"] is not None \
            and binding["attr"] == binding["name"]:
        return False
    return refuses(binding["danger"], mode)


# A checkpoint Elastic Lite writes imports a few hundred distinct globals at most. A file
# importing more is judged up to MAX_JUDGED of them; the others are one "unknown" import
# (every record using one is refused unless trusted), so judging any file the validator
# accepts costs a bounded time (a file of 250,000 distinct imports took 82 s and 1.1 GB).
MAX_JUDGED = 5_000
_UNJUDGED = {"written": "...", "raw": None, "module": None, "name": None, "state": "unknown",
             "target": f"imports beyond the first {MAX_JUDGED:,}", "steps": [], "note": None,
             "dotted": False, "opcode": None, "protocol": None, "ext": None, "calls": [],
             "danger": UNKNOWN, "why": (
                 f"this checkpoint imports more than {MAX_JUDGED:,} distinct globals (Elastic "
                 "Lite writes a few hundred at most); the rest were not judged")}


class Judgement:
    """Every import of an inspected container (and its manifest's module bindings), judged
    once, before anything is imported or unpickled: the interpreter as it is NOW decides.

    `records[i]`: the judged imports of record i; `bindings`: the judged module bindings;
    `refused(rec)`: why a record may not load; `listing()`: what a person must see before
    confirming a foreign checkpoint."""

    def __init__(self, info, manifest=None, mode=DENY):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self.info = info
        self.records = {}
        self.seen = {}  # what the guarded unpickler judged harmless, for the next records
        judged = {}  # records import the same globals again and again: judge each once
        self.unjudged = 0  # distinct imports beyond MAX_JUDGED (see there)
        self._listing = None
        for rec in info.get("records") or []:
            imports = rec.get("imports")
            if imports is None and rec.get("globals"):  # no import details: pairs only
                imports = [{"module": m, "name": n, "protocol": None} for m, n in rec["globals"]]
            out = []
            imports = imports or []
            for n, i in enumerate(imports):
                key = (i.get("module"), i.get("name"), i.get("protocol"), i.get("ext"),
                       i.get("opcode"), tuple(i.get("calls") or ()), rec.get("serializer"))
                if key not in judged:
                    if len(judged) >= MAX_JUDGED:  # the rest of the file is not judged
                        self.unjudged += len(imports) - n
                        out.append(_UNJUDGED)
                        break
                    judged[key] = judge_import(i, rec.get("serializer"), mode)
                out.append(judged[key])
            self.records[rec.get("index")] = out
        modules = manifest.get("modules") if isinstance(manifest, dict) else None
        self.bindings = [judge_binding(b if isinstance(b, dict) else {}, mode)
                         for b in (modules if isinstance(modules, list) else [])]

    def refused(self, rec):
        """The judged imports that make this mode refuse record `rec` (empty: it may load)."""
        hits = [i for i in self.records.get(rec.get("index"), [])
                if refuses(i["danger"], self.mode)]
        if not hits and self.mode == DATA and rec.get("serializer") == "dill":
            hits = [{"target": "dill", "danger": NOT_DATA, "written": "dill", "raw": None,
                     "why": _not_data({}, "dill")}]
        return hits

    def accepted(self, rec):
        """The (module, name) pairs find_class may be asked for while loading `rec`."""
        return {tuple(i["raw"]) for i in self.records.get(rec.get("index"), []) if i["raw"]}

    def listing(self):
        """Every distinct thing restoring would import, for the person to see: [{"target",
        "danger", "why", "written": [...], "records": [...], "names": [...], "bindings":
        [...]}], the dangerous first (runs code, unknown, not data, builds code)."""
        if self._listing is not None:
            return self._listing
        rows = {}
        seen = {}  # target -> (written, records, names) already in its row: sets, so that a
        # checkpoint of many records importing the same globals stays linear
        names_of = {r.get("index"): list(r.get("names") or [])
                    for r in self.info.get("records") or []}

        def row(judged):
            r = rows.get(judged["target"])
            if r is None:
                r = rows[judged["target"]] = {
                    "target": judged["target"], "danger": None, "why": None, "written": [],
                    "records": [], "names": [], "bindings": []}
                seen[judged["target"]] = (set(), set(), set())
            if _ORDER[judged["danger"]] < _ORDER[r["danger"]]:
                r["danger"], r["why"] = judged["danger"], judged["why"]
            return r
        for index, imports in self.records.items():
            for i in imports:
                r = row(i)
                written, records, names = seen[i["target"]]
                if i["written"] not in written:
                    written.add(i["written"])
                    r["written"].append(i["written"])
                if index not in records:
                    records.add(index)
                    r["records"].append(index)
                    for n in names_of.get(index, []):
                        if n not in names:
                            names.add(n)
                            r["names"].append(n)
        for b in self.bindings:
            row(b)["bindings"].append(b["name"])
        self._listing = sorted(rows.values(),
                               key=lambda r: (_ORDER[r["danger"]], str(r["target"])))
        return self._listing


def label(judged):
    """How a judged import is named to a person: as pickle looks it up, and what it really
    is when that differs ("os.path.os.system (is posix.system)")."""
    if judged.get("module") is None:
        return judged.get("written") or str(judged.get("target"))
    name = f"{judged['module']}.{judged['name']}"
    target = judged.get("target")
    return name if not target or target == name else f"{name} (is {target})"


def refusal(hits, mode=DENY):
    """The message of a record refused because of `hits` (judged imports)."""
    if mode == DATA and hits and hits[0].get("checked"):
        return (f"not plain data: while loading, {label(hits[0])}: {hits[0]['why']}; refused "
                "in data-only mode (restore it with trust=True only if you made it)")
    if mode == DATA:
        shown = "; ".join(f"{label(h)}: {h['why']}" for h in hits[:3])
        return (f"not plain data: it would import {shown}{', ...' if len(hits) > 3 else ''}; "
                "refused in data-only mode")
    parts = []
    code = [h for h in hits if h["danger"] == RUNS_CODE]
    unknown = [h for h in hits if h["danger"] == UNKNOWN]
    if code:
        names = ", ".join(dict.fromkeys(label(h) for h in code[:5]))
        whys = "; ".join(dict.fromkeys(h["why"].split(": ", 1)[-1] for h in code))
        parts.append(f"would call {names}{', ...' if len(code) > 5 else ''} when loaded ({whys})")
    if unknown:
        whys = "; ".join(dict.fromkeys(h["why"] for h in unknown[:3]))
        parts.append(f"imports what cannot be known without running it ({whys})")
    return ("; ".join(parts) + "; refused. Restore with trust=True (CLI: restore --trust) only "
            "if you made this checkpoint yourself")


# --- enforcing inside the unpickler ------------------------------------------------------------

class Refused(pickle.UnpicklingError):
    """Raised by a guarded unpickler instead of handing out a global the mode refuses."""

    def __init__(self, judged, mode):
        super().__init__(refusal([judged], mode))
        self.judged = judged


_MODULE_OBJECT = ("it is the module {} itself: no checkpoint imports a module object by name, "
                  "and BUILD on one would change it for the whole process")


def _guarded_find_class(base, unpickler, module, name):
    """find_class of a guarded unpickler: only the imports judged before loading may be
    looked up at all, and what pickle finds is judged again by its real identity (a name
    judged by its module's name alone may turn out to be an alias of something else)."""
    mode = unpickler.el_mode
    if (module, name) not in unpickler.el_accepted:
        raise Refused({"target": f"{module}.{name}", "danger": UNKNOWN, "raw": [module, name],
                       "why": "it was not among the imports checked before loading"}, mode)
    obj = base(unpickler, module, name)
    seen = unpickler.el_seen  # (module, name) -> the object already judged harmless
    if seen.get((module, name), seen) is obj:
        return obj
    if isinstance(obj, types.ModuleType):
        raise Refused({"target": identity(obj), "danger": UNKNOWN, "raw": [module, name],
                       "why": _MODULE_OBJECT.format(identity(obj))}, mode)
    ident = identity(obj) or identity(type(obj))
    for m, n in _split(ident):
        why = DENYLIST.why(m, n)
        if why:
            raise Refused({"target": ident, "danger": RUNS_CODE, "raw": [module, name],
                           "why": f"{m}.{n}: {why}"}, mode)
    seen[(module, name)] = obj
    return obj


class _GuardedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        return _guarded_find_class(pickle.Unpickler.find_class, self, module, name)


_GUARDED_DILL = None


def _guarded_dill():
    global _GUARDED_DILL
    if _GUARDED_DILL is None:
        import dill._dill as _dill

        class _GuardedDill(_dill.Unpickler):
            def find_class(self, module, name):
                return _guarded_find_class(_dill.Unpickler.find_class, self, module, name)
        _GUARDED_DILL = _GuardedDill
    return _GUARDED_DILL


# A data-only record importing only these is loaded by pickle's C unpickler (10-15 times
# faster than the checking one): each is an immutable C type (BUILD cannot change it) whose
# call, with any arguments such a record can make, is no larger than those arguments: nothing
# lazy (range), no number of unbounded digits (Decimal, Fraction), no size (bytes(n)) and no
# array is among them. A record importing nothing has nothing to call at all.
_PLAIN_C = frozenset([("builtins", n) for n in (
    "dict", "list", "tuple", "set", "frozenset", "str", "int", "float", "complex", "bool",
    "slice", "NoneType", "object")] + [("datetime", n) for n in (
        "date", "time", "datetime", "timedelta", "timezone")] + [("collections", n) for n in (
            "OrderedDict", "deque", "defaultdict")] + [("copyreg", "_reconstructor")])


def guarded_load(serializer, payload, buffers, mode, accepted, seen=None):
    """Unpickle one record like capture.picklers.load, except that find_class hands out only the
    `accepted` (module, name) pairs, each judged again by what it really is (`seen`: a dict
    shared by the records of one restore, remembering what was judged already)."""
    if mode == DATA and serializer != "dill" and not accepted <= _PLAIN_C:
        return data_load(payload, buffers, accepted, seen)
    cls = _guarded_dill() if serializer == "dill" else _GuardedUnpickler
    unpickler = cls(io.BytesIO(payload), buffers=buffers)
    unpickler.el_mode = mode
    unpickler.el_accepted = accepted
    unpickler.el_seen = {} if seen is None else seen
    return unpickler.load()


# --- data-only loading: data constructors checked before they run, and budgets ---------------
#
# A data-only record loads through pickle's own Python unpickler with every opcode that calls
# or changes something checked first (REDUCE, NEWOBJ, NEWOBJ_EX, OBJ, INST, BUILD, APPEND(S),
# SETITEM(S), ADDITEMS):
# - only what find_class handed out may be called, and never a module (nothing on the
#   allow-list is one; a module reached anyway is refused);
# - nothing the file imported is changed: BUILD/APPEND/SETITEM on a class, a module, a
#   function or a singleton it imported (pandas.NA) would change it for the whole process;
# - numpy: no dtype that holds pointers (object, a structured dtype with an object field,
#   StringDType) over bytes of the file; an allocation (ndarray without buffer,
#   _reconstruct's shape, bytearray(n), numpy.void(n)) within the budget;
# - budgets: no argument that would make a container or number orders of magnitude larger
#   than the record (`deque(range(2**62), 0)`, `tuple(range(3 * 10**8))`,
#   `int(Decimal('1e999999999'))`, `Fraction('1e999999999')`). The budget is
#   BUDGET_FACTOR times the record's bytes (its stream and out-of-band buffers), at least
#   BUDGET_MIN: what the file holds loads whole, what it would make up does not.

BUDGET_FACTOR = 64
BUDGET_MIN = 1 << 20


def budget_for(payload, buffers=()):
    """How many items (elements, bytes, digits) a record of these bytes may make."""
    size = len(payload) + sum(memoryview(b).nbytes for b in buffers or ())
    return max(BUDGET_MIN, BUDGET_FACTOR * size)


def _pointer_bearing(dt):
    from .._rebuild import pointer_bearing
    return pointer_bearing(dt)


_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)")


def _implied_size(value, depth=2):
    """How many items consuming `value` would make: a range's length, an array's element
    count (a zero-stride view of 8 bytes may count 10**9), a Decimal's power of ten; the
    largest of a container's items (a few levels deep). What the file holds itself counts for
    nothing: it is there."""
    t = type(value)
    if t is range:  # (len() overflows past sys.maxsize: 2**31 - 1 in Pyodide)
        return max(0, (value.stop - value.start + value.step - (1 if value.step > 0 else -1))
                   // value.step)
    mod = getattr(t, "__module__", "")
    if mod == "decimal" or mod == "_decimal":
        return abs(value.adjusted()) if value.is_finite() else 0
    if mod == "numpy" and t.__name__ == "ndarray" or hasattr(value, "__array_interface__") \
            and mod.startswith("numpy"):
        return int(getattr(value, "size", 0) or 0)
    if depth and t in (tuple, list, dict, set, frozenset):
        items = value.values() if t is dict else value
        return max((_implied_size(v, depth - 1) for v in items), default=0)
    return 0


def _as_dtype(value):
    import numpy
    return numpy.dtype(value)


def _nbytes(shape, dtype):
    n = _as_dtype(dtype).itemsize
    for d in (shape if isinstance(shape, (tuple, list)) else (shape,)):
        n *= max(int(d), 0)
    return n


def _check_ndarray(unpickler, args, kwargs):
    names = ("shape", "dtype", "buffer", "offset", "strides", "order")
    bound = dict(zip(names, args), **kwargs)
    dtype = _as_dtype(bound.get("dtype", float))
    if bound.get("buffer") is not None:
        if _pointer_bearing(dtype):
            return (f"an array of dtype {dtype} over bytes of the file: its values would be "
                    "pointers the file chose")
    elif _nbytes(bound.get("shape", ()), dtype) > unpickler.el_budget:
        return f"an array of {_nbytes(bound.get('shape', ()), dtype)} bytes"
    return None


def _check_reconstruct(unpickler, args, kwargs):
    if len(args) >= 3 and _nbytes(args[1], args[2]) > unpickler.el_budget:
        return f"an array of {_nbytes(args[1], args[2])} bytes"
    return None


def _check_scalar(unpickler, args, kwargs):
    dtype = _as_dtype(args[0]) if args else None
    if dtype is not None and _pointer_bearing(dtype) and dtype.kind != "O":
        return f"a numpy scalar of dtype {dtype} from bytes of the file (pointers)"
    return None


def _check_frombuffer(unpickler, args, kwargs):
    if len(args) >= 2 and _pointer_bearing(_as_dtype(args[1])):
        return f"an array of dtype {args[1]} over bytes of the file (pointers)"
    return None


def _check_array_view(unpickler, args, kwargs):
    if len(args) == 6 and _pointer_bearing(_as_dtype(args[4])):
        return f"a view of dtype {args[4]} over bytes of the file (pointers)"
    return None


def _check_void(unpickler, args, kwargs):
    dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
    if dtype is not None and _pointer_bearing(_as_dtype(dtype)):
        return f"a numpy void of dtype {dtype} from bytes of the file (pointers)"
    return _check_sized(unpickler, args, kwargs)


def _check_sized(unpickler, args, kwargs):
    if args and type(args[0]) is int and args[0] > unpickler.el_budget:
        return f"{args[0]} zero bytes"
    return None


def _power_of_ten(value):
    """The power of ten a number written as text or a Decimal stands for (0 for others)."""
    if type(value) is str:
        m = _EXPONENT.search(value[:4096])
        return 0 if not m else abs(int(m.group(1))) if len(m.group(1)) < 12 else 1 << 62
    return _implied_size(value, 0)


# int() and Fraction() of a number written with a power of ten make that many digits: the
# same bound as Python's own for converting text to int (sys.get_int_max_str_digits()).
_DIGITS = 4300


def _check_fraction(unpickler, args, kwargs):
    for a in args:
        if _power_of_ten(a) > _DIGITS:
            return f"a fraction of 10**{_power_of_ten(a)}"
    return None


def _check_int(unpickler, args, kwargs):
    if args and _power_of_ten(args[0]) > _DIGITS:
        return f"an integer of {_power_of_ten(args[0])} digits"
    return None


def _check_new_index(unpickler, args, kwargs):
    pandas = sys.modules.get("pandas")
    if len(args) < 2 or pandas is None or not (isinstance(args[0], type)
                                                and issubclass(args[0], pandas.Index)):
        return "pandas' _new_Index called with something else than a pandas index class"
    if not isinstance(args[1], dict):
        return "pandas' _new_Index called without its dict of fields"
    return _check_call(unpickler, args[0], (), args[1])


def _check_unpickle_block(unpickler, args, kwargs):
    if len(args) != 3 or args[2] not in (1, 2):
        return "pandas' _unpickle_block called with other arguments than (values, placement, ndim)"
    values = args[0]
    if getattr(values, "ndim", None) not in (1, 2):
        return "pandas' _unpickle_block called with values that are not an array"
    return None


def _check_reconstructor(unpickler, args, kwargs):
    if len(args) != 3:
        return "copyreg._reconstructor called with other arguments than (class, base, state)"
    cls, base, state = args
    for c in (cls, base):
        if not isinstance(c, type) or not unpickler.el_imported_has(c):
            return f"copyreg._reconstructor of {_describe(c)}, which the file did not import"
    if base is not object and state is not None:
        return _check_call(unpickler, base, (state,), {})
    return None


def _check_newobj(unpickler, args, kwargs):
    if not args or not isinstance(args[0], type) or not unpickler.el_imported_has(args[0]):
        return "copyreg.__newobj__ of what the file did not import as a class"
    return _check_call(unpickler, args[0], args[1:], {})


def _check_newobj_ex(unpickler, args, kwargs):
    if len(args) != 3 or not isinstance(args[0], type) or not unpickler.el_imported_has(args[0]) \
            or not isinstance(args[1], tuple) or not isinstance(args[2], dict):
        return "copyreg.__newobj_ex__ with other arguments than (class, args, kwargs)"
    return _check_call(unpickler, args[0], args[1], args[2])


def _pandas_inconsistent(obj):
    """Why a pandas object just made or filled is not what pandas itself would make (its
    numpy values of another dtype than its own: pandas' C code reads an int64 array as
    datetimes and crashed the interpreter), else None. Only what pandas' unpickling sets
    without checking: NDArrayBacked (datetime, timedelta, period, categorical, string
    arrays), the masked arrays (nullable integers, floats, booleans), block managers and
    MultiIndex codes."""
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return None
    numpy = sys.modules["numpy"]
    from pandas._libs.arrays import NDArrayBacked
    from pandas.core.arrays.masked import BaseMaskedArray
    from pandas.core.internals.managers import BaseBlockManager
    name = type(obj).__name__
    if isinstance(obj, NDArrayBacked):
        arr, dtype = getattr(obj, "_ndarray", None), getattr(obj, "_dtype", None)
        if arr is None:
            return None  # not filled yet (BUILD comes next)
        if type(arr) is not numpy.ndarray:
            return f"a pandas {name} whose values are not a numpy array"
        arrays = pandas.arrays
        if isinstance(obj, arrays.DatetimeArray):
            want = dtype if isinstance(dtype, numpy.dtype) else \
                numpy.dtype(f"M8[{getattr(dtype, 'unit', 'ns')}]")
            ok = want.kind == "M" and arr.dtype == want
        elif isinstance(obj, arrays.TimedeltaArray):
            ok = isinstance(dtype, numpy.dtype) and dtype.kind == "m" and arr.dtype == dtype
        elif isinstance(obj, arrays.PeriodArray):
            ok = arr.dtype == numpy.dtype("int64")
        elif isinstance(obj, pandas.Categorical):
            ok = arr.dtype.kind in "iu"
        elif isinstance(obj, arrays.StringArray):
            ok = arr.dtype == numpy.dtype(object)
        else:
            return f"a pandas {name}: data-only mode knows no check for it"
        if not ok:
            return f"a pandas {name} of dtype {dtype} over numpy values of dtype {arr.dtype}"
    elif isinstance(obj, BaseBlockManager):
        return _blocks_inconsistent(obj, numpy)
    elif isinstance(obj, pandas.MultiIndex):  # unpickled with verify_integrity=False
        try:
            obj._verify_integrity()
        except Exception as exc:
            return f"a pandas MultiIndex whose codes do not fit its levels ({exc})"
    elif isinstance(obj, BaseMaskedArray):
        data, mask = getattr(obj, "_data", None), getattr(obj, "_mask", None)
        if data is None and mask is None:
            return None
        kinds = {"IntegerArray": "iu", "FloatingArray": "f", "BooleanArray": "b"}.get(name)
        if kinds is None or type(data) is not numpy.ndarray or type(mask) is not numpy.ndarray \
                or data.dtype.kind not in kinds or mask.dtype != bool or data.shape != mask.shape:
            return f"a pandas {name} whose values and mask do not match"
    return None


def _blocks_inconsistent(mgr, numpy):
    """Why a pandas block manager's blocks do not tile its axes (pandas' Cython indexes by
    the blocks' placements without bounds checks: a placement of 100000000 for 2 columns
    crashed the interpreter), else None."""
    axes, blocks = getattr(mgr, "axes", None), getattr(mgr, "blocks", None)
    if not axes or blocks is None:
        return None
    bad = "a pandas block manager whose blocks do not tile its axes"
    if mgr.ndim == 1:
        return None if len(blocks) == 1 and blocks[0].shape == (len(axes[0]),) else bad
    n = len(axes[0])
    covered = numpy.zeros(n, dtype=bool)
    for b in blocks:
        locs = numpy.asarray(b.mgr_locs.as_array)
        if locs.ndim != 1 or locs.size != b.shape[0] or tuple(b.shape[1:]) != (len(axes[1]),):
            return bad
        if locs.size and (locs.min() < 0 or locs.max() >= n or covered[locs].any()
                          or len(numpy.unique(locs)) != locs.size):
            return bad
        covered[locs] = True
    return None if covered.all() else bad


# What each data constructor is checked for, by its real identity (before it runs).
_CHECKS = {
    "numpy.ndarray": _check_ndarray,
    "numpy._core.multiarray._reconstruct": _check_reconstruct,
    "numpy.core.multiarray._reconstruct": _check_reconstruct,
    "numpy._core.multiarray.scalar": _check_scalar,
    "numpy.core.multiarray.scalar": _check_scalar,
    "numpy._core.numeric._frombuffer": _check_frombuffer,
    "numpy.core.numeric._frombuffer": _check_frombuffer,
    "numpy.void": _check_void,
    "elastic_lite._rebuild.array_view": _check_array_view,
    "builtins.bytearray": _check_sized,
    "builtins.bytes": _check_sized,
    "builtins.int": _check_int,
    "fractions.Fraction": _check_fraction,
    "pandas.core.indexes.base._new_Index": _check_new_index,
    "pandas.core.indexes.datetimes._new_DatetimeIndex": _check_new_index,
    "pandas._libs.internals._unpickle_block": _check_unpickle_block,
    "copyreg._reconstructor": _check_reconstructor,
    "copyreg.__newobj__": _check_newobj,
    "copyreg.__newobj_ex__": _check_newobj_ex,
}


def _refuse_data(why, target):
    raise Refused({"target": target, "danger": NOT_DATA, "raw": None, "why": why,
                   "checked": True}, DATA)


def _check_call(unpickler, func, args, kwargs):
    """Why calling `func(*args, **kwargs)` (or `func.__new__`) is refused in data-only mode,
    or None: `func` must be a data constructor the file imported, and the call must stay
    within the record's budget and make no array over pointers."""
    if not unpickler.el_imported_has(func):
        return f"it calls {_describe(func)}, which is not a data constructor the file imported"
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        return "a call whose arguments are not a tuple"
    ident = identity(func) or ""
    size = max(_implied_size(args), _implied_size(kwargs))
    if size > unpickler.el_budget:
        return (f"it would make {ident} of about {size} items from a record of "
                f"{unpickler.el_size} bytes (the budget is {unpickler.el_budget})")
    check = _CHECKS.get(ident)
    if check is None:
        return None
    try:
        why = check(unpickler, args, kwargs)
    except (TypeError, ValueError, OverflowError) as exc:
        why = f"arguments {ident} does not accept ({type(exc).__name__}: {exc})"
    return why


class _DataUnpickler(pickle._Unpickler):
    """pickle's Python unpickler with every call and change checked first (see above)."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module, name):
        obj = _guarded_find_class(pickle._Unpickler.find_class, self, module, name)
        if isinstance(obj, types.ModuleType):
            _refuse_data(f"{module}.{name} is a module, not a data constructor", f"{module}.{name}")
        self.el_imported[id(obj)] = obj
        return obj

    def el_imported_has(self, obj):
        return self.el_imported.get(id(obj), self) is obj

    def _el_call(self, func, args, kwargs):
        why = _check_call(self, func, args, kwargs)
        if why:
            _refuse_data(why, identity(func) or _describe(func))

    def _el_changes(self, target, how, given=()):
        """Refuse `how` (BUILD, APPEND...) on `target` with `given` (the state or items) when
        it would change what the file imported, or hand a value made up from little bytes
        (range(10**12)) to anything but a plain container that only keeps it."""
        if self.el_imported_has(target) or isinstance(target, (types.ModuleType, type, enum.Enum)) \
                or callable(target) and identity(target) is not None:
            _refuse_data(f"{how} would change {_describe(target)} itself (imported by the "
                         "file: a class, module, function or shared object)", _describe(target))
        if not isinstance(target, (list, dict, set, collections.deque)):  # (they only keep it)
            size = _implied_size(given, 3)
            if size > self.el_budget:
                _refuse_data(f"{how} would hand {_describe(target)} a value of about {size} "
                             f"items from a record of {self.el_size} bytes (the budget is "
                             f"{self.el_budget})", _describe(target))

    def _el_made(self, obj, how):
        """Check what a call or BUILD made (pandas arrays filled without pandas' checks)."""
        if "pandas" in sys.modules:
            why = _pandas_inconsistent(obj)
            if why:
                _refuse_data(why, how)

    def load_reduce(self):
        self._el_call(self.stack[-2], self.stack[-1], {})
        pickle._Unpickler.load_reduce(self)
        self._el_made(self.stack[-1], identity(type(self.stack[-1])) or "REDUCE")
    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_newobj(self):
        if not isinstance(self.stack[-2], type):
            _refuse_data("NEWOBJ of what is not a class", _describe(self.stack[-2]))
        self._el_call(self.stack[-2], self.stack[-1], {})
        pickle._Unpickler.load_newobj(self)
    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_newobj_ex(self):
        if not isinstance(self.stack[-3], type):
            _refuse_data("NEWOBJ_EX of what is not a class", _describe(self.stack[-3]))
        self._el_call(self.stack[-3], self.stack[-2], self.stack[-1])
        pickle._Unpickler.load_newobj_ex(self)
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def _instantiate(self, klass, args):
        self._el_call(klass, tuple(args), {})
        pickle._Unpickler._instantiate(self, klass, args)

    def load_build(self):
        inst, state = self.stack[-2], self.stack[-1]
        self._el_changes(inst, "BUILD", state)
        numpy = sys.modules.get("numpy")
        if numpy is not None and type(inst) is numpy.ndarray and isinstance(state, tuple) \
                and len(state) >= 5 and not isinstance(state[-1], list):
            dtype = state[2]
            if isinstance(dtype, numpy.dtype) and _pointer_bearing(dtype):
                _refuse_data(f"an array of dtype {dtype} set from bytes of the file (pointers)",
                             "numpy.ndarray.__setstate__")
            if _nbytes(state[1], dtype) > self.el_budget:
                _refuse_data(f"an array of {_nbytes(state[1], dtype)} bytes",
                             "numpy.ndarray.__setstate__")
        pickle._Unpickler.load_build(self)
        self._el_made(inst, f"{identity(type(inst))}.__setstate__")
        if numpy is not None and isinstance(inst, numpy.dtype) and inst.fields:
            if _pointer_bearing(inst) and not inst.hasobject:
                _refuse_data(f"a dtype whose fields hold pointers but whose flags say not "
                             f"({inst})", "numpy.dtype.__setstate__")
    dispatch[pickle.BUILD[0]] = load_build

    def load_append(self):
        self._el_changes(self.stack[-2], "APPEND", self.stack[-1:])
        pickle._Unpickler.load_append(self)
    dispatch[pickle.APPEND[0]] = load_append

    def load_setitem(self):
        self._el_changes(self.stack[-3], "SETITEM", self.stack[-2:])
        pickle._Unpickler.load_setitem(self)
    dispatch[pickle.SETITEM[0]] = load_setitem

    def _el_marked_target(self, how):
        if self.metastack and self.metastack[-1]:
            self._el_changes(self.metastack[-1][-1], how, self.stack)

    def load_appends(self):
        self._el_marked_target("APPENDS")
        pickle._Unpickler.load_appends(self)
    dispatch[pickle.APPENDS[0]] = load_appends

    def load_setitems(self):
        self._el_marked_target("SETITEMS")
        pickle._Unpickler.load_setitems(self)
    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_additems(self):
        self._el_marked_target("ADDITEMS")
        pickle._Unpickler.load_additems(self)
    dispatch[pickle.ADDITEMS[0]] = load_additems


def data_load(payload, buffers, accepted, seen=None):
    """Unpickle one record in data-only mode (plain pickle only): the checking unpickler."""
    unpickler = _DataUnpickler(io.BytesIO(payload), buffers=buffers)
    unpickler.el_mode = DATA
    unpickler.el_accepted = accepted
    unpickler.el_seen = {} if seen is None else seen
    unpickler.el_imported = {}
    unpickler.el_size = len(payload) + sum(memoryview(b).nbytes for b in buffers or ())
    unpickler.el_budget = budget_for(payload, buffers)
    return unpickler.load()
