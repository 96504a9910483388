"""The stores, below the kernel session: they only store (.importlinter). The memory and
IndexedDB stores and what every store shares (stores), the folder store of host
CPython kernels (directory), and the entries' signatures (signing)."""
