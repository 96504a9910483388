"""What a cell's code reads, writes and does, read from its syntax tree (nothing is run).

The session recorder (`replay/recorder.py`) calls `analyze(source, resolve)` on every cell
before it runs. The answer (`CellCode`) is deliberately conservative where it matters for
replay: a name the code *might* change is a write, because a missed write lets a replayed cell
change a restored object in place, while a spurious write only makes a plan larger.

- reads: names the cell takes from the namespace before binding them itself (textual order;
  a binding inside `if`/`for`/`while`/`try`/`match` does not count as "bound before", since
  it may not have run). Reads inside comprehensions, generator expressions and lambdas count
  as reads of the cell; reads inside `def` bodies are the function's (`FunctionInfo`), and
  become reads of every later cell that calls the function.
- writes: names bound (assignment, augmented assignment, for/with/except/match targets,
  walrus, import, def, class). deletes: `del x`.
- mutates: names whose object the cell may change in place: `x.a = ..`, `x[i] = ..`,
  `del x[i]`, `x.a += ..`, a method call `x.m(...)` unless `m` is known not to mutate
  (`PURE_METHODS`, and never with `inplace=True`), `next(x)`, `random.shuffle(x)`-like
  mutators, and arguments passed to a notebook function whose body mutates that parameter.
- effects: (kind, detail) pairs for what a replay would do besides computing values (the
  rules: `replay/effect_rules.py`). Kinds in `UNSAFE_EFFECTS` are not replayed unless allowed; the
  others are replayed and reported.
- opaque: why the reads cannot be known (exec/eval/globals()/locals()/vars()).
- defs: FunctionInfo of each function and class defined at top level.
"""

import ast
import re

from .effect_rules import (CODE_MAGICS, HARMLESS_MAGICS, INPLACE_ONLY_PURE, MUTATORS,
                           PURE_METHODS, classify_call, classify_method)

# Output history (IPython's, and `_` = the last value, which host.run_cell also binds): a
# replay cannot recreate it.
IPYTHON_HISTORY = re.compile(r"^(In|Out|_|_\d+|_i\d*|_ii|_iii|__|___|_oh|_ih|_dh|_exit_code)$")


class FunctionInfo:
    """What calling a notebook function (or instantiating/using a notebook class) touches."""

    def __init__(self, kind="function", params=()):
        self.kind = kind
        self.params = list(params)  # positional parameter names, in order
        self.reads = {}  # global names read (dict as an ordered set)
        self.writes = {}  # globals rebound (`global x; x = ...`)
        self.mutates = {}  # globals changed in place
        self.params_mutated = {}  # parameters changed in place
        self.calls = {}  # global names called (their infos apply transitively)
        self.effects = {}  # (kind, detail) -> None

    def to_json(self):
        return {"kind": self.kind, "params": self.params, "reads": list(self.reads),
                "writes": list(self.writes), "mutates": list(self.mutates),
                "params_mutated": list(self.params_mutated), "calls": list(self.calls),
                "effects": [list(e) for e in self.effects]}

    @classmethod
    def from_json(cls, d):
        info = cls(d.get("kind", "function"), d.get("params") or ())
        for key in ("reads", "writes", "mutates", "params_mutated", "calls"):
            setattr(info, key, dict.fromkeys(d.get(key) or ()))
        info.effects = dict.fromkeys(tuple(e) for e in d.get("effects") or ())
        return info


class CellCode:
    """The result of `analyze`: see the module docstring."""

    def __init__(self):
        self.reads = {}
        self.writes = {}
        self.deletes = {}
        self.mutates = {}
        self.calls = []  # (name, [arg base name or None], {keyword: base name})
        self.method_receivers = {}  # names whose methods are called (notebook classes)
        self.effects = {}
        self.defs = {}  # name -> FunctionInfo
        self.opaque = None  # why the reads cannot be known, or None
        self.history_reads = {}  # IPython output-history names read (Out, _5, ...)
        self.error = None  # SyntaxError text: nothing else is known then


