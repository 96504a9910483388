"""Write the offline Pyodide lock file of the JupyterLite site.

Pyodide's npm package ships the interpreter and a pyodide-lock.json that names ~357 packages
whose wheels it does not ship: loading one of them would go to the CDN. The site must never
leave its own origin, so this script writes a lock that lists ONLY the wheels we ship next to
it (the kernel's start-up set, cloudpickle, dill and elastic_lite), each with a fresh sha256,
using the pyodide-lock tool. Pyodide resolves relative file names against the lock's folder.

usage: make_lock.py NPM_LOCK OUT_DIR WHEEL...   (wheels are copied into OUT_DIR)
"""

import json
import shutil
import sys
from pathlib import Path

from pyodide_lock import PyodideLockSpec
from pyodide_lock.utils import add_wheels_to_spec


def main(npm_lock: Path, out_dir: Path, wheels: list[Path]) -> None:
    raw = json.loads(npm_lock.read_text(encoding="utf-8"))
    info = dict(raw["info"])
    # pyodide-lock 0.1.2 requires info.version, which Pyodide 314 no longer writes; Pyodide
    # itself only checks abi_version, so the extra key is harmless.
    info.setdefault("version", json.loads(
        (npm_lock.parent / "package.json").read_text(encoding="utf-8"))["version"])
    empty = PyodideLockSpec(info=info, packages={})

    out_dir.mkdir(parents=True, exist_ok=True)
    local = []
    for whl in wheels:
        dest = out_dir / whl.name
        if not dest.exists() or dest.stat().st_size != whl.stat().st_size:
            shutil.copyfile(whl, dest)
        local.append(dest)
    # every dependency must be among the wheels we ship: a missing one fails here, at build
    # time, instead of as a CDN request in the browser
    spec = add_wheels_to_spec(empty, local, base_path=out_dir)
    spec.to_json(out_dir / "pyodide-lock.json", indent=1)
    print(f"[make_lock] {len(spec.packages)} packages: {', '.join(sorted(spec.packages))}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
