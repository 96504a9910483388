"""Which calls have side effects, which methods leave their object unchanged: the tables
the cell analyzer (`replay/cell_ast.py`) applies to each call, by the call's qualified name
(`numpy.random.rand` for `np.random.rand(...)`, aliases resolved by the caller).

The tables err on the side of flagging: a flagged cell that did nothing harmful is only
reported (or, for the UNSAFE kinds, not replayed without permission); a missed effect would be
repeated silently on restore.
"""

import ast

# Kinds of side effect. A replay re-runs cells with the SAFE kinds (their output is captured
# and reported); cells with an UNSAFE kind are not re-run unless the person allows it.
SAFE_EFFECTS = ("prints", "displays", "draws", "nondeterministic", "reads-files", "javascript")
UNSAFE_EFFECTS = ("writes-files", "network", "runs-command", "input", "magic", "elastic-lite")
EFFECT_WORDS = {
    "prints": "prints", "displays": "displays output", "draws": "draws a plot",
    "nondeterministic": "uses randomness or the clock (values may differ on replay)",
    "reads-files": "reads files", "javascript": "calls JavaScript",
    "writes-files": "writes files", "network": "uses the network",
    "runs-command": "runs a command", "input": "asks for input", "magic": "runs an IPython magic",
    "elastic-lite": "takes or restores a checkpoint",
}

# Methods that do not change their receiver, for the common types of a notebook (builtins,
# numpy, pandas). Any other method call counts as a possible mutation of the receiver.
PURE_METHODS = frozenset("""
copy get keys values items count index startswith endswith find rfind format format_map join
split rsplit splitlines strip lstrip rstrip lower upper title capitalize casefold encode decode
isdigit isalpha isalnum isspace islower isupper issubset issuperset isdisjoint union intersection
difference symmetric_difference most_common total bit_length conjugate hex is_integer
as_integer_ratio head tail describe sum mean median mode min max std var prod cumsum cumprod
any all round abs astype tolist to_list to_dict to_numpy to_frame to_string to_records
reshape ravel flatten transpose dot matmul argmax argmin argsort nonzero unique nunique
value_counts groupby agg aggregate query filter isna isnull notna notnull isin between
idxmax idxmin corr cov quantile rank diff pct_change shift rolling expanding resample pivot
pivot_table melt merge join_asof explode nlargest nsmallest sample select_dtypes memory_usage
equals duplicated drop_duplicates drop dropna fillna sort_values sort_index rename reindex
reset_index set_index replace clip where mask apply map applymap transform assign pipe
iloc loc at iat __len__ __contains__ __repr__ __str__ __format__ __getitem__ __eq__ __hash__
""".split())
INPLACE_ONLY_PURE = frozenset(  # pure unless called with inplace=True
    "drop dropna fillna sort_values sort_index rename reindex reset_index set_index replace "
    "clip where mask drop_duplicates".split())

# Calls (fully qualified after resolving aliases) that change their first argument.
MUTATORS = frozenset("""
builtins.next builtins.setattr builtins.delattr random.shuffle numpy.random.shuffle
heapq.heappush heapq.heappop heapq.heapify heapq.heappushpop heapq.heapreplace
bisect.insort bisect.insort_left bisect.insort_right
""".split())

_OPEN_LIKE = {  # qualified name -> index of the mode argument
    "builtins.open": 1, "io.open": 1, "codecs.open": 1, "gzip.open": 1, "bz2.open": 1,
    "lzma.open": 1, "tarfile.open": 1, "zipfile.ZipFile": 1,
}
_WRITE_FUNCS = frozenset("""
os.open os.remove os.unlink os.rename os.renames os.replace os.mkdir os.makedirs os.rmdir
os.removedirs
os.truncate os.chmod os.chown os.symlink os.link os.utime os.mkfifo
numpy.save numpy.savez numpy.savez_compressed numpy.savetxt json.dump pickle.dump marshal.dump
dill.dump cloudpickle.dump shelve.open sqlite3.connect
""".split())
_WRITE_METHODS = frozenset("""
write writelines write_text write_bytes touch unlink mkdir rmdir savefig to_csv to_parquet
to_excel to_pickle to_feather to_hdf to_sql to_stata tofile dump save
""".split())
_DRAW_METHODS = frozenset("plot show imshow hist scatter bar barh pie boxplot violinplot".split())
_NETWORK_PREFIXES = ("socket.", "urllib.", "http.client.", "requests.", "httpx.", "aiohttp.",
                     "pyodide.http.", "ftplib.", "smtplib.", "webbrowser.")