def _short(node, limit=60):
    try:
        text = ast.unparse(node)
    except Exception:  # unparse of a partial tree: never fail the analysis for a label
        text = type(node).__name__
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _base_name(node):
    """`x` for x, x.a, x[i], x.a[i].b, x.get(k)...: the variable whose object is reached;
    None if the chain starts elsewhere (`f(x).a`: what f returns is not x)."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None


def _dotted(node):
    """['np', 'random', 'rand'] for np.random.rand; None for anything but a name chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _bound_names(body, params=()):
    """Names a function body binds in its own scope (Python decides locality statically)."""
    names, declared_global, declared_nonlocal = set(params), set(), set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            stack.extend(node.decorator_list)
            continue  # its body is another scope
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            # only walrus targets inside a comprehension bind in the enclosing scope
            stack.extend(n for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            continue
        if isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            declared_nonlocal.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif type(node).__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None):
            names.add(node.name)
        elif type(node).__name__ == "MatchMapping" and getattr(node, "rest", None):
            names.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    return names - declared_global - declared_nonlocal, declared_global


class _Scope:
    def __init__(self, kind, parent, local=(), declared_global=(), info=None):
        self.kind = kind  # module | function | class | comprehension
        self.parent = parent
        self.local = set(local)
        self.declared_global = set(declared_global)
        self.info = info  # FunctionInfo of the top-level def being analyzed (deferred code)


