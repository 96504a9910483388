"""The shapes of notebook state the performance issues measure, as notebook code.

Each shape is the code of a cell, exec'd in `__main__` (so its classes are notebook classes,
as a cell defines them); `names(shape)` are the variables it leaves. The same file runs in
native CPython and inside Pyodide.

  dicts       100,000 small dicts
  instances   20,000 instances of a notebook class (+ the class)
  bytes50     one 50 MiB bytes object
  bytes20x10  20 variables of 10 MiB bytes each
  mixed199    199 variables of a typical notebook: numbers, strings, lists, dicts, notebook
              functions, classes and instances, some of them sharing lists (184 groups)
  compute     the compute-heavy notebook: a sieve of Eratosthenes up to 2,000,000 and the
              Collatz stopping time of every number below 2,000,000 memoised in a dict
              (4.3 M entries); ~3 s of CPU natively, ~10 s in Pyodide
  vars200     200 ordinary variables, ~6 MB in all: strings, lists of numbers and of
              strings, dicts, lists of small instances of a notebook class (issue 21's
              "many variables": most notebooks look like this)
"""

import sys

SHAPES = {
    "dicts": "data = [{'a': i, 'b': str(i), 'c': [i, 2 * i]} for i in range(100000)]\n",
    "instances": (
        "class Item:\n"
        "    def __init__(self, i):\n"
        "        self.i = i\n"
        "        self.name = 'item%d' % i\n"
        "        self.tags = [i % 7]\n"
        "    def twice(self):\n"
        "        return 2 * self.i\n"
        "items = [Item(i) for i in range(20000)]\n"),
    "bytes50": "blob = bytes(range(256)) * (50 * 1024 * 1024 // 256)\n",
    "bytes20x10": "".join(f"chunk{i} = bytes([{i}]) * (10 * 1024 * 1024)\n" for i in range(20)),
    "mixed199": r'''
import random as _random
_rng = _random.Random(7)
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def norm(self):
        return (self.x ** 2 + self.y ** 2) ** 0.5
class Sample:
    def __init__(self, i, values):
        self.i = i
        self.values = values
        self.meta = {"id": i, "tags": ["t%d" % (i % 5)]}
for _i in range(40):
    globals()[f"n{_i}"] = _i * 3.5 if _i % 2 else _i
for _i in range(20):
    globals()[f"s{_i}"] = f"label {_i} " * 20
for _i in range(40):
    globals()[f"row{_i}"] = [_rng.random() for _ in range(500)]
for _i in range(30):
    globals()[f"cfg{_i}"] = {"name": f"c{_i}", "vals": list(range(_i * 20)),
                             "weights": {str(k): _rng.random() for k in range(50)}}
for _i in range(8):
    exec(f"def f{_i}(v):\n    return v * {_i} + n{_i}", globals())
for _i in range(30):
    globals()[f"obj{_i}"] = Sample(_i, globals()[f"row{_i % 40}"] if _i < 15 else [_i] * 100)
for _i in range(15):
    globals()[f"pts{_i}"] = [Point(_rng.random(), _rng.random()) for _ in range(200)]
table = [{"k": _i, "v": str(_i), "p": Point(_i, _i)} for _i in range(2000)]
matrix = [[float(_i * _j) for _j in range(100)] for _i in range(100)]
for _i in range(12):
    globals()[f"tmp{_i}"] = (_i, f"t{_i}", [_i])
del _i, _rng, _random
''',
    "vars200": r'''
import random as _random
_rng = _random.Random(21)
class Reading:
    def __init__(self, i, value, unit):
        self.i, self.value, self.unit = i, value, unit
for _i in range(50):
    globals()[f"text{_i}"] = " ".join(f"word{(_i * 31 + k) % 997}" for k in range(2000))
for _i in range(50):
    globals()[f"values{_i}"] = [_rng.random() for _ in range(6000)]
for _i in range(20):
    globals()[f"labels{_i}"] = [f"label-{_i}-{k}" for k in range(2500)]
for _i in range(50):
    globals()[f"record{_i}"] = {"id": _i, "name": f"record {_i}", "scores": [_rng.random() for _ in range(1000)],
                                "attrs": {f"a{k}": k * _i for k in range(100)}}
for _i in range(30):
    globals()[f"readings{_i}"] = [Reading(k, _rng.random(), "mV") for k in range(800)]
del _i, _rng, _random
''',
    "compute": r'''
N = 2_000_000
sieve = bytearray([1]) * (N + 1)
sieve[0:2] = b"\0\0"
for p in range(2, int(N ** 0.5) + 1):
    if sieve[p]:
        sieve[p * p::p] = bytes(len(range(p * p, N + 1, p)))
primes = [i for i in range(N + 1) if sieve[i]]
steps = {1: 0}
for n in range(2, N):
    path = []
    m = n
    while m not in steps:
        path.append(m)
        m = m // 2 if m % 2 == 0 else 3 * m + 1
    s = steps[m]
    for q in reversed(path):
        s += 1
        steps[q] = s
''',
}


def main_ns():
    return sys.modules["__main__"].__dict__


def setup(shape):
    """Run the shape's cell in __main__; returns the names it bound."""
    ns = main_ns()
    before = set(ns)
    exec(compile(SHAPES[shape], f"<cell {shape}>", "exec"), ns)
    return [k for k in ns if k not in before and not k.startswith("_")]


def teardown(names):
    ns = main_ns()
    for name in names:
        ns.pop(name, None)
