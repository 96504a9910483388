"""Which code change detection's fast path (_fast_path) takes for the kernel's machinery and the
standard library (never changing a notebook variable behind a cell's back) and which for
library code (it gives up)."""

import json
import os
import sysconfig

from elastic_lite.changes import fast_path as _fast_path


def _code_at(path):
    return compile("def f():\n    return 1\n", path, "exec")


def test_the_standard_library_is_where_its_modules_are_not_where_sysconfig_says(monkeypatch):
    # Pyodide's sysconfig names /lib/python3.14 while its standard library is imported from
    # /lib/python314.zip: json, re, asyncio... must still count as the standard library.
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: {
        "stdlib": "/nowhere/lib/python3.x", "platstdlib": "/nowhere/lib/python3.x"})
    monkeypatch.setattr(_fast_path._State, "machinery", {})
    assert _fast_path._machinery(json.dumps.__code__)
    std = os.path.dirname(os.__file__)
    assert _fast_path._machinery(_code_at(os.path.join(std, "somemodule.py")))
    # the boundary: a library installed inside that folder, or anywhere else, is not
    for where in (os.path.join(std, "site-packages", "somelib", "core.py"),
                  os.path.join(std, "dist-packages", "somelib", "core.py"),
                  os.path.join(os.path.dirname(std) + "-elsewhere", "somelib.py")):
        assert not _fast_path._machinery(_code_at(where)), where
