"""Hatchling hooks of the elastic_lite wheel (py/pyproject.toml).

- Metadata: the version is the project's one version number, `version` in the repository's
  package.json; the dependencies are the cloudpickle and dill pins of versions.env.
- Build: adds the C core (`core`, the standalone .wasm) and the browser modules (`modules`,
  the IndexedDB store) to the package, and stamps the version into
  `elastic_lite/_build_version.py`, so an installed wheel knows it without the repository.
  A wheel without the core would install and then fail in every kernel: no core, no wheel.
"""

import json
import os
import re
import shutil
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# Requirements of the kernel package: (distribution, versions.env variable).
PINNED = [("cloudpickle", "CLOUDPICKLE_VERSION"), ("dill", "DILL_VERSION")]


def project_version():
    """`version` of the repository's package.json."""
    with open(os.path.join(REPO, "package.json"), encoding="utf-8") as f:
        return json.load(f)["version"]


def versions_env():
    """versions.env as a dict (plain NAME=value lines; the shell scripts source the same file)."""
    pins = {}
    with open(os.path.join(REPO, "versions.env"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r'^([A-Z0-9_]+)="?([^"#]*?)"?\s*(#.*)?$', line.strip())
            if m:
                pins[m.group(1)] = m.group(2)
    return pins


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata):
        pins = versions_env()
        metadata["version"] = project_version()
        metadata["dependencies"] = [f"{dist}=={pins[var]}" for dist, var in PINNED]


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        core = os.path.normpath(os.path.join(self.root, self.config["core"]))
        if not os.path.isfile(core):
            raise FileNotFoundError(
                f"{core} is missing: the wheel must carry the C core. Build it first "
                "(npm run build, or scripts/build.d/10-core.sh).")
        include = build_data["force_include"]
        include[core] = "elastic_lite/elastic_lite.wasm"
        for module in self.config.get("modules", []):
            path = os.path.normpath(os.path.join(self.root, module))
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{path} is missing (a module the wheel carries)")
            include[path] = f"elastic_lite/js/{os.path.basename(path)}"
        self._stamp_dir = tempfile.mkdtemp(prefix="elastic-lite-wheel-")
        stamp = os.path.join(self._stamp_dir, "_build_version.py")
        with open(stamp, "w", encoding="utf-8") as f:
            f.write('"""Written by the wheel build (py/hatch_build.py)."""\n\n'
                    f"VERSION = {self.metadata.version!r}\n")
        include[stamp] = "elastic_lite/_build_version.py"

    def finalize(self, version, build_data, artifact_path):
        if getattr(self, "_stamp_dir", None):
            shutil.rmtree(self._stamp_dir, ignore_errors=True)
