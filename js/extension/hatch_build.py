"""Hatchling hooks of the jupyterlite_elastic_lite wheel (js/extension/pyproject.toml).

- Metadata: the version is the project's one version number, `version` in the repository's
  package.json (the build stamps the same number into this folder's package.json).
- Build: checks that the prebuilt labextension is there, of this version, with the kernel wheel
  of this version and its piplite index in static/pypi/ (a site built from a wheel without them
  would have a toolbar whose every action fails), and stamps the version into
  jupyterlite_elastic_lite/_build_version.py.
"""

import json
import os
import shutil
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
LABEXTENSION = os.path.join(HERE, "jupyterlite_elastic_lite", "labextension")


def project_version():
    with open(os.path.join(REPO, "package.json"), encoding="utf-8") as f:
        return json.load(f)["version"]


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata):
        metadata["version"] = project_version()


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        expected = self.metadata.version
        labext_json = os.path.join(LABEXTENSION, "package.json")
        kernel_wheel = os.path.join(LABEXTENSION, "static", "pypi", f"elastic_lite-{expected}-py3-none-any.whl")
        problems = []
        if not os.path.isfile(labext_json):
            problems.append(f"{LABEXTENSION} is not built")
        else:
            with open(labext_json, encoding="utf-8") as f:
                built = json.load(f)
            if built.get("version") != expected:
                problems.append(f"the labextension is version {built.get('version')}, not {expected}")
        if not os.path.isfile(kernel_wheel):
            problems.append(f"{kernel_wheel} is missing")
        if not os.path.isfile(os.path.join(LABEXTENSION, "static", "pypi", "all.json")):
            problems.append("static/pypi/all.json (the piplite index) is missing")
        if problems:
            raise RuntimeError("cannot build the extension wheel: " + "; ".join(problems) +
                               ". Build it with `npm run build` (scripts/build.d/40-jupyterlite.sh).")
        self._stamp_dir = tempfile.mkdtemp(prefix="elastic-lite-ext-wheel-")
        stamp = os.path.join(self._stamp_dir, "_build_version.py")
        with open(stamp, "w", encoding="utf-8") as f:
            f.write('"""Written by the wheel build (js/extension/hatch_build.py)."""\n\n'
                    f"VERSION = {expected!r}\n")
        build_data["force_include"][stamp] = "jupyterlite_elastic_lite/_build_version.py"

    def finalize(self, version, build_data, artifact_path):
        if getattr(self, "_stamp_dir", None):
            shutil.rmtree(self._stamp_dir, ignore_errors=True)
