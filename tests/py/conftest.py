"""Host-CPython tests of the pure-Python parts of elastic_lite, on the real native C core
(build/native/libelastic_lite.so, built by `npm run build`; $ELASTIC_LITE_NATIVE_LIB wins)."""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "py"))

import pytest  # noqa: E402


@pytest.fixture
def nb():
    """A fresh notebook namespace plus a `run(code)` that executes a cell in it."""
    ns = {"__name__": "__main__"}

    def run(code):
        exec(compile(code, "<cell>", "exec"), ns)
        return ns
    run.ns = ns
    return run
