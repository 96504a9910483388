"""Elastic Lite for JupyterLite, as a Python package: the prebuilt labextension, installed
under share/jupyter/labextensions/elastic-lite-jupyterlite/, where `jupyter lite build` (and
JupyterLab) find it. Nothing here runs in the site; the kernel side is the elastic_lite wheel
the labextension carries in static/pypi/."""

try:
    from ._build_version import VERSION as __version__
except ImportError:  # a checkout, not an installed wheel
    __version__ = "0+unknown"


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "elastic-lite-jupyterlite"}]
