"""Write an offline Pyodide distribution: the archive `jupyter lite build --pyodide` takes.

A JupyterLite site loads Pyodide from a CDN unless the build is given a Pyodide distribution to
serve itself (`--pyodide ARCHIVE`, i.e. `PyodideAddon.pyodide_url`). Pyodide's own release
archive has every package it was built with; this script makes a small one from what set-up
fetched (npm's `pyodide` package holds the interpreter but no package wheels; the wheels the
kernel loads at start come from PyPI): the interpreter files, those wheels, and a
`pyodide-lock.json` that lists ONLY them, each with a fresh sha256 (pyodide-lock's
`add_wheels_to_spec`). A dependency missing from the wheels fails here, at build time, rather
than as a CDN request in the browser. The kernel's own wheels (piplite, ipykernel,
pyodide-kernel) and Elastic Lite's come from the extensions' piplite indexes, not from here.

With --snapshot, the distribution also lets the kernels start Python from a memory snapshot
(scripts/lite-snapshot.mjs, which needs the tests' Chromium; without it the archive is made
without one).

usage: make_pyodide.py [--snapshot] NPM_PYODIDE_DIR OUT.tar.bz2 WHEEL...
"""

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from pyodide_lock import PyodideLockSpec
from pyodide_lock.utils import add_wheels_to_spec

# The interpreter: what the kernel's worker loads (pyodide.mjs imports pyodide.asm.mjs, which
# fetches the .wasm and the standard library).
INTERPRETER = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
               "package.json"]


def main(npm_dir: Path, archive: Path, wheels: list[Path], snapshot: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="elastic-lite-pyodide-") as tmp:
        dist = Path(tmp) / "pyodide"  # the archive's top folder, as in Pyodide's releases
        dist.mkdir()
        for name in INTERPRETER:
            shutil.copyfile(npm_dir / name, dist / name)
        local = []
        for whl in wheels:
            shutil.copyfile(whl, dist / whl.name)
            local.append(dist / whl.name)
        raw = json.loads((npm_dir / "pyodide-lock.json").read_text(encoding="utf-8"))
        info = dict(raw["info"])
        # pyodide-lock 0.1.2 requires info.version, which Pyodide 314 no longer writes; Pyodide
        # itself only checks abi_version, so the extra key is harmless.
        info.setdefault("version", json.loads(
            (npm_dir / "package.json").read_text(encoding="utf-8"))["version"])
        spec = add_wheels_to_spec(PyodideLockSpec(info=info, packages={}), local, base_path=dist)
        spec.to_json(dist / "pyodide-lock.json", indent=1)
        if snapshot:  # (it says why when it cannot)
            subprocess.run(["node", str(Path(__file__).resolve().parent.parent / "scripts" / "lite-snapshot.mjs"),
                            str(dist)], check=False)
        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = archive.with_name(archive.name + ".partial")
        with tarfile.open(partial, "w:bz2") as tar:
            tar.add(dist, arcname="pyodide")
        partial.replace(archive)
    print(f"[make_pyodide] {archive.name}: {len(spec.packages)} packages: "
          f"{', '.join(sorted(spec.packages))}")


if __name__ == "__main__":
    args = sys.argv[1:]
    with_snapshot = args[:1] == ["--snapshot"]
    args = args[1:] if with_snapshot else args
    main(Path(args[0]), Path(args[1]), [Path(p) for p in args[2:]], with_snapshot)
