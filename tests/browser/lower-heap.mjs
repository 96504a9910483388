// For the browser tests of the checkpoint's heap warning (jupyterlite-folder, demo-quota): a
// cell that lowers the heap limit elastic_lite judges a restore against to 300 MiB in its
// kernel (a fresh kernel's own 256 MiB plus the margin are then over it, so any state warns).
// The module is found by what it holds, wherever the package keeps it. One line: it is typed
// into a JupyterLab cell.
export const LOWER_HEAP = 'import sys as _s; [setattr(_m, "HEAP_LIMIT", 300 << 20) for _m in list(_s.modules.values()) ' +
  'if getattr(_m, "__name__", "").startswith("elastic_lite") and hasattr(_m, "HEAP_LIMIT") and hasattr(_m, "restore_room")]; ' +
  'print("heap lowered")';
