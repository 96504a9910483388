"""The cell analyzer alone: Python's scoping rules decide what a cell reads from the
namespace, and the conservative rules decide what it may change."""

import builtins

import pytest

from elastic_lite.replay.cell_ast import analyze

MODULES = {"np": "numpy", "plt": "matplotlib.pyplot", "random": "random", "os": "os",
           "sys": "sys", "Path": "pathlib.Path", "pd": "pandas"}


def resolve(name):
    if name in MODULES:
        return MODULES[name]
    return f"builtins.{name}" if hasattr(builtins, name) else None


def rwm(code):
    a = analyze(code, resolve)
    assert a.error is None, a.error
    drop = set(dir(builtins))
    return ([n for n in a.reads if n not in drop], list(a.writes), list(a.mutates))


@pytest.mark.parametrize("code, reads, writes, mutates", [
    ("x = x + 1\ny = x", ["x"], ["x", "y"], []),
    ("a, (b, *c) = t", ["t"], ["a", "b", "c"], []),
    ("n += 1", ["n"], ["n"], ["n"]),  # `lst += [..]` changes a list in place
    ("if cond:\n    q = 1\nr = q", ["cond", "q"], ["q", "r"], []),  # q may be the old one
    ("q = 1\nif cond:\n    r = q", ["cond"], ["q", "r"], []),
    ("for i in items:\n    acc = acc + i", ["items", "acc"], ["i", "acc"], []),
    ("while w:\n    w = w - 1", ["w"], ["w"], []),
    ("try:\n    v = risky()\nexcept KeyError as e:\n    v = e", ["risky"], ["v"], []),
    ("with ctx() as (h, k):\n    z = h", ["ctx"], ["h", "k", "z"], []),
    ("import os.path\nfrom math import pi as PI", [], ["os", "PI"], []),
    ("[y * m for y in xs if y > lo]", ["xs", "lo", "m"], [], []),
    ("[y for y in range(3)]\nval = y", ["y"], ["val"], []),  # the loop variable is not leaked
    ("[(w := v) for v in vs]", ["vs"], ["w"], []),  # walrus binds in the cell's scope
    ("{k: v for k, v in pairs.items()}", ["pairs"], [], []),
    ("f = lambda a, b=dflt: a + glob", ["dflt", "glob"], ["f"], []),  # conservative
    ("def f(a, b=dflt):\n    return a + glob", ["dflt"], ["f"], []),  # body deferred
    ("@deco\ndef f():\n    pass", ["deco"], ["f"], []),
    ("class C(Base):\n    k = K\n    j = k + 1\n    def m(self):\n        return M",
     ["Base", "K"], ["C"], []),
    ("class C:\n    k = 1\n    ks = [k for _ in r]", ["r", "k"], ["C"], []),  # class scope skipped
    ("match cmd:\n    case [a, *rest]:\n        out = a\n    case {'k': v, **kw}:\n        out = v",
     ["cmd"], ["a", "rest", "out", "v", "kw"], []),
    ("del x\nx = 1\ny = x", ["x"], ["x", "y"], []),
    ("obj.a.b = 1\nlst[0][1] = 2\ndel d['k']\nm.x += 1", ["obj", "lst", "d", "m"], [],
     ["obj", "lst", "d", "m"]),
    ("s.upper()\nd.get('k')\nn = df.head()\ndf.dropna(inplace=True)\nq.put(1)",
     ["s", "d", "df", "q"], ["n"], ["df", "q"]),  # pure methods, unless inplace=True
    ("x.get('k').append(1)", ["x"], [], ["x"]),
    ("np.random.shuffle(arr)\nnp.sort(arr2)\nPath('a').exists()", ["np", "arr", "arr2", "Path"],
     [], ["arr"]),
    ("v = next(it)\nsetattr(o, 'a', 1)", ["it", "o"], ["v"], ["it", "o"]),
    ("r = await fetch_data(u)", ["fetch_data", "u"], ["r"], []),
])
def test_reads_writes_and_in_place_changes(code, reads, writes, mutates):
    assert rwm(code) == (reads, writes, mutates)


def test_functions_record_globals_rebinds_changes_and_parameters():
    a = analyze("def f(p, q=1, *rest, kw=None, **more):\n"
                "    global G\n    G = p\n    local = H + q\n    p.append(local)\n"
                "    cache[p] = 1\n    inner = lambda: Z\n    def nested():\n        return W\n"
                "    return helper(kw)\n", resolve)
    info = a.defs["f"]
    assert info.params == ["p", "q"] and set(info.params_mutated) == {"p"}
    assert set(info.reads) >= {"H", "Z", "W", "helper", "cache"} and "local" not in info.reads
    assert list(info.writes) == ["G"] and list(info.mutates) == ["cache"]
    assert list(info.calls) == ["helper"]
    assert list(a.reads) == [] and list(a.writes) == ["f"]


def test_effects_by_qualified_name():
    def kinds(code):
        return sorted({k for k, _ in analyze(code, resolve).effects})
    assert kinds("print(1)") == ["prints"]
    assert kinds("sys.stdout.write('x')") == ["prints"]
    assert kinds("plt.plot([1])\nax.scatter(x, y)") == ["draws"]
    assert kinds("open('a')") == ["reads-files"]
    assert kinds("open('a', mode)") == ["writes-files"]  # not a literal: it may write
    assert kinds("open('a', 'rb')\nopen('b', 'r+')") == ["reads-files", "writes-files"]
    assert kinds("df.to_csv('x.csv')\nos.remove('y')") == ["writes-files"]
    assert kinds("import requests\nrequests.get(u)") == ["network"]
    assert kinds("import subprocess\nsubprocess.run(['ls'])") == ["runs-command"]
    assert kinds("name = input()") == ["input"]
    assert kinds("x = np.random.rand(3)") == ["nondeterministic"]
    assert kinds("np.random.seed(0)\nx = np.random.rand(3)") == []
    assert kinds("rng = np.random.default_rng()") == ["nondeterministic"]
    assert kinds("rng = np.random.default_rng(42)") == []
    assert kinds("import sqlite3\nc = sqlite3.connect(':memory:')") == []
    assert kinds("import sqlite3\nc = sqlite3.connect('x.db')") == ["writes-files"]
    assert kinds("import elastic_lite as el\nel.restore('x')") == ["elastic-lite"]
    assert kinds("get_ipython().run_line_magic('pip', 'install x')") == ["magic"]
    assert kinds("get_ipython().run_line_magic('restore', 'x')") == ["elastic-lite"]
    assert kinds("get_ipython().run_cell_magic('time', '', 'print(1)')") == ["prints"]
    assert kinds("x = 1 + 2\nd = {}.copy()") == []


def test_what_cannot_be_analyzed_says_why():
    assert analyze("eval('x')", resolve).opaque == "it calls eval()"
    assert analyze("vars()", resolve).opaque == "it calls vars()"
    assert analyze("vars(obj)", resolve).opaque is None
    assert analyze("def f():\n    return globals()", resolve).opaque is None  # not run here
    assert analyze("get_ipython().run_cell('x = 1')", resolve).opaque.startswith("it calls")
    assert analyze("x = (", resolve).error.startswith("SyntaxError")
    assert analyze("a = 1\x00", resolve).error is not None
    assert list(analyze("y = Out[2] + _3 + _", resolve).history_reads) == ["Out", "_3", "_"]
