"""Build the kernel package three ways from py/ (scripts/build.d/20-wheel.sh):

    python py/build_wheel.py --out build/wheels --native-out build/native-wheel

- <out>/elastic_lite-<version>-py3-none-any.whl, the Pyodide wheel (the .wasm inside), and
  <out>/wheels.json, the list of wheels a browser fetches (it cannot list a directory);
- <native-out>/elastic_lite-<version>-py3-none-<platform>.whl, the host CPython wheel (the
  shared library build/native/libelastic_lite.so inside), and
  <native-out>/elastic_lite-<version>.tar.gz, the sdist (compiles the core where installed).
The native wheel stays out of <out>: a browser installs every wheel wheels.json names.

Each is built by the PEP 517 backend (hatchling, see py/pyproject.toml and py/hatch_build.py),
offline: the wheels through pip with `--no-build-isolation` (the backend installed in this
interpreter at set-up), the sdist by calling the backend. This script only decides what is out
of date (skipping is what keeps `npm run build` fast when nothing changed) and removes files of
older versions.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from hatch_build import project_version  # noqa: E402  (the same version the backend stamps)

NAME = "elastic_lite"
# Everything a package is made of: the package, its build configuration, the version and pins,
# and the built files the build hook adds.
COMMON = ["py/elastic_lite", "py/pyproject.toml", "py/hatch_build.py", "package.json", "versions.env"]
INPUTS = {
    "pyodide": COMMON + ["build/wasm/elastic_lite.wasm", "js/store/indexeddb.mjs"],
    "native": COMMON + ["build/native/libelastic_lite.so"],
    "sdist": COMMON + ["CMakeLists.txt", "wasm/src", "wasm/include", "py/README.md"],
}


def newest_input(kind):
    newest = 0.0
    for rel in INPUTS[kind]:
        path = os.path.join(REPO, rel)
        paths = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, fs in os.walk(path) if "__pycache__" not in d for f in fs]
        newest = max([newest] + [os.path.getmtime(p) for p in paths])
    return newest


def out_of_date(path, kind):
    return path is None or os.path.getmtime(path) < newest_input(kind)


def remove_others(pattern, keep):
    for old in glob.glob(pattern):
        if old != keep:
            os.remove(old)


def build_wheel(out, kind):
    """The wheel of `kind` in `out` (rebuilt when out of date); its path."""
    os.makedirs(out, exist_ok=True)
    version = project_version()
    pattern = os.path.join(out, f"{NAME}-{version}-py3-none-*.whl")
    if kind == "pyodide":
        pattern = os.path.join(out, f"{NAME}-{version}-py3-none-any.whl")
    found = glob.glob(pattern)
    wheel = found[0] if len(found) == 1 else None
    if out_of_date(wheel, kind):
        for old in found:
            os.remove(old)
        env = {**os.environ, "ELASTIC_LITE_WHEEL": kind}
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                        "--no-index", "--quiet", "--wheel-dir", out, HERE], check=True, env=env)
        (wheel,) = glob.glob(pattern)
        os.utime(wheel)  # the backend writes fixed zip timestamps; mtime says when it was built
        print(f"build_wheel: wrote {wheel}", file=sys.stderr)
    remove_others(os.path.join(out, f"{NAME}-*.whl"), wheel)
    return wheel


def build_sdist(out):
    sdist = os.path.join(out, f"{NAME}-{project_version()}.tar.gz")
    if out_of_date(sdist if os.path.exists(sdist) else None, "sdist"):
        code = "import sys; from hatchling.build import build_sdist; build_sdist(sys.argv[1])"
        subprocess.run([sys.executable, "-c", code, os.path.abspath(out)], check=True, cwd=HERE)
        print(f"build_wheel: wrote {sdist}", file=sys.stderr)
    remove_others(os.path.join(out, f"{NAME}-*.tar.gz"), sdist)
    return sdist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="folder of the Pyodide wheel (and wheels.json)")
    ap.add_argument("--native-out", help="folder of the host CPython wheel and the sdist")
    args = ap.parse_args()
    wheel = build_wheel(args.out, "pyodide")
    write_index(args.out, os.path.basename(wheel))
    if args.native_out:
        build_wheel(args.native_out, "native")
        build_sdist(args.native_out)


def write_index(out, ours):
    wheels = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "*.whl")))
    text = json.dumps({"elastic_lite": ours, "wheels": wheels}, indent=2) + "\n"
    path = os.path.join(out, "wheels.json")
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
