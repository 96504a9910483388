"""IPython adapters over elastic_lite.host: the magics (%checkpoint, %restore, ...) and,
in a desktop Jupyter kernel, the default folder store and the automatic point after
each cell (desktop). Imported only by `%load_ext elastic_lite`."""
