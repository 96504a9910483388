"""Build build/wheels/elastic_lite-<version>-py3-none-any.whl and build/wheels/wheels.json.

    python py/build_wheel.py --out build/wheels

The wheel is built from py/ by its PEP 517 backend (hatchling, see py/pyproject.toml) through
pip, offline: `--no-build-isolation` uses the backend installed in this interpreter at set-up.
This script only decides whether the wheel is out of date (skipping pip is what keeps
`npm run build` fast when nothing changed), removes wheels of older versions, and writes
`<out>/wheels.json`, the list of wheels a browser fetches (it cannot list a directory).
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
# Everything the wheel is made of: the package, its build configuration, the version and pins,
# and the built files the build hook adds (its `core` and `modules`).
INPUTS = ["py/elastic_lite", "py/pyproject.toml", "py/hatch_build.py", "package.json",
          "versions.env", "build/wasm/elastic_lite.wasm", "js/store/indexeddb.mjs"]


def newest_input():
    newest = 0.0
    for rel in INPUTS:
        path = os.path.join(REPO, rel)
        paths = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, fs in os.walk(path) if "__pycache__" not in d for f in fs]
        newest = max([newest] + [os.path.getmtime(p) for p in paths])
    return newest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    wheel = os.path.join(out, f"{NAME}-{project_version()}-py3-none-any.whl")
    if not os.path.exists(wheel) or os.path.getmtime(wheel) < newest_input():
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                        "--no-index", "--quiet", "--wheel-dir", out, HERE], check=True)
        os.utime(wheel)  # the backend writes fixed zip timestamps; mtime says when it was built
        print(f"build_wheel: wrote {wheel}", file=sys.stderr)
    for old in glob.glob(os.path.join(out, f"{NAME}-*.whl")):
        if old != wheel:
            os.remove(old)
    write_index(out, os.path.basename(wheel))


def write_index(out, ours):
    wheels = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "*.whl")))
    text = json.dumps({"elastic_lite": ours, "wheels": wheels}, indent=2) + "\n"
    path = os.path.join(out, "wheels.json")
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