_NETWORK_FUNCS = frozenset("""
js.fetch js.XMLHttpRequest js.WebSocket js.EventSource micropip.install piplite.install
pyodide.http.pyfetch pyodide.http.open_url builtins.pyfetch builtins.open_url
""".split())
_COMMAND_PREFIXES = ("subprocess.", "os.exec", "os.spawn", "os.posix_spawn")
_COMMAND_FUNCS = frozenset("os.system os.popen os.startfile pty.spawn".split())
_RANDOM_PREFIXES = ("random.", "numpy.random.", "secrets.")
_SEEDS = frozenset("random.seed numpy.random.seed torch.manual_seed".split())
_SEEDABLE = frozenset(  # nondeterministic only when called without a seed argument
    "random.Random numpy.random.default_rng numpy.random.RandomState numpy.random.Generator "
    "numpy.random.PCG64".split())
_CLOCK_FUNCS = frozenset("""
time.time time.time_ns time.perf_counter time.perf_counter_ns time.monotonic
time.monotonic_ns time.process_time datetime.datetime.now datetime.datetime.today
datetime.datetime.utcnow datetime.date.today uuid.uuid1 uuid.uuid4 os.urandom os.getrandom
""".split())
_PRINT_FUNCS = frozenset("builtins.print pprint.pprint pprint.pp sys.stdout.write "
                         "sys.stderr.write sys.stdout.writelines sys.stderr.writelines".split())
_DISPLAY_PREFIXES = ("IPython.display.", "IPython.core.display.")
_ELASTIC_LITE = ("elastic_lite.",)
_OPAQUE_FUNCS = {"builtins.exec": "exec()", "builtins.eval": "eval()",
                 "builtins.globals": "globals()", "builtins.locals": "locals()"}
# Magics whose replay is harmless; `time`/`timeit`/`capture` also wrap code we analyze.
HARMLESS_MAGICS = frozenset("time timeit capture matplotlib precision who whos config "
                             "load_ext".split())
CODE_MAGICS = frozenset("time timeit capture prun".split())



def mode_writes(node, index):
    """True if the open()-like call `node` may open for writing (mode at args[index] or
    mode=): a literal mode with w/a/x/+, or a mode that is not a literal."""
    mode = node.args[index] if len(node.args) > index else None
    for k in node.keywords:
        if k.arg == "mode":
            mode = k.value
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True  # not a literal: it might write


def classify_call(qual, node):
    """What calling `qual` does: an effect kind; "random" (nondeterministic unless the same
    cell seeds); "seed" (it seeds a generator); "opaque:<call>" (the names it reads cannot
    be known); or None."""
    if qual in _OPEN_LIKE:
        return "writes-files" if mode_writes(node, _OPEN_LIKE[qual]) else "reads-files"
    if qual in _WRITE_FUNCS or qual.startswith("shutil."):
        if qual == "sqlite3.connect" and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value in (":memory:", ""):
            return None
        return "writes-files"
    if qual in _PRINT_FUNCS:
        return "prints"
    if qual == "builtins.display" or qual.startswith(_DISPLAY_PREFIXES):
        return "displays"
    if qual.startswith(("matplotlib.pyplot.", "pylab.")):
        return "draws"
    if qual in _NETWORK_FUNCS or qual.startswith(_NETWORK_PREFIXES):
        return "network"
    if qual in _COMMAND_FUNCS or qual.startswith(_COMMAND_PREFIXES):
        return "runs-command"
    if qual in ("builtins.input", "getpass.getpass"):
        return "input"
    if qual in _OPAQUE_FUNCS:
        return "opaque:" + _OPAQUE_FUNCS[qual]
    if qual == "builtins.vars" and not node.args:
        return "opaque:vars()"
    if qual.startswith(_ELASTIC_LITE):
        return "elastic-lite"
    if qual in _SEEDS:
        return "seed"
    if qual in _SEEDABLE:
        return None if node.args or node.keywords else "nondeterministic"
    if qual.startswith(_RANDOM_PREFIXES):
        return "random"
    if qual in _CLOCK_FUNCS:
        return "nondeterministic"
    if qual.startswith("js."):
        return "javascript"
    return None


def classify_method(method, node, receiver_qual):
    """The effect of calling `method` on an object (not a module): `out.write(...)`,
    `df.to_csv(...)`, `ax.plot(...)`; receiver_qual: the receiver's qualified name if known."""
    if method in ("write", "writelines") and receiver_qual in ("sys.stdout", "sys.stderr"):
        return "prints"
    if method in _WRITE_METHODS:
        return None if method == "dump" and not node.args else "writes-files"
    if method in _DRAW_METHODS:
        return "draws"
    if method == "open" and mode_writes(node, 0):
        return "writes-files"
    return None
