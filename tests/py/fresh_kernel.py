"""Restore "in a new kernel": a new Python process that never ran the notebook code.

`restore_elsewhere(data, checks)` starts `python` (the interpreter running pytest), hands it
the checkpoint bytes on stdin, restores them into a fresh `__main__` module (as a kernel's
user namespace is) with `trust=True` (bytes another process made are foreign: a person
restoring their own file says so), then runs `checks` there. `restore_report` (the restore report as a dict) is bound
for the checks. Whatever the checks print comes back; an assertion failure (or any error)
in the child fails the calling test with the child's traceback. No temporary files.
"""

import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

_CHILD = r"""
import sys, types
sys.path.insert(0, sys.argv[1])
import elastic_lite as _el
_data = sys.stdin.buffer.read()
_main = types.ModuleType("__main__")
sys.modules["__main__"] = _main
_ns = _main.__dict__
_report = _el.load_snapshot(_data, _ns, trust=True)  # the person's own file: they say so
_ns["restore_report"] = _report.to_dict()
exec(compile(sys.argv[2], "<checks>", "exec"), _ns)
"""


def restore_elsewhere(data, checks, timeout=300):
    proc = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(ROOT, "py"), checks],
                          input=bytes(data), capture_output=True, timeout=timeout,
                          env=dict(os.environ))
    if proc.returncode != 0:
        raise AssertionError("restore in a new process failed:\n"
                             + proc.stderr.decode("utf-8", "replace")[-4000:])
    return proc.stdout.decode("utf-8", "replace")
