"""Desktop Jupyter: the host CPython wheel pip-installed into a fresh venv (away from the
checkout, no environment variable of this project), a real ipykernel driven by jupyter_client's
KernelManager as Jupyter Server drives it (the kernel started in the notebook's folder with
$JPY_SESSION_NAME naming the notebook): %load_ext elastic_lite, cells with numpy and pandas, an
automatic point after each cell, %checkpoint, a kernel restart, then a bare %restore brings the
state back from `.elastic-lite/` beside the notebook (a generator, which no pickler stores, by
replaying the recorded cell that made it).

ipykernel, numpy and pandas come from the project's .venv (a .pth file in the fresh venv points
at its site-packages, after the venv's own): elastic_lite, cloudpickle and dill are the fresh
venv's own, installed offline from build/native-wheel and build/wheels."""

import glob
import json
import os
import subprocess
import sys
import sysconfig

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV_OF_PROJECT = ("ELASTIC_LITE_NATIVE_LIB", "ELASTIC_LITE_STORE", "ELASTIC_LITE_KEY_FILE", "PYTHONPATH")


@pytest.fixture(scope="module")
def kernel_python(tmp_path_factory):
    wheels = glob.glob(os.path.join(ROOT, "build", "native-wheel", "elastic_lite-*-py3-none-*.whl"))
    assert len(wheels) == 1, f"one host CPython wheel in build/native-wheel (npm run build): {wheels}"
    base = tmp_path_factory.mktemp("venv")
    venv = base / "venv"
    clean = {k: v for k, v in os.environ.items() if k not in ENV_OF_PROJECT}
    # without a pip of its own (ensurepip copies and compiles one into every venv, ~6 s of
    # CPU): the running pip, the one `-m venv` would copy in, installs into it (--python)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean)
    python = str(venv / "bin" / "python")
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-index",
                    "--disable-pip-version-check", "--find-links",
                    os.path.join(ROOT, "build", "wheels"), wheels[0]], check=True, cwd=base,
                   env={**clean, "PIP_CONFIG_FILE": "/dev/null"})
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "zz_project_venv.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")  # ipykernel, numpy, pandas
    return python, clean


class Kernel:
    def __init__(self, python, env, cwd, tmp):
        kernels = tmp / "kernels" / "el"
        kernels.mkdir(parents=True)
        (kernels / "kernel.json").write_text(json.dumps({
            "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "fresh venv", "language": "python"}))
        self.km = KernelManager(kernel_name="el",
                                kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp / "kernels")]))
        self.km.start_kernel(cwd=str(cwd), env=env)
        self._connect()

    def _connect(self):
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code):
        """stdout of a cell; fails on an error."""
        out = []

        def hook(msg):
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                out.append("\n".join(msg["content"]["traceback"]))
        reply = self.kc.execute_interactive(code, output_hook=hook, timeout=120)
        text = "".join(out)
        assert reply["content"]["status"] == "ok", text
        return text

    def restart(self):
        self.kc.stop_channels()
        self.km.restart_kernel(now=True)
        self._connect()

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def test_checkpoint_restart_restore_in_a_real_ipykernel(kernel_python, tmp_path):
    python, clean = kernel_python
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = {**clean, "JPY_SESSION_NAME": str(project / "analysis.ipynb"), "HOME": str(home),
           "XDG_DATA_HOME": str(home / "data")}
    k = Kernel(python, env, project, tmp_path)
    try:
        out = k.run("%load_ext elastic_lite\nimport elastic_lite._core as c\nprint(c._native_path())\n"
                    "%elastic_lite store")
        venv = os.path.dirname(os.path.dirname(python))
        assert out.splitlines()[0].startswith(venv), out  # the core of the installed wheel
        assert f"checkpoints are kept in {project / '.elastic-lite'}" in out
        k.run("import numpy as np, pandas as pd\narr = np.arange(200_000, dtype='float64')\n"
              "view = arr[::2]\ndf = pd.DataFrame({'a': range(5), 'b': list('vwxyz')})\n"
              "def f(x):\n    return x + len(df)\n")
        k.run("x = 41\ngen = (i * x for i in range(3))")  # a generator: replayed, not stored
        out = k.run("%checkpoint mine")
        assert 'checkpoint "mine" saved' in out
        out = k.run("%checkpoints")
        assert "[2]" in out and "[3]" in out, out  # the automatic points after cells 2 and 3
        assert 'a bare %restore brings back "mine"' in out
        k.restart()
        assert k.run("print([n in globals() for n in ('x', 'arr', 'df', 'f')])").split() == \
            ["[False,", "False,", "False,", "False]"]  # a new kernel: nothing of the old state
        out = k.run("%load_ext elastic_lite\n%restore")
        assert 'checkpoint "mine"' in out, out
        out = k.run("print(arr.sum(), np.shares_memory(view, arr), df.b.tolist(), f(x), list(gen))")
        assert out.split() == ["19999900000.0", "True", "['v',", "'w',", "'x',", "'y',", "'z']", "46",
                               "[0,", "41,", "82]"], out
    finally:
        k.close()
    entries = os.listdir(project / ".elastic-lite" / "entries")
    assert "mine.json" in entries and len(entries) >= 3
