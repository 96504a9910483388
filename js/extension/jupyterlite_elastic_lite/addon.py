"""A `jupyter lite build` addon (entry point `jupyterlite.addon.v0`, installed with this
package): every Pyodide kernel of the site loads elastic_lite, cloudpickle and dill while
Pyodide itself starts, before the kernel reports ready, so that the first cell of any notebook
(`%load_ext elastic_lite`, typed and run at once) and the toolbar's first action find the
package. Nothing is fetched from elsewhere: the wheels are the ones this extension carries in
its labextension's `static/pypi/` folder, which the build copies into the site.

How: the kernel passes `loadPyodideOptions` from the site's `jupyter-lite.json`
(`litePluginSettings["@jupyterlite/pyodide-kernel-extension:kernel"]`) to `loadPyodide`, whose
`packages` option takes wheel URLs as well as names and installs them before the interpreter
is handed to the kernel. The URLs are relative: a wheel URL is fetched by the kernel's web
worker, so it is resolved against the worker script's folder (found in the built site), which
keeps the site servable under any base path. Entries the site (or another addon) already put
in `packages` are kept; ours are replaced on every build, so a rebuild never lists a wheel
twice.
"""

import json
import os
from pathlib import Path

from jupyterlite_core.addons.base import BaseAddon
from jupyterlite_core.constants import JSON_FMT, JUPYTER_CONFIG_DATA, JUPYTERLITE_JSON, UTF8

KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
LABEXTENSION = "elastic-lite-jupyterlite"
# the wheels preloaded, in install order (elastic_lite requires the other two)
PRELOAD = ("cloudpickle", "dill", "elastic_lite")
# where jupyterlite-pyodide-kernel 0.8 keeps its web workers (a fallback: the build looks)
KERNEL_STATIC = ("extensions", "@jupyterlite", "pyodide-kernel-extension", "static")


def _wheel_name(file_name):
    """The distribution name of a wheel file name (`dill-0.4.1-py3-none-any.whl` -> dill)."""
    return file_name.split("-", 1)[0].lower()


def preload_urls(output_dir):
    """The worker-relative URLs of the wheels to preload, or [] when the site has no copy of
    this extension's wheels (the labextension is disabled or was not copied)."""
    out = Path(output_dir)
    pypi = out.joinpath("extensions", LABEXTENSION, "static", "pypi")
    found = {_wheel_name(p.name): p for p in sorted(pypi.glob("*.whl"))} if pypi.is_dir() else {}
    if not all(name in found for name in PRELOAD):
        return []
    workers = sorted(out.joinpath("extensions").glob("**/comlink.worker*.js"))
    worker_dir = workers[0].parent if workers else out.joinpath(*KERNEL_STATIC)
    return [Path(os.path.relpath(found[name], worker_dir)).as_posix() for name in PRELOAD]


def is_ours(entry):
    """Whether a `packages` entry is one of this extension's wheels (from an earlier build)."""
    return isinstance(entry, str) and f"/{LABEXTENSION}/static/pypi/" in f"/{entry}"


def patch_config(config_path, urls):
    """Puts `urls` into the kernel's loadPyodideOptions.packages of `config_path`."""
    config = json.loads(config_path.read_text(**UTF8))
    data = config.setdefault(JUPYTER_CONFIG_DATA, {})
    kernel = data.setdefault("litePluginSettings", {}).setdefault(KERNEL_PLUGIN, {})
    options = kernel.setdefault("loadPyodideOptions", {})
    packages = [p for p in options.get("packages", []) if not is_ours(p)]
    options["packages"] = packages + list(urls)
    config_path.write_text(json.dumps(config, **JSON_FMT), **UTF8)


class ElasticLitePreloadAddon(BaseAddon):
    """Preloads elastic_lite (and cloudpickle, dill) in every Pyodide kernel of the site."""

    __all__ = ["post_build"]

    def post_build(self, manager):
        def patch():
            # in the action: the labextensions are in the site by now (the build phase)
            config_path = manager.output_dir / JUPYTERLITE_JSON
            urls = preload_urls(manager.output_dir)
            if not urls:
                self.log.warning("[elastic-lite] no %s wheels in the site: the kernel will not "
                                 "preload elastic_lite", LABEXTENSION)
                return True
            patch_config(config_path, urls)
            self.log.info("[elastic-lite] the Pyodide kernel preloads %s", ", ".join(PRELOAD))
            return True

        yield self.task(
            name="preload",
            doc="make every Pyodide kernel load elastic_lite, cloudpickle and dill at start",
            actions=[patch],
            # every build: the other addons rewrite jupyter-lite.json before it
            uptodate=[False],
        )
