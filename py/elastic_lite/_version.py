"""The package version: the project's one version number, `version` in the repository's
package.json. The wheel build stamps it into `_build_version.py` (py/hatch_build.py); in a
checkout, where that file does not exist, it is read from package.json itself."""

try:
    from ._build_version import VERSION as __version__
except ImportError:
    import json as _json
    import pathlib as _pathlib

    try:
        __version__ = _json.loads((_pathlib.Path(__file__).resolve().parents[2] / "package.json")
                                  .read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):  # copied out of both a wheel and the checkout
        __version__ = "0+unknown"
