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

import copyreg
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

_DIR = os.path.dirname(os.path.abspath(__file__))

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

    def why(self, module, name):
        """The reason of the first entry matching module + name, else None."""
        self.rules()
        for _, (mod_re, name_res, why, _) in sorted(self._by_module.get(module, []) + [
                r for r in self._wild if r[1][0].match(module)]):
            if mod_re.match(module) and any(r.match(name) for r in name_res):
                return why
        return None

    def why_import(self, module):
        """The reason when importing `module` at all runs something (an `on_import` entry)."""
        for mod_re, _, why, on_import in self.rules():
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
            raise _Dynamic(f"module {what} computes {name!r} with its __getattr__")
        raise AttributeError(name)
    try:
        raw = _inspect.getattr_static(obj, name)
    except AttributeError:
        if _python_hook(t, "__getattr__"):
            raise _Dynamic(f"{what} computes {name!r} with its __getattr__") from None
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
                f"module {module} is not imported here, so the attribute path {name!r} "
                "cannot be followed without running it"))
        else:
            out["state"] = "by-name"
        return out
    try:
        for part in name.split(".") if dotted else [name]:
            obj = _static_getattr(obj, part)
            out["steps"].append(_describe(obj))
    except AttributeError:
        out.update(state="missing", note=f"{module} has no attribute {name!r} here: loading fails")
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
                   why=f"it binds the private name {name!r} (Elastic Lite never saves one)")
        return out
    if attr is not None:
        judged = judge_import({"module": module, "name": attr, "protocol": 3}, None, mode)
        out.update({k: judged[k] for k in ("target", "state", "danger", "why", "note")})
        return out
    hit = _import_danger(module)
    if hit:
        out.update(danger=RUNS_CODE, why=f"importing {hit[0]} {hit[1]}")
    elif mode == DATA and module not in sys.modules and not _data_module(module):
        out.update(danger=NOT_DATA, why="data-only mode imports no module it does not need")
    return out


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
        for rec in info.get("records") or []:
            imports = rec.get("imports")
            if imports is None and rec.get("globals"):  # no import details: pairs only
                imports = [{"module": m, "name": n, "protocol": None} for m, n in rec["globals"]]
            out = []
            for i in imports or []:
                key = (i.get("module"), i.get("name"), i.get("protocol"), i.get("ext"),
                       i.get("opcode"), tuple(i.get("calls") or ()), rec.get("serializer"))
                if key not in judged:
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
        return sorted(rows.values(), key=lambda r: (_ORDER[r["danger"]], str(r["target"])))


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


def guarded_load(serializer, payload, buffers, mode, accepted, seen=None):
    """Unpickle one record like _pickling.load, except that find_class hands out only the
    `accepted` (module, name) pairs, each judged again by what it really is (`seen`: a dict
    shared by the records of one restore, remembering what was judged already)."""
    cls = _guarded_dill() if serializer == "dill" else _GuardedUnpickler
    unpickler = cls(io.BytesIO(payload), buffers=buffers)
    unpickler.el_mode = mode
    unpickler.el_accepted = accepted
    unpickler.el_seen = {} if seen is None else seen
    return unpickler.load()
