"""Hatchling hooks of the elastic_lite package (py/pyproject.toml).

- Metadata: the version is the project's one version number, `version` in the repository's
  package.json; the dependencies are the cloudpickle and dill pins of versions.env.
- Two wheels from one project, chosen by $ELASTIC_LITE_WHEEL at build time:
  - `pyodide`: the pure py3-none-any wheel for Pyodide/JupyterLite (micropip, piplite). It
    carries the C core as the standalone .wasm (`core`) and the browser modules (`modules`,
    the IndexedDB store).
  - `native` (the default: what `pip install` of the sdist or of py/ builds): a platform
    wheel for host CPython carrying the C core as a shared library, loaded through ctypes
    (so one wheel per platform, any CPython >= 3.11: tag py3-none-<platform>). The library is
    `native-core` when the checkout built it (build/native, scripts/build.d/10-core.sh), else
    it is compiled here from the C sources with the system compiler ($CC, else cc). On Linux
    x86_64 the wheel is tagged manylinux_2_17 only when the library is proven to need nothing
    newer (GLIBC symbol versions <= 2.17, only libc/libm/libpthread/libdl), else linux_x86_64.
- The sdist carries what a wheel build needs beyond py/ under `_sdist/` (the C sources and
  headers, CMakeLists.txt naming them, package.json, versions.env), so it builds elsewhere.
Every wheel gets `elastic_lite/_build_version.py` (the version), so an installed wheel knows
it without the repository. A wheel without its core would install and then fail in every
kernel: no core, no wheel.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, ".."))
SDIST_DIR = "_sdist"  # inside the sdist: the repository files a wheel build needs
# Requirements of the kernel package: (distribution, versions.env variable).
PINNED = [("cloudpickle", "CLOUDPICKLE_VERSION"), ("dill", "DILL_VERSION")]
WHEEL_KINDS = ("native", "pyodide")
NATIVE_NAME = "libelastic_lite.so"
# manylinux_2_17 (manylinux2014): what the shared library may need from the system.
MANYLINUX_GLIBC = (2, 17)
MANYLINUX_LIBS = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2"}


def repo_file(rel):
    """`rel` of the repository: in a checkout, beside py/; in an unpacked sdist, its copy."""
    for base in (REPO, os.path.join(HERE, SDIST_DIR)):
        path = os.path.join(base, rel)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{rel} is missing: build from the repository checkout or from the "
                            "sdist (it carries a copy under _sdist/)")


def project_version():
    """`version` of the repository's package.json."""
    with open(repo_file("package.json"), encoding="utf-8") as f:
        return json.load(f)["version"]


def versions_env():
    """versions.env as a dict (plain NAME=value lines; the shell scripts source the same file)."""
    pins = {}
    with open(repo_file("versions.env"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r'^([A-Z0-9_]+)="?([^"#]*?)"?\s*(#.*)?$', line.strip())
            if m:
                pins[m.group(1)] = m.group(2)
    return pins


def core_sources():
    """The C core's sources (repository-relative), as CMakeLists.txt's EL_SOURCES lists them."""
    with open(repo_file("CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"set\(EL_SOURCES\s(.*?)\)", f.read(), re.S)
    if not m:
        raise RuntimeError("CMakeLists.txt has no set(EL_SOURCES ...): cannot list the C core")
    return m.group(1).split()


def sdist_files():
    """{repository path: path inside the sdist} of what a wheel build needs beyond py/."""
    rels = ["package.json", "versions.env", "CMakeLists.txt", *core_sources()]
    rels += [os.path.relpath(h, REPO) for pattern in ("wasm/src/*.h", "wasm/include/*.h")
             for h in sorted(glob.glob(os.path.join(REPO, pattern)))]
    return {os.path.join(REPO, rel): f"{SDIST_DIR}/{rel}" for rel in rels}


def wheel_kind():
    kind = os.environ.get("ELASTIC_LITE_WHEEL", "native")
    if kind not in WHEEL_KINDS:
        raise ValueError(f"ELASTIC_LITE_WHEEL={kind!r}: use one of {', '.join(WHEEL_KINDS)}")
    return kind


def compile_core(out_dir):
    """Compiles the shared library from the C sources with the system compiler; its path."""
    cc = os.environ.get("CC") or "cc"
    out = os.path.join(out_dir, NATIVE_NAME)
    sources = [repo_file(rel) for rel in core_sources()]
    include = os.path.dirname(repo_file("wasm/include/elastic_lite.h"))
    cmd = [*cc.split(), "-std=c11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
           f"-I{include}", f'-DEL_VERSION="{project_version()}"', "-o", out, *sources]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        raise RuntimeError(f"no C compiler ({cc}) to build elastic_lite's C core: install one "
                           "(e.g. gcc or clang) or set CC, then install again") from None
    if done.returncode != 0:
        raise RuntimeError(f"compiling elastic_lite's C core failed ({' '.join(cmd)}):\n"
                           f"{done.stderr[-4000:]}")
    return out


def elf_needs(path):
    """(NEEDED libraries, {GLIBC version tuples}) of a shared library, read with objdump; None
    when it cannot be read (no objdump)."""
    try:
        done = subprocess.run(["objdump", "-p", "-T", path], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    if done.returncode != 0:
        return None
    libs = set(re.findall(r"^\s*NEEDED\s+(\S+)", done.stdout, re.M))
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", done.stdout)}
    return libs, versions


def platform_tag(library):
    """The wheel's platform tag for `library` (see the module docstring)."""
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if plat == "linux_x86_64":
        needs = elf_needs(library)
        if needs and needs[0] <= MANYLINUX_LIBS and all(v <= MANYLINUX_GLIBC for v in needs[1]):
            return "manylinux_2_17_x86_64.manylinux2014_x86_64"
    return plat


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata):
        pins = versions_env()
        metadata["version"] = project_version()
        metadata["dependencies"] = [f"{dist}=={pins[var]}" for dist, var in PINNED]


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        include = build_data["force_include"]
        if self.target_name == "sdist":
            include.update(sdist_files())
            return
        if self.target_name != "wheel":
            return
        self._tmp = tempfile.mkdtemp(prefix="elastic-lite-wheel-")
        if wheel_kind() == "pyodide":
            self._pyodide(include)
        else:
            self._native(build_data, include)
        stamp = os.path.join(self._tmp, "_build_version.py")
        with open(stamp, "w", encoding="utf-8") as f:
            f.write('"""Written by the wheel build (py/hatch_build.py)."""\n\n'
                    f"VERSION = {self.metadata.version!r}\n")
        include[stamp] = "elastic_lite/_build_version.py"

    def _pyodide(self, include):
        core = os.path.normpath(os.path.join(self.root, self.config["core"]))
        if not os.path.isfile(core):
            raise FileNotFoundError(
                f"{core} is missing: the wheel must carry the C core. Build it first "
                "(npm run build, or scripts/build.d/10-core.sh).")
        include[core] = "elastic_lite/elastic_lite.wasm"
        for module in self.config.get("modules", []):
            path = os.path.normpath(os.path.join(self.root, module))
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{path} is missing (a module the wheel carries)")
            include[path] = f"elastic_lite/js/{os.path.basename(path)}"

    def _native(self, build_data, include):
        built = os.path.normpath(os.path.join(self.root, self.config["native-core"]))
        library = built if os.path.isfile(built) else compile_core(self._tmp)
        include[library] = f"elastic_lite/{NATIVE_NAME}"
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{platform_tag(library)}"

    def finalize(self, version, build_data, artifact_path):
        if getattr(self, "_tmp", None):
            shutil.rmtree(self._tmp, ignore_errors=True)
