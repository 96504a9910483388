"""Host-CPython tests of the pure-Python parts of elastic_lite, on the real native C core
(build/native/libelastic_lite.so, built by `npm run build`; $ELASTIC_LITE_NATIVE_LIB wins)."""

import os
import shutil
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "py"))

import pytest  # noqa: E402


def pytest_configure(config):
    """tmp_path folders go into one fresh folder that is removed when the session ends: by
    default pytest keeps `pytest-of-<user>/` in the system temp folder after every run (and
    `npm test` fails when a run leaves anything behind)."""
    if config.option.basetemp is None:
        config.option.basetemp = tempfile.mkdtemp(prefix="el-pytest-")
        config._el_basetemp = config.option.basetemp


def pytest_unconfigure(config):
    base = getattr(config, "_el_basetemp", None)
    if base:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def nb():
    """A fresh notebook namespace plus a `run(code)` that executes a cell in it."""
    ns = {"__name__": "__main__"}

    def run(code):
        exec(compile(code, "<cell>", "exec"), ns)
        return ns
    run.ns = ns
    return run
