"""Shared by the test_replay*.py files: a notebook session driven the way a host without
IPython drives the recorder (before(code) / run / after(ok))."""

import ast
import inspect
import json
import pathlib
import tempfile

import pytest

from elastic_lite.replay.recorder import Recorder


@pytest.fixture
def scratch():
    """A temporary directory, removed when the test ends (pytest's tmp_path keeps some)."""
    with tempfile.TemporaryDirectory(prefix="el-replay-") as d:
        yield pathlib.Path(d)


class Session:
    """A namespace, a recorder on it, and `run(code)` executing one cell like a host would."""

    def __init__(self, **limits):
        self.ns = {"__name__": "__main__"}
        self.rec = Recorder(self.ns, **limits)

    def run(self, code, expect_ok=True):
        self.rec.before(code)
        error = None
        try:
            compiled = compile(code, "<cell>", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(compiled, self.ns)
            if compiled.co_flags & inspect.CO_COROUTINE:
                try:  # cells in these tests never really suspend
                    result.send(None)
                except StopIteration:
                    pass
        except Exception as exc:
            error = exc
        self.rec.after(ok=error is None, error=error)
        if expect_ok and error is not None:
            raise error
        return self.rec.cells[-1] if self.rec.cells else None

    def cell(self, count):
        return next(c for c in self.rec.cells if c.count == count)

    def history(self):
        """The history as it travels in a checkpoint: through JSON text."""
        return json.loads(json.dumps(self.rec.to_json()))
