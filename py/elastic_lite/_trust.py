"""Which globals of a checkpoint record run code: the deny-list check done before unpickling.

A pickle stream imports globals (GLOBAL / STACK_GLOBAL) and may call them (REDUCE, ...). The C
core lists every [module, name] pair a record would import without unpickling anything
(`inspect(data)["records"][i]["globals"]`). A checkpoint written by Elastic Lite never imports
`os.system`, `subprocess.*`, `builtins.eval`, `js.*` and the like; a hostile one does exactly
that to run a command the moment it is restored. `load_snapshot` therefore refuses a record
whose globals hit the deny-list unless the caller passes `trust=True`.

This is NOT a sandbox. Pickle can build and call functions in other ways (e.g.
`builtins.getattr` on a module that a legitimate stream may import), so a determined attacker
is not stopped; what this stops is the common, direct attack. Restore only checkpoints you or
someone you trust made; `inspect` shows everything a checkpoint would import.

The list itself is data, `denylist.json` next to this file (shipped in the wheel); every host
judges records through elastic_lite.host, so this is the only reader. Matching: `module` and each pattern of
`names` match the whole module / name strings; `*` matches any run of characters (dots
included), nothing else is special.
"""

import json
import os
import re

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "denylist.json")
_rules = None


def _pattern(text):
    return re.compile("".join(".*" if part == "*" else re.escape(part)
                              for part in re.split(r"(\*)", text)) + r"\Z", re.S)


def _load():
    global _rules
    if _rules is None:
        with open(_PATH, encoding="utf-8") as f:
            entries = json.load(f)["entries"]
        _rules = [(_pattern(e["module"]), [_pattern(n) for n in e["names"]], e["why"])
                  for e in entries]
    return _rules


def why_denied(module, name):
    """The reason ("runs commands", ...) when module.name is on the deny-list, else None."""
    for mod_re, name_res, why in _load():
        if mod_re.match(module) and any(r.match(name) for r in name_res):
            return why
    return None


def denied_globals(globals_):
    """The [module, name] pairs of a record's globals that are on the deny-list (in order,
    each once), with their reason: [(module, name, why), ...]."""
    hits, seen = [], set()
    for pair in globals_ or []:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            continue
        module, name = str(pair[0]), str(pair[1])
        why = why_denied(module, name)
        if why is not None and (module, name) not in seen:
            seen.add((module, name))
            hits.append((module, name, why))
    return hits


def refusal(hits):
    """The failure reason of a refused record."""
    calls = ", ".join(f"{m}.{n}" for m, n, _ in hits[:5]) + (", ..." if len(hits) > 5 else "")
    whys = "; ".join(dict.fromkeys(w for _, _, w in hits))
    return (f"would call {calls} when loaded ({whys}); refused. Restore with trust=True (CLI: restore --trust) only "
            "if you made this checkpoint yourself")