class _Analyzer(ast.NodeVisitor):
    def __init__(self, resolve):
        self.out = CellCode()
        self.resolve_global = resolve  # name -> qualified name of its binding, or None
        self.scope = _Scope("module", None)
        self.bound = set()  # module names bound unconditionally earlier in the cell
        self.aliases = {}  # imports made by this cell: name -> qualified name
        self.seeded = False  # the cell seeds a random generator itself
        self.random_effects = []  # effects that a seed in the same cell makes deterministic

    # -- name resolution -------------------------------------------------------------------
    def _global_of(self, name):
        """True if `name` at this point refers to a module-level (namespace) name."""
        scope = self.scope
        while scope is not None:
            if scope.kind == "module":
                return True
            if name in scope.declared_global:
                return True
            if name in scope.local:
                return False
            parent = scope.parent
            if scope.kind in ("function", "comprehension"):  # class bodies enclose neither
                while parent is not None and parent.kind == "class":
                    parent = parent.parent
            scope = parent
        return True

    def _deferred(self):
        s = self.scope
        while s is not None:
            if s.kind == "function":
                return s
            s = s.parent
        return None

    def qualified(self, parts):
        """'numpy.random.rand' for ['np', 'random', 'rand'] (np bound to numpy)."""
        if not parts:
            return None
        head = parts[0]
        if not self._global_of(head):
            return None
        base = self.aliases.get(head) or self.resolve_global(head)
        if base is None:
            return None
        return ".".join([base] + parts[1:])

    def _load(self, name):
        if not self._global_of(name):
            return
        fn = self._deferred()
        if fn is not None:
            fn.info.reads.setdefault(name)
            return
        if IPYTHON_HISTORY.match(name):
            self.out.history_reads.setdefault(name)
        if name not in self.bound:
            self.out.reads.setdefault(name)

    def _store(self, name):
        scope = self.scope
        while scope.kind == "comprehension":  # only walrus gets here: it binds outside
            scope = scope.parent
        if scope.kind == "module":
            self.out.writes.setdefault(name)
            self.out.deletes.pop(name, None)
            self.bound.add(name)
        elif scope.kind == "class":
            scope.local.add(name)
        elif name in scope.declared_global:
            self._deferred().info.writes.setdefault(name)

    def _mutate(self, node):
        name = _base_name(node)
        if name is None or self._library(name):
            return
        fn = self._deferred()
        if fn is not None:
            if name in fn.info.params and name in fn.local:
                fn.info.params_mutated.setdefault(name)
            elif self._global_of(name):
                fn.info.mutates.setdefault(name)
        elif self._global_of(name):
            self.out.mutates.setdefault(name)

    def _library(self, name):
        """True if `name` is bound to a module or a library function/class (`np`, `Path`):
        calling its attributes does not change a notebook variable."""
        if not self._global_of(name):
            return False
        return name in self.aliases or self.resolve_global(name) is not None

    def _effect(self, kind, detail):
        fn = self._deferred()
        target = fn.info.effects if fn is not None else self.out.effects
        target.setdefault((kind, detail))

    # -- traversal: NodeVisitor's, without its per-node getattr and its visit_Constant shim --
    _dispatch = {}  # node type -> (visit function, child fields)

    def visit(self, node):
        entry = self._dispatch.get(type(node))
        if entry is None:
            cls = type(node)
            method = getattr(type(self), "visit_" + cls.__name__, None) or _Analyzer.generic_visit
            fields = tuple(f for f in cls._fields if f not in ("ctx", "type_comment"))
            entry = self._dispatch[cls] = (method, fields)
        return entry[0](self, node)

    def generic_visit(self, node):
        for field in self._dispatch[type(node)][1]:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_Constant(self, node):
        pass

    # -- statements, in evaluation order ---------------------------------------------------
    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self._load(node.id)
        elif isinstance(node.ctx, ast.Store):
            self._store(node.id)
        else:
            self._load(node.id)  # `del x` needs x to exist
            if self.scope.kind == "module":
                self.out.deletes.setdefault(node.id)
                self.out.writes.pop(node.id, None)
                self.bound.discard(node.id)

    def _target(self, target):
        """An assignment target: names are bound, attribute/subscript bases are mutated."""
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            self.visit(target.value)
            if isinstance(target, ast.Subscript):
                self.visit(target.slice)
            self._mutate(target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._target(elt)
        elif isinstance(target, ast.Starred):
            self._target(target.value)
        else:
            self.visit(target)

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self._target(t)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self._load(node.target.id)
            self.visit(node.value)
            self._store(node.target.id)
            if self._deferred() is None and self._global_of(node.target.id):
                self.out.mutates.setdefault(node.target.id)  # `lst += [1]` changes lst in place
        else:
            self.visit(node.value)
            self._target(node.target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
            self._target(node.target)
        if self.scope.kind != "function":
            self.visit(node.annotation)

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self._store(node.target.id)

    def visit_Delete(self, node):
        for t in node.targets:
            if isinstance(t, (ast.Attribute, ast.Subscript)):
                self.visit(t.value)
                if isinstance(t, ast.Subscript):
                    self.visit(t.slice)
                self._mutate(t)
            else:
                self.visit(t)

    def visit_Import(self, node):
        for alias in node.names:
            if alias.asname:
                name, qual = alias.asname, alias.name
            else:
                name = qual = alias.name.split(".")[0]
            self._import(name, qual)

    def visit_ImportFrom(self, node):
        mod = ("." * (node.level or 0)) + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                continue  # the names it binds are seen by the namespace comparison
            self._import(alias.asname or alias.name, f"{mod}.{alias.name}")

    def _import(self, name, qual):
        if self.scope.kind == "module":
            self.aliases[name] = qual
        self._store(name)

    def _conditional(self, visit_parts):
        saved = set(self.bound)
        visit_parts()
        self.bound = saved

    def visit_If(self, node):
        self.visit(node.test)
        self._conditional(lambda: [self.visit(n) for n in node.body + node.orelse])

    def visit_For(self, node):
        # Iterating over a name consumes it only if it is an iterator: the recorder checks
        # the value's type when the cell has run (`replay.recorder.is_stateful`).
        self.visit(node.iter)

        def parts():
            self._target(node.target)
            for n in node.body + node.orelse:
                self.visit(n)
        self._conditional(parts)

    visit_AsyncFor = visit_For

    def visit_While(self, node):
        self._conditional(lambda: [self.visit(n) for n in [node.test] + node.body + node.orelse])

    def visit_Try(self, node):
        def parts():
            for n in node.body:
                self.visit(n)
            for h in node.handlers:
                if h.type is not None:
                    self.visit(h.type)
                if h.name:
                    self._store(h.name)
                for n in h.body:
                    self.visit(n)
                if h.name and self.scope.kind == "module":
                    self.out.writes.pop(h.name, None)  # Python deletes it after the handler
            for n in node.orelse:
                self.visit(n)
        self._conditional(parts)
        for n in node.finalbody:
            self.visit(n)

    visit_TryStar = visit_Try

    def visit_Match(self, node):
        self.visit(node.subject)

        def parts():
            for case in node.cases:
                self.visit(case.pattern)
                if case.guard is not None:
                    self.visit(case.guard)
                for n in case.body:
                    self.visit(n)
        self._conditional(parts)

    def visit_MatchAs(self, node):
        if node.pattern is not None:
            self.visit(node.pattern)
        if node.name:
            self._store(node.name)

    def visit_MatchStar(self, node):
        if node.name:
            self._store(node.name)

    def visit_MatchMapping(self, node):
        for k in node.keys:
            self.visit(k)
        for p in node.patterns:
            self.visit(p)
        if node.rest:
            self._store(node.rest)

    def visit_With(self, node):
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._target(item.optional_vars)
        for n in node.body:
            self.visit(n)

    visit_AsyncWith = visit_With

    def visit_Global(self, node):
        if self.scope.kind == "function":
            self.scope.declared_global.update(node.names)

    # -- scopes ----------------------------------------------------------------------------
    def _definition_time(self, node):
        """Defaults and decorators: evaluated when the def/lambda runs, in this scope."""
        args = node.args
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(d)
        for d in getattr(node, "decorator_list", ()):
            self.visit(d)

    def _body(self, node, info, parent):
        """A def/lambda body: deferred code, in its own scope, recorded into `info`."""
        args = node.args
        params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs] + [
            a.arg for a in (args.vararg, args.kwarg) if a is not None]
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        local, declared = _bound_names(body, params)
        prev, self.scope = self.scope, _Scope("function", parent, local, declared, info)
        try:
            for n in body:
                self.visit(n)
        finally:
            self.scope = prev

    def _function(self, node):
        """Returns the FunctionInfo of a def at the cell's top level (also inside if/for...),
        None otherwise: a nested def is part of its enclosing function's info; a lambda, or a
        def in a nested class, is conservatively part of the cell."""
        self._definition_time(node)
        outer = self._deferred()
        if outer is not None:
            self._body(node, outer.info, self.scope)
            return None
        info = FunctionInfo("function", [a.arg for a in node.args.posonlyargs + node.args.args])
        self._body(node, info, self.scope)
        if not isinstance(node, ast.Lambda) and self.scope.kind == "module":
            return info
        for name in info.reads:
            if name not in self.bound:
                self.out.reads.setdefault(name)
        self.out.mutates.update(info.mutates)
        self.out.effects.update(info.effects)
        self.out.calls.extend((name, [], {}) for name in info.calls)
        return None

    def visit_FunctionDef(self, node):
        info = self._function(node)
        self._store(node.name)
        if info is not None:
            self.out.defs[node.name] = info

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._function(node)

    def visit_ClassDef(self, node):
        for d in node.decorator_list:
            self.visit(d)
        for b in node.bases:
            self.visit(b)
        for k in node.keywords:
            self.visit(k.value)
        top_level = self.scope.kind == "module"
        info = FunctionInfo("class") if top_level else None
        prev, self.scope = self.scope, _Scope("class", self.scope)
        try:
            for n in node.body:
                if top_level and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._method(n, info)
                else:
                    self.visit(n)
        finally:
            self.scope = prev
        self._store(node.name)
        if info is not None:
            self.out.defs[node.name] = info

    def _method(self, node, class_info):
        """A method of a top-level class: deferred code, folded into the class's info. The
        class body does not enclose it: its names resolve from the module."""
        self._definition_time(node)
        self.scope.local.add(node.name)
        module = self.scope
        while module.kind != "module":
            module = module.parent
        self._body(node, class_info, module)

    def _comprehension(self, node, elts):
        first = node.generators[0]
        self.visit(first.iter)  # evaluated in the enclosing scope
        targets = set()
        for gen in node.generators:
            for n in ast.walk(gen.target):
                if isinstance(n, ast.Name):
                    targets.add(n.id)
        prev, self.scope = self.scope, _Scope("comprehension", self.scope, targets)
        try:
            for i, gen in enumerate(node.generators):
                if i:
                    self.visit(gen.iter)
                for cond in gen.ifs:
                    self.visit(cond)
            for e in elts:
                self.visit(e)
        finally:
            self.scope = prev

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])

    # -- calls: mutation, effects, function table ------------------------------------------
    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        parts = _dotted(func)
        qual = self.qualified(parts) if parts else None
        ipython = self._ipython_call(node)
        if ipython:
            return
        if isinstance(func, ast.Attribute):
            self._method_call(node, func, qual)
        if qual is not None:
            self._qualified_call(node, qual)
        if isinstance(func, ast.Name) and self._global_of(func.id):
            arg_bases = [_base_name(a) for a in node.args]
            kw_bases = {k.arg: _base_name(k.value) for k in node.keywords if k.arg}
            fn = self._deferred()
            if fn is not None:
                fn.info.calls.setdefault(func.id)
            else:
                self.out.calls.append((func.id, arg_bases, kw_bases))

    def _method_call(self, node, func, qual):
        method = func.attr
        receiver = func.value
        inplace = any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant)
                                                   and k.value.value is False)
                      for k in node.keywords)
        module_call = qual is not None and self._library(_base_name(receiver) or "")
        if not module_call and (method not in PURE_METHODS or
                                (inplace and method in INPLACE_ONLY_PURE)):
            self._mutate(receiver)
        base = _base_name(receiver)
        if base is not None and self._deferred() is None and self._global_of(base):
            self.out.method_receivers.setdefault(base)
        if not module_call:
            kind = classify_method(method, node, self.qualified(_dotted(receiver) or []))
            if kind:
                self._effect(kind, _short(node))

    def _qualified_call(self, node, qual):
        if qual in MUTATORS and node.args:
            self._mutate(node.args[0])
        kind = classify_call(qual, node)
        if kind is None:
            return
        if kind == "seed":
            self.seeded = True
        elif kind.startswith("opaque:"):
            if self._deferred() is None:
                self.out.opaque = self.out.opaque or "it calls " + kind[len("opaque:"):]
        else:
            if kind == "random":
                kind = "nondeterministic"
                self.random_effects.append((kind, _short(node)))
            self._effect(kind, _short(node))

    def _ipython_call(self, node):
        """get_ipython().run_line_magic(...) and friends, as IPython transforms magics."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython"):
            return False
        method = func.attr
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        if method in ("system", "getoutput"):
            self._effect("runs-command", _short(node))
        elif method in ("run_line_magic", "run_cell_magic") and args and isinstance(args[0], str):
            name = args[0].lstrip("%")
            code = args[-1] if method == "run_cell_magic" else (args[1] if len(args) > 1 else "")
            if name in CODE_MAGICS and isinstance(code, str):
                self._inner_code(code)
            elif name in ("restore", "checkpoint"):
                self._effect("elastic-lite", f"%{name}")
            elif name not in HARMLESS_MAGICS:
                self._effect("magic", f"%{name}")
        elif method in ("run_cell", "ev", "ex", "run_code"):
            if self._deferred() is None:
                self.out.opaque = self.out.opaque or f"it calls get_ipython().{method}()"
        else:
            self._effect("magic", _short(node))
        return True

    def _inner_code(self, code):
        """The statement a %time/%timeit/%%time/%%capture magic runs, analyzed in place."""
        try:
            tree = _parse(code)
        except SyntaxError:
            self.out.opaque = self.out.opaque or "a magic runs code that does not parse"
            return
        for stmt in tree.body:
            self.visit(stmt)


def _parse(source):
    return compile(source, "<cell>", "exec",
                   ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def analyze(source, resolve=None):
    """Analyze one cell's Python source. `resolve(name)` gives the qualified name of what a
    namespace name is bound to: 'numpy' for a module, 'numpy.mean' for a library function or
    class, 'builtins.print' for a builtin; None for data and for notebook functions/classes."""
    an = _Analyzer(resolve or (lambda name: None))
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes in the source
        an.out.error = f"{type(exc).__name__}: {exc}"
        return an.out
    for stmt in tree.body:
        an.visit(stmt)
    if an.seeded:  # `random.seed(1)` in the cell: its random calls replay the same
        for effect in an.random_effects:
            an.out.effects.pop(effect, None)
    return an.out
