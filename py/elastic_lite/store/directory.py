"""DirectoryStore: checkpoints as files in one directory, for host CPython kernels.

The same on-disk layout, locking, signing and verification as the Node store
(js/store/directory.mjs, documented in docs/STORE-LAYOUT.md): the `elastic-lite` CLI reads
what a CPython kernel wrote and the other way round.

    <dir>/entries/<stem>.json   one checkpoint: {format, version, name, size, head, records:
                                [{key, length}], tail, meta, sig} (head and tail base64)
    <dir>/records/<key>         one record's bytes, named by its key (store.stores.record_key);
                                <key>.damaged marks one whose bytes were found changed
    <dir>/locks/<stem>.lock     the writer lock of one checkpoint name ({pid, host, token, sinceMs})
    <dir>/store.lock            held for the short steps that change what records are used
    <dir>/counter.json          the signed counter (generations: rollback, concurrent writers)
    <dir>/retention.json        retention settings: {default, notebooks: {path: policy}}
    <dir>/signing-key           the store's HMAC key (0600), or $ELASTIC_LITE_KEY_FILE
    <dir>/<stem>.elc (+ .meta.json)  a checkpoint file of an earlier version: read, listed, deleted

<stem> is the name percent-encoded (A-Z a-z 0-9 _ - and non-leading dots stay). Every file is
written under a temporary name (.tmp-<pid>-<hex>, created O_EXCL|O_NOFOLLOW, mode 0600),
fsynced, renamed, and its folder fsynced; folders are 0700. No link is ever followed: files are
opened O_NOFOLLOW|O_NONBLOCK and checked through the descriptor; a link where the store's own
file or folder belongs is a StoreError 'unsafe'. Every record read is checked against its key
before it is handed out. A record's mtime is its pin (now: written or found by a writer; 0:
committed), so the sweep never frees a record an uncommitted writer still needs.

The methods are coroutines that never suspend (plain blocking file I/O; a writer waiting for a
lock held by another process sleeps), so the magics can drive them without an event loop.
"""

import base64
import errno
import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import stat
import time

from . import signing as _signing
from .._words import quoted
from .stores import (DEFAULT_LOCK_TIMEOUT, DEFAULT_ORPHAN_GRACE, StoreError, _check_entry,
                     _check_key, _pieces, _plain_meta, check_name, check_retention,
                     expired_by_retention, record_key, split_container)

ENTRY_FORMAT = "elastic-lite checkpoint entry"
ENTRY_VERSION = 2
KEY_FORMAT = "elastic-lite signing key"
COUNTER_FORMAT = "elastic-lite store counter"
COUNTER_VERSION = 1
SIGNATURE_VERSION = 1
TMP_PREFIX = ".tmp-"
SUBDIRS = ("entries", "records", "locks")
MAX_STEM = 200
CHUNK = 4 * 1024 * 1024
_MISSING = "is missing"  # _read_record's word for a record file that is not there
HOST = socket.gethostname()
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_READ_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW
_POSIX = os.name == "posix"  # modes, owners and links as the layout means them
_RECORD_MAGIC = 0x43524C45  # "ELRC" little-endian (wasm/FORMAT.md, Record)
_KEY_RE = re.compile(r"^[0-9a-f]{64}$")


# ---- names -------------------------------------------------------------------------------

def name_to_stem(name):
    """The checkpoint name percent-encoded into a file-name stem (js: nameToStem)."""
    check_name(name)
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        raise StoreError(f"invalid checkpoint name {quoted(name)}: it is not valid Unicode text") from None
    stem = ""
    for byte in raw:
        ch = chr(byte)
        keep = (ch.isascii() and (ch.isalnum() or ch in "_-")) or (ch == "." and stem)
        stem += ch if keep else f"%{byte:02X}"
    if len(stem) > MAX_STEM:
        raise StoreError(f"invalid checkpoint name {quoted(name[:40])}...: too long for a file name "
                         f"({len(stem)} characters once encoded, at most {MAX_STEM}); choose a shorter name")
    return stem


def stem_to_name(stem):
    """The inverse of name_to_stem, or None for a file name this store did not write."""
    if not re.fullmatch(r"(?:[A-Za-z0-9_-]|%[0-9A-F]{2})(?:[A-Za-z0-9_.-]|%[0-9A-F]{2})*", stem):
        return None
    try:
        name = re.sub(rb"%([0-9A-F]{2})", lambda m: bytes([int(m.group(1), 16)]),
                      stem.encode("ascii")).decode("utf-8")
        return name if name_to_stem(name) == stem else None
    except (UnicodeDecodeError, StoreError):
        return None


# ---- JSON as JS writes and signs it (the rule lives in _signing) --------------------------

def canonical_json(value):
    """_signing.canonical_json, with the store's error for metadata that is not JSON data."""
    try:
        return _signing.canonical_json(value)
    except ValueError as err:
        raise StoreError(str(err)) from None


def signed_bytes(name, head, records, tail, meta):
    """_signing.signed_bytes (js signedBytes), with the store's error for non-JSON metadata."""
    try:
        return _signing.signed_bytes(name, head, records, tail, meta)
    except ValueError as err:
        raise StoreError(str(err)) from None


def _utf8(text):
    return text.encode("utf-8", "surrogatepass")


def _mac(key, data):
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def _counter_bytes(doc):
    body = {"keyId": doc["keyId"], "generation": doc["generation"], "names": doc["names"],
            "previousKeyIds": doc.get("previousKeyIds") or []}
    return _utf8(f"{COUNTER_FORMAT} {COUNTER_VERSION}\n{canonical_json(body)}")


def generation_of(meta):
    g = (meta or {}).get("generation")
    return g if isinstance(g, int) and not isinstance(g, bool) and 0 < g < 2 ** 53 else 0


def neutralize_record(buf):
    """js neutralizeRecord, in place on a bytearray: a format-2 record keeps its header (its
    names) and everything after becomes zeros with its stream checksum certain to fail."""
    n = len(buf)
    mv = memoryview(buf)
    magic = int.from_bytes(mv[0:4], "little") if n >= 44 else 0
    header = int.from_bytes(mv[4:8], "little") if magic == _RECORD_MAGIC else 0
    if header < 44 or header > n:
        buf[:] = bytes(n)
        return buf
    buf[header:] = bytes(n - header)
    stream = int.from_bytes(mv[16:24], "little")
    if 0 < stream <= n - header:
        import zlib
        if zlib.crc32(mv[header:header + stream]) == int.from_bytes(mv[32:36], "little"):
            buf[header] = 1
    else:
        buf[header - 1] ^= 0xFF
    return buf


# ---- files that never follow a link ------------------------------------------------------

def _unsafe(path, what, kind="a symbolic link"):
    return StoreError(f"{what} {path} is {kind}, not a file of the store: the store never follows "
                      "links or reads other kinds of files (someone who can write its folder may "
                      f"have put it there). Nothing was read or written through it. Check who can "
                      f"write the folder, remove {path}, and try again.", "unsafe")


def _open_regular(path, what):
    """A descriptor of regular file `path` opened without following a link, and its stat;
    None when absent."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):
            raise _unsafe(path, what) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _unsafe(path, what, "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file")
    if _POSIX:
        os.set_blocking(fd, True)
    return fd, st


def _read_all(fd, size=None):
    chunks = []
    while True:
        got = os.read(fd, CHUNK)
        if not got:
            return b"".join(chunks)
        chunks.append(got)


def _read_regular(path, what):
    opened = _open_regular(path, what)
    if opened is None:
        return None
    try:
        return _read_all(opened[0])
    finally:
        os.close(opened[0])


def _create_exclusive(path):
    fd = os.open(path, _CREATE_FLAGS, 0o600)
    try:
        if _POSIX:
            os.fchmod(fd, 0o600)  # whatever the umask
    except OSError:
        os.close(fd)
        os.unlink(path)
        raise
    return fd


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _remove_own(path):
    st = _lstat(path)
    if st and (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        _rm(path)


def _rm(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _ensure_folder(path, what, parents=False):
    made = False
    try:
        if parents:
            made = not os.path.isdir(path)
            os.makedirs(path, mode=0o700, exist_ok=True)
        else:
            os.mkdir(path, 0o700)
            made = True
    except FileExistsError:
        made = False
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        if parents:
            return False  # the store's own folder may be reached by a link its user made
        raise _unsafe(path, what)
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{what} {path} is not a folder. Remove it (the store makes it again), or "
                         "choose another folder.", "unsafe")
    if _POSIX and (made or (not parents and st.st_mode & 0o022 and st.st_uid == os.getuid())):
        os.chmod(path, 0o700)
    return made


def _check_folder(path, what):
    st = _lstat(path)
    if st is None:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise _unsafe(path, what)
    if not stat.S_ISDIR(st.st_mode):
        raise _unsafe(path, what, "not a folder")
    return True


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except PermissionError:
        return True
    except (ProcessLookupError, OverflowError, ValueError):
        return False


# ---- lock files (js/store/lockfile.mjs) --------------------------------------------------

def _read_holder(path):
    text = _read_regular(path, "Lock file")
    if text is None:
        return None
    try:
        h = json.loads(text)
        if isinstance(h, dict) and isinstance(h.get("pid"), int) and isinstance(h.get("token"), str) \
                and isinstance(h.get("host"), str):
            return h
    except ValueError:
        pass
    return {"pid": None, "host": None, "token": None, "sinceMs": None, "unreadable": True}


def _create_whole(path, content):
    tmp = os.path.join(os.path.dirname(path), f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}-lock")
    fd = _create_exclusive(tmp)
    try:
        os.write(fd, content)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        _rm(tmp)


def _break_stale(path, holder):
    if not holder or holder.get("unreadable") or holder["host"] != HOST or _pid_alive(holder["pid"]):
        return False
    breaker = _try_acquire(f"{path}.break-{holder['token']}")
    if breaker is None:
        return False
    try:
        now = _read_holder(path)
        if now and now.get("token") == holder["token"]:
            _rm(path)
        return True
    finally:
        breaker.release_now()


def _try_acquire(path):
    holder = {"pid": os.getpid(), "host": HOST, "token": f"{os.getpid()}-{secrets.token_hex(8)}",
              "sinceMs": int(time.time() * 1000)}
    while True:
        if _create_whole(path, json.dumps(holder).encode()):
            return _LockFile(path, holder)
        other = _read_holder(path)
        if other is None:
            continue
        if not _break_stale(path, other):
            return None


class _LockFile:
    def __init__(self, path, holder):
        self.file, self.holder, self._released = path, holder, False

    def release_now(self):
        if self._released:
            return
        self._released = True
        now = _read_holder(self.file)
        if now and now.get("token") == self.holder["token"]:
            _rm(self.file)

    async def release(self):
        self.release_now()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release_now()


def _acquire_lock_file(path, timeout, what):
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        lock = _try_acquire(path)
        if lock is not None:
            return lock
        if time.monotonic() >= deadline:
            h = _read_holder(path)
            who = "another process" if not h else "an unknown holder" if h.get("unreadable") else \
                f"process {h['pid']}" + (f" on {h['host']}" if h["host"] != HOST else "")
            raise StoreError(f"{what} is being saved by {who}; waited {timeout:g} s for it to "
                             "finish. Try again in a moment. If no elastic-lite process is "
                             f"running, remove the lock file {path}.", "busy")
        time.sleep(delay)  # another process holds it: nothing in this one can release it
        delay = min(delay * 2, 0.05)


# ---- the store ---------------------------------------------------------------------------

class DirectoryStore:
    """Checkpoints in directory `path` (made on first write), shared with the Node CLI.

    retention / keep_last, lock_timeout and orphan_grace (seconds) as for MemoryStore;
    key_file: the signing key (default $ELASTIC_LITE_KEY_FILE, else <path>/signing-key; a
    relative one is relative to the working directory, never to the store)."""

    live_pieces = False
    never_suspends = True  # the magics drive its coroutines at once (ipython.magics._run)

    def __init__(self, path, retention=None, keep_last=None, lock_timeout=DEFAULT_LOCK_TIMEOUT,
                 orphan_grace=DEFAULT_ORPHAN_GRACE, key_file=None):
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise StoreError("DirectoryStore needs a directory path")
        if retention is not None and keep_last is not None:
            raise StoreError("pass either retention or keep_last, not both")
        self.dir = os.path.abspath(os.path.expanduser(str(path)))
        self.retention = check_retention({"keepLast": keep_last} if keep_last is not None else retention)
        self.lock_timeout = lock_timeout
        self.orphan_grace = orphan_grace
        given = key_file or os.environ.get("ELASTIC_LITE_KEY_FILE")
        self.key_file = os.path.abspath(given) if given else os.path.join(self.dir, "signing-key")
        self._swept = False
        self._signing = None  # (key bytes, keyId)
        self._expected = {}

    def __repr__(self):
        return f"DirectoryStore({self.dir!r})"

    # -- paths and files --

    def _path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _entry_file(self, name):
        return self._path("entries", f"{name_to_stem(name)}.json")

    def _record_file(self, key):
        return self._path("records", key)

    def _readdir(self, sub=""):
        try:
            if sub:
                _check_folder(self._path(sub), "The store folder")
            return os.listdir(self._path(sub))
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            raise StoreError(f"checkpoint store {self.dir} is not a directory; choose a directory "
                             "(%elastic_lite store PATH or ELASTIC_LITE_STORE)") from None

    def _mkdirs(self):
        _ensure_folder(self.dir, "The checkpoint store", parents=True)
        for sub in SUBDIRS:
            _ensure_folder(self._path(sub), "The store folder")

    def _sync_dir(self, sub):
        try:
            fd = os.open(self._path(sub), os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _write_file(self, sub, target, pieces):
        """Writes `pieces` to a fresh fsynced temporary file in `sub`, renames it to `target`."""
        tmp = self._path(sub, f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}")
        fd = _create_exclusive(tmp)
        try:
            for p in pieces:
                mv = memoryview(p).cast("B")
                at = 0
                while at < mv.nbytes:
                    at += os.write(fd, mv[at:at + CHUNK])
            os.fsync(fd)
            os.close(fd)
            fd = None
            os.rename(tmp, target)
        except BaseException:
            if fd is not None:
                os.close(fd)
            _rm(tmp)
            raise

    def _write_json(self, sub, target, doc):
        self._write_file(sub, target, [(json.dumps(doc, separators=(",", ":")) + "\n").encode()])
        self._sync_dir(sub)

    # -- the signing key and the counter --

    def _signing_key(self, create):
        if self._signing:
            return self._signing
        text = self._read_key_file()
        if text is None and create:
            self._make_key_file()
            text = self._read_key_file()
        if text is None:
            return None
        try:
            doc = json.loads(text)
            raw = base64.b64decode(doc["key"], validate=True) if doc.get("format") == KEY_FORMAT else b""
            key_id = doc.get("keyId")
        except (ValueError, TypeError, KeyError, AttributeError):
            raw, key_id = b"", None
        if len(raw) != 32 or not isinstance(key_id, str):
            raise StoreError(f"the signing key {self.key_file} is not a valid key file. Delete it: a "
                             "new one is made on the next checkpoint (checkpoints signed with the "
                             "old one then count as foreign until you confirm them once).", "corrupted")
        self._signing = (raw, key_id)
        return self._signing

    def _read_key_file(self):
        opened = _open_regular(self.key_file, "The signing key")
        if opened is None:
            return None
        fd, st = opened
        try:
            if _POSIX and (st.st_mode & 0o077 or st.st_uid != os.getuid()):
                raise StoreError(
                    f"the signing key {self.key_file} can be read by other users or belongs to "
                    f"another one (mode {st.st_mode & 0o777:o}): whoever can read it can sign "
                    f"checkpoints this store trusts. Make it yours alone (chmod 600 "
                    f"{self.key_file}), or delete it (your checkpoints then count as foreign "
                    "until you confirm them once).", "failed")
            return _read_all(fd).decode("utf-8")
        finally:
            os.close(fd)

    def _make_key_file(self):
        key_dir = os.path.dirname(self.key_file)
        if key_dir == self.dir:
            self._mkdirs()
        else:
            _ensure_folder(key_dir, "The signing key's folder", parents=True)
        doc = {"format": KEY_FORMAT, "version": 1, "keyId": secrets.token_hex(8),
               "key": base64.b64encode(secrets.token_bytes(32)).decode()}
        tmp = f"{self.key_file}{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        fd = _create_exclusive(tmp)
        try:
            os.write(fd, (json.dumps(doc) + "\n").encode())
            os.fsync(fd)
            os.close(fd)
            fd = None
            try:
                os.link(tmp, self.key_file)  # another process made one first: use theirs
            except FileExistsError:
                pass
        finally:
            if fd is not None:
                os.close(fd)
            _rm(tmp)

    def _sign_entry(self, signing, name, head, records, tail, meta):
        key, key_id = signing
        return {"v": SIGNATURE_VERSION, "alg": "HMAC-SHA256", "keyId": key_id,
                "mac": _mac(key, signed_bytes(name, head, records, tail, meta))}

    def _read_counter(self, signing):
        try:
            doc = json.loads(_read_regular(self._path("counter.json"), "The store counter") or "null")
        except ValueError:
            doc = None
        well = isinstance(doc, dict) and doc.get("format") == COUNTER_FORMAT and \
            generation_of({"generation": doc.get("generation")}) == doc.get("generation") and \
            isinstance(doc.get("names"), dict) and isinstance(doc.get("keyId"), str) and \
            isinstance(doc.get("mac"), str) and _KEY_RE.match(doc["mac"]) is not None
        if not well:
            g = generation_of({"generation": doc.get("generation")}) if isinstance(doc, dict) else 0
            return {"present": doc is not None, "trusted": False, "generation": g, "names": {},
                    "oldKeyId": None, "previousKeyIds": []}
        prev = doc.get("previousKeyIds") if isinstance(doc.get("previousKeyIds"), list) else []
        prev = [k for k in prev if isinstance(k, str)][-16:]
        trusted = bool(signing) and doc["keyId"] == signing[1] and hmac.compare_digest(
            _mac(signing[0], _counter_bytes(doc)), doc["mac"])
        old = None if signing and doc["keyId"] == signing[1] else doc["keyId"]
        if old:
            prev = list(dict.fromkeys([*prev, old]))
        return {"present": True, "trusted": trusted, "generation": doc["generation"],
                "names": doc["names"] if trusted else {}, "oldKeyId": old, "previousKeyIds": prev}

    def _write_counter(self, signing, generation, names, previous):
        if signing:
            doc = {"format": COUNTER_FORMAT, "version": COUNTER_VERSION, "keyId": signing[1],
                   "generation": generation, "names": names, "previousKeyIds": previous}
            doc["mac"] = _mac(signing[0], _counter_bytes(doc))
        else:
            doc = {"format": COUNTER_FORMAT, "version": COUNTER_VERSION, "keyId": None,
                   "generation": generation, "names": {}, "previousKeyIds": previous, "mac": None}
        self._write_json("", self._path("counter.json"), doc)

    def _signature_of(self, name, entry):
        signing = self._signing_key(False)
        counter = self._read_counter(signing)
        sig = entry.get("sig")
        if not isinstance(sig, dict) or not isinstance(sig.get("mac"), str):
            out = {"state": "unsigned", "keyId": None}
        else:
            key_id = sig.get("keyId") if isinstance(sig.get("keyId"), str) else None
            if not signing or key_id != signing[1] or sig.get("v") != SIGNATURE_VERSION:
                out = {"state": "other-key", "keyId": key_id}
            else:
                want = self._sign_entry(signing, name, entry["head"], entry["records"],
                                        entry["tail"], entry["meta"])["mac"]
                ok = hmac.compare_digest(want, sig["mac"])
                out = {"state": "valid" if ok else "invalid", "keyId": key_id}
        generation = generation_of(entry["meta"])
        if out["state"] == "valid":
            latest = counter["names"].get(name) if counter["trusted"] else None
            if (isinstance(latest, int) and generation < latest) if counter["trusted"] else generation > 0:
                out.update(state="rollback", generation=generation, latest=latest)
        elif out["state"] == "other-key" and out["keyId"] and out["keyId"] in counter["previousKeyIds"]:
            out["keyChanged"] = True
        return out

    async def generation(self, name):
        """The generation of checkpoint `name` now (0: none, or saved before generations)."""
        check_name(name)
        entry = self._read_entry(name)
        return generation_of(entry["meta"] if entry else None)

    def expect(self, name, generation):
        """The next commit of `name` fails with 'conflict' unless `name` is still at `generation`."""
        check_name(name)
        self._expected[name] = generation

    # -- locks --

    async def lock(self, name, timeout=None):
        """Hold the writer lock of checkpoint `name` (every process using this directory)."""
        stem = name_to_stem(name)
        self._mkdirs()
        return _acquire_lock_file(self._path("locks", f"{stem}.lock"),
                                  self.lock_timeout if timeout is None else timeout,
                                  f"Checkpoint {quoted(name)}")

    def _store_lock(self):
        self._mkdirs()
        return _acquire_lock_file(self._path("store.lock"), self.lock_timeout,
                                  f"The checkpoint store {self.dir}")

    # -- writing --

    async def put_records(self, records):
        prepared = [(record_key(p), p) for p in (_pieces(r) for r in records)]
        self._opened()
        try:
            self._write_records(prepared)
        except OSError as exc:
            raise self._write_error(None, sum(sum(x.nbytes for x in p) for _, p in prepared), exc) from None
        return [k for k, _ in prepared]

    def _write_records(self, prepared):
        unique = dict(prepared)
        with self._store_lock():
            now = time.time()
            missing = []
            for key, pieces in unique.items():
                path = self._record_file(key)
                if _lstat(path + ".damaged") is None and self._holds_bytes(path, pieces):
                    os.utime(path, (now, now), follow_symlinks=False)
                else:
                    missing.append((key, pieces))
        for key, pieces in missing:
            self._write_file("records", self._record_file(key), pieces)
        if missing:
            self._sync_dir("records")
        for key, _ in missing:
            _remove_own(self._record_file(key) + ".damaged")
        return [k for k, _ in missing]

    @staticmethod
    def _holds_bytes(path, pieces):
        opened = _open_regular(path, "Record file")
        if opened is None:
            return False
        fd, st = opened
        try:
            if st.st_size != sum(p.nbytes for p in pieces):
                return False
            for p in pieces:
                at = 0
                while at < p.nbytes:
                    got = os.read(fd, min(CHUNK, p.nbytes - at))
                    if not got or p[at:at + len(got)].tobytes() != got:  # memcmp, not per item
                        return False
                    at += len(got)
            return True
        finally:
            os.close(fd)

    async def has_records(self, keys):
        keys = [_check_key(k) for k in keys]
        self._opened()
        out = []
        with self._store_lock():
            now = time.time()
            for k in keys:
                path = self._record_file(k)
                st = _lstat(path)
                if _lstat(path + ".damaged") is not None or st is None or not stat.S_ISREG(st.st_mode):
                    out.append(False)
                    continue
                os.utime(path, (now, now), follow_symlinks=False)
                out.append(True)
        return out

    async def commit(self, name, entry, retention=..., sign=True, expect=None):
        """Make `entry` {head, records, tail, meta} the checkpoint `name`, signed as this
        store's own unless `sign` is False."""
        check_name(name)
        head, records, tail, size = _check_entry(entry)
        meta = _plain_meta(entry.get("meta"), size)
        self._opened()
        try:
            signing = self._signing_key(sign)
            with self._store_lock():
                self._commit_locked(name, head, records, tail, meta, retention, signing, sign, expect)
        except OSError as exc:
            raise self._write_error(name, size, exc) from None

    async def put(self, name, data, meta=None, sign=False, expect=None):
        """Saves a whole checkpoint file; unsigned unless `sign` (an import is foreign until
        confirmed)."""
        check_name(name)
        head, records, tail = split_container(data)
        held = await self.lock(name)
        created = []
        try:
            prepared = [(record_key(r), [r]) for r in records]
            self._opened()
            created = self._write_records(prepared)
            recs = [{"key": k, "length": p[0].nbytes} for k, p in prepared]
            m = _plain_meta(meta, head.nbytes + tail.nbytes + sum(r["length"] for r in recs))
            signing = self._signing_key(sign)
            with self._store_lock():
                self._commit_locked(name, bytes(head), recs, bytes(tail), m, ..., signing, sign, expect)
            created = []
        except OSError as exc:
            raise self._write_error(name, memoryview(data).nbytes, exc) from None
        finally:
            if created:
                await self.discard_records(created)
            held.release_now()

    def _commit_locked(self, name, head, records, tail, meta, retention, signing, sign, expect):
        missing = []
        for key, length in dict((r["key"], r["length"]) for r in records).items():
            st = _lstat(self._record_file(key))
            if st is None or not stat.S_ISREG(st.st_mode) or st.st_size != length:
                missing.append(key)
        if missing:
            raise StoreError(f"cannot save checkpoint {quoted(name)}: {len(missing)} of its records "
                             f"({', '.join(missing[:2])}{', ...' if len(missing) > 2 else ''}) are not "
                             "in the store (never written, or freed meanwhile by a delete). "
                             "Checkpoint again.", "missing-record")
        try:
            before = self._read_entry(name)
        except StoreError:
            before = None  # a damaged one is replaced
        expected = expect if expect is not None else self._expected.get(name)
        self._expected.pop(name, None)
        found = generation_of(before["meta"] if before else None)
        if expected is not None and expected != found:
            raise StoreError(
                f"checkpoint {quoted(name)} was saved by another writer while this one was working (it "
                f"expected {f'the save numbered {expected}' if expected else 'no checkpoint of that name'}, "
                f"the store now holds number {found}). This save was not kept, so the other one is "
                "not silently replaced: save again under another name, or again under this one "
                "once you know which state you want.", "conflict")
        counter = self._read_counter(signing)
        if signing and not counter["trusted"]:
            self._write_counter(signing, counter["generation"], {}, counter["previousKeyIds"])
        meta["generation"] = counter["generation"] + 1
        sig = self._sign_entry(signing, name, head, records, tail, meta) if sign else None
        self._write_entry(name, head, records, tail, meta, sig)  # the commit point
        self._remove_legacy(name)
        for key in dict.fromkeys(r["key"] for r in records):
            try:
                os.utime(self._record_file(key), (time.time(), 0), follow_symlinks=False)
            except OSError:
                pass
        dropped = list(dict.fromkeys(r["key"] for r in before["records"])) if before else []
        names = dict(counter["names"])
        notebook = meta.get("notebook")
        if notebook is not None:
            policy = check_retention(retention) if retention is not ... else self._retention_for(notebook)
            if policy:
                mine = [e for e in self._entries() if e["meta"].get("notebook") == notebook]
                expired = expired_by_retention(
                    [(e["name"], e["meta"].get("createdMs") or 0, len(e["head"]) + len(e["tail"]),
                      [(r["key"], r["length"]) for r in e["records"]]) for e in mine],
                    name, policy, [e["name"] for e in mine if e["meta"].get("keep") is True])
                for old in expired:
                    dropped.extend(self._remove_entry(old))
                    names[old] = meta["generation"]
        names[name] = meta["generation"]
        self._write_counter(signing, meta["generation"], names, counter["previousKeyIds"])
        self._free_unused(dropped)

    def _write_entry(self, name, head, records, tail, meta, sig):
        doc = {"format": ENTRY_FORMAT, "version": ENTRY_VERSION, "name": name,
               "size": len(head) + len(tail) + sum(r["length"] for r in records),
               "head": base64.b64encode(head).decode(), "records": records,
               "tail": base64.b64encode(tail).decode(), "meta": meta}
        if sig:
            doc["sig"] = sig
        self._write_json("entries", self._entry_file(name), doc)

    async def sign(self, name):
        """Sign the entry of `name` as this store's own (a foreign checkpoint a person
        confirmed); False when there is none."""
        check_name(name)
        signing = self._signing_key(True)
        held = await self.lock(name)
        try:
            with self._store_lock():
                entry = self._read_entry(name)
                if entry is None:
                    return False
                counter = self._read_counter(signing)
                meta = {**entry["meta"], "generation": counter["generation"] + 1}
                self._write_entry(name, entry["head"], entry["records"], entry["tail"], meta,
                                  self._sign_entry(signing, name, entry["head"], entry["records"],
                                                   entry["tail"], meta))
                self._write_counter(signing, meta["generation"],
                                    {**counter["names"], name: meta["generation"]},
                                    counter["previousKeyIds"])
                return True
        finally:
            held.release_now()

    def _remove_entry(self, name):
        try:
            entry = self._read_entry(name)
        except StoreError:
            entry = None
        _rm(self._entry_file(name))
        self._remove_legacy(name)
        return list(dict.fromkeys(r["key"] for r in entry["records"])) if entry else []

    def _free_unused(self, keys, ignore_pins=False):
        if not keys or not _check_folder(self._path("records"), "The store folder"):
            return 0
        used = {r["key"] for e in self._entries() for r in e["records"]}
        freed = 0
        for key in dict.fromkeys(keys):
            if key in used:
                continue
            path = self._record_file(key)
            st = _lstat(path)
            if st is None or not stat.S_ISREG(st.st_mode):
                continue
            if not ignore_pins and time.time() - st.st_mtime < self.orphan_grace:
                continue
            _rm(path)
            _remove_own(path + ".damaged")
            freed += 1
        if freed:
            self._sync_dir("records")
        return freed

    def _write_error(self, name, needed, exc):
        what = f"checkpoint {quoted(name)}" if name else "checkpoint records"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            try:
                s = os.statvfs(self.dir)
                free = f"{s.f_bavail * s.f_frsize} bytes free"
            except OSError:
                free = "free space unknown"
            return StoreError(f"not enough disk space in {self.dir} to save {what}: it needs "
                              f"{needed} bytes, {free}. Delete old checkpoints or free disk space, "
                              "and try again." + (f" The previous checkpoint {quoted(name)}, if any, is "
                                                  "unchanged." if name else ""), "quota")
        return StoreError(f"saving {what} in {self.dir} failed ({exc}); " + (
            "the previous checkpoint of that name, if any, is unchanged." if name
            else "no checkpoint was changed."), "failed")

    # -- reading --

    def _read_entry(self, name):
        path = self._entry_file(name)
        _check_folder(self._path("entries"), "The store folder")
        try:
            raw = _read_regular(path, f"The entry of checkpoint {quoted(name)}")
        except OSError as exc:
            raise StoreError(f"reading checkpoint {quoted(name)} from {path} failed: {exc}") from None
        if raw is None:
            return None
        entry = _parse_entry(raw, name)
        if entry is None:
            raise StoreError(f"checkpoint {quoted(name)} in {self.dir} is corrupted: {path} is not a "
                             f"valid entry. Delete it and checkpoint again.", "corrupted")
        return entry

    def _entries(self):
        out = []
        for f in self._readdir("entries"):
            if not f.endswith(".json") or f.startswith("."):
                continue
            name = stem_to_name(f[:-5])
            if name is None:
                continue
            try:
                raw = _read_regular(self._path("entries", f), "Entry") or b""
            except (OSError, StoreError):
                continue
            entry = _parse_entry(raw, name)
            if entry:
                out.append(entry)
        return out

    def _read_record(self, key, length=None):
        """The bytes of record `key` as a bytearray, or a problem (str)."""
        try:
            opened = _open_regular(self._record_file(key), "Record file")
        except OSError as exc:
            return f"cannot be read ({exc})"
        if opened is None:
            return _MISSING
        fd, st = opened
        try:
            if length is not None and st.st_size != length:
                return f"holds {st.st_size} bytes instead of {length}"
            return bytearray(_read_all(fd))
        finally:
            os.close(fd)

    def _mark_damaged(self, key):
        marker = self._record_file(key) + ".damaged"
        try:
            _check_folder(self._path("records"), "The store folder")
            os.close(_create_exclusive(marker))
        except FileExistsError:
            st = os.lstat(marker)
            if not stat.S_ISREG(st.st_mode):
                raise _unsafe(marker, "The damage marker") from None
        except OSError:
            pass  # best effort (a read-only store)

    # checkpoints of earlier versions: <stem>.elc + <stem>.meta.json (read, listed, deleted)

    def _legacy_files(self, name):
        stem = name_to_stem(name)
        return self._path(stem + ".elc"), self._path(stem + ".meta.json")

    def _legacy(self, name, read=False):
        """{"meta"} (+ "bytes" when `read`) of a checkpoint file of an earlier version, or None.
        Metadata that does not match the file (its size and mtime then) is derived from it."""
        container, sidecar = self._legacy_files(name)
        st = _lstat(container)
        if st is None or not stat.S_ISREG(st.st_mode):
            return None
        ns = st.st_mtime_ns  # Node's mtimeMs, computed the same way: sec * 1e3 + nsec / 1e6
        mtime_ms = (ns // 10 ** 9) * 1e3 + (ns % 10 ** 9) / 1e6
        try:
            side = json.loads(_read_regular(sidecar, "Checkpoint metadata") or "null")
        except (ValueError, OSError, StoreError):
            side = None
        if isinstance(side, dict) and side.get("name") == name and side.get("size") == st.st_size \
                and side.get("mtimeMs") == mtime_ms and isinstance(side.get("meta"), dict):
            meta = {**side["meta"], "size": st.st_size}
        else:
            meta = {"notebook": None, "createdMs": round(mtime_ms), "size": st.st_size,
                    "metadataMissing": True}
        out = {"meta": meta}
        if read:
            data = _read_regular(container, f"Checkpoint {quoted(name)}")
            if data is None:
                return None
            out["bytes"] = data
            meta["size"] = len(data)
        return out

    def _remove_legacy(self, name):
        for f in self._legacy_files(name):
            _rm(f)

    async def get(self, name):
        """{"bytes", "meta", "damaged": [{key, record}], "signature"} or None. A record whose
        bytes do not match its key is neutralized (its header kept, its payload zeroed), marked
        and listed in "damaged"."""
        check_name(name)
        entry = self._read_entry(name)
        if entry is None:
            legacy = self._legacy(name, read=True)
            return legacy and {**legacy, "damaged": [], "signature": {"state": "unsigned", "keyId": None}}
        _check_folder(self._path("records"), "The store folder")
        out = bytearray(entry["head"])
        damaged = []
        for i, r in enumerate(entry["records"]):
            data = self._read_record(r["key"], r["length"])
            if data == _MISSING:
                keys = {k["key"] for k in entry["records"]}
                gone = [k for k in keys if _lstat(self._record_file(k)) is None]
                raise StoreError(
                    f"checkpoint {quoted(name)} is lost: {len(gone)} of its {len(keys)} records are no longer in "
                    f"{self.dir}; they were deleted from it (by hand, or by a sync or cleanup "
                    f"tool). Delete it (elastic-lite rm {quoted(name)}), and keep the folder whole: a "
                    "record file is shared by every checkpoint that holds its bytes", "lost")
            if isinstance(data, str):
                raise StoreError(f"checkpoint {quoted(name)} in {self.dir} is corrupted: record "
                                 f"{r['key'][:12]}… {data}. Delete it and checkpoint again.", "corrupted")
            if record_key(data) != r["key"]:
                neutralize_record(data)
                damaged.append({"key": r["key"], "record": i})
                self._mark_damaged(r["key"])
            out += data
        out += entry["tail"]
        return {"bytes": out, "meta": {**entry["meta"], "size": entry["size"]}, "damaged": damaged,
                "signature": self._signature_of(name, entry)}

    async def get_entry(self, name):
        check_name(name)
        entry = self._read_entry(name)
        if entry is None:  # a file of an earlier version has no records: it is all tail
            legacy = self._legacy(name, read=True)
            return legacy and {"name": name, "head": b"", "records": [], "tail": legacy["bytes"],
                               "meta": legacy["meta"], "size": len(legacy["bytes"]),
                               "signature": {"state": "unsigned", "keyId": None}}
        return {"name": name, "head": entry["head"], "records": [dict(r) for r in entry["records"]],
                "tail": entry["tail"], "meta": {**entry["meta"], "size": entry["size"]},
                "size": entry["size"], "signature": self._signature_of(name, entry)}

    async def read_records(self, keys):
        """The records' bytes, each checked against its key: one that does not match is marked
        damaged and handed out neutralized (header kept, payload zeroed), never as read."""
        keys = [_check_key(k) for k in keys]
        _check_folder(self._path("records"), "The store folder")
        out = []
        for key in keys:
            data = self._read_record(key)
            if isinstance(data, str):
                raise StoreError(f"record {key} is not in the store {self.dir} ({data})", "missing-record")
            if record_key(data) != key:
                self._mark_damaged(key)
                neutralize_record(data)
            out.append(data)
        return out

    async def list(self, notebook=None):
        """Newest first: {name, meta}; a checkpoint whose record files are gone (deleted by
        hand, by a sync or cleanup tool) carries "lost": {missing, records, store: "folder"}
        (presence only, never bytes: as js/store/layout.mjs)."""
        self._opened()
        entries = self._entries()
        shown = [e for e in entries if notebook is None or e["meta"].get("notebook") == notebook]
        out = []
        for e, lost in zip(shown, self._losses(shown)):
            if lost is not False:  # False: deleted meanwhile
                out.append({"name": e["name"], "meta": {**e["meta"], "size": e["size"]},
                            **({"lost": lost} if lost else {})})
        names = {e["name"] for e in entries}
        for f in self._readdir():
            name = stem_to_name(f[:-4]) if f.endswith(".elc") and not f.startswith(".") else None
            legacy = self._legacy(name) if name is not None and name not in names else None
            if legacy and (notebook is None or legacy["meta"].get("notebook") == notebook):
                out.append({"name": name, "meta": legacy["meta"]})
        out.sort(key=lambda e: e["name"])
        out.sort(key=lambda e: -(e["meta"].get("createdMs") or 0))
        return out

    def _losses(self, entries):
        """For each of `entries`: None (its records are there), {missing, records, store:
        "folder"} (some record files are gone), or False (its entry was deleted meanwhile). An
        entry is found lost only after reading it again: a delete or the retention removes
        the entry before freeing its records, and such an entry is gone, not lost."""
        if not entries:
            return []
        held = set(self._readdir("records"))
        out = []
        for e in entries:
            if all(r["key"] in held for r in e["records"]):
                out.append(None)
                continue
            try:
                now = self._read_entry(e["name"])
            except StoreError:
                now = e
            if now is None:
                out.append(False)
                continue
            keys = list(dict.fromkeys(r["key"] for r in now["records"]))
            missing = sum(1 for k in keys if k not in held and _lstat(self._record_file(k)) is None)
            out.append({"missing": missing, "records": len(keys), "store": "folder"} if missing else None)
        return out

    async def delete(self, name):
        check_name(name)
        self._opened()
        with self._store_lock():
            entry, damaged = None, False
            try:
                entry = self._read_entry(name)
            except StoreError:
                damaged = True
            existed = entry is not None or damaged or self._legacy(name) is not None
            _rm(self._entry_file(name))
            self._remove_legacy(name)
            if existed:
                self._sync_dir("entries")
            signing = self._signing_key(False) if existed else None
            if signing:  # a deleted entry put back later is a rollback too
                c = self._read_counter(signing)
                self._write_counter(signing, c["generation"] + 1,
                                    {**c["names"], name: c["generation"] + 1}, c["previousKeyIds"])
            self._free_unused(list(dict.fromkeys(r["key"] for r in entry["records"])) if entry else [])
            return existed

    # -- retention, housekeeping --

    def _retention_settings(self):
        try:
            s = json.loads(_read_regular(self._path("retention.json"), "The retention settings") or "{}")
            notebooks = s.get("notebooks")
            return {"default": s.get("default"), "notebooks": notebooks if isinstance(notebooks, dict) else {}}
        except (ValueError, AttributeError, OSError, StoreError):
            return {"default": None, "notebooks": {}}

    def _retention_for(self, notebook):
        s = self._retention_settings()
        own = s["notebooks"].get(notebook) if notebook is not None else None
        return check_retention(own if own is not None else s["default"]) or self.retention

    async def set_retention(self, notebook, policy):
        p = check_retention(policy)
        with self._store_lock():
            s = self._retention_settings()
            if notebook is None:
                s["default"] = p
            elif p:
                s["notebooks"][notebook] = p
            else:
                s["notebooks"].pop(notebook, None)
            self._write_file("", self._path("retention.json"), [(json.dumps(s, indent=1) + "\n").encode()])
            self._sync_dir("")

    async def get_retention(self, notebook=None):
        if notebook is None:
            return check_retention(self._retention_settings()["default"]) or self.retention
        return self._retention_for(notebook)

    async def sweep(self):
        """Frees records no entry names (pins older than orphan_grace), dead writers' temporary
        and lock files; the number of records freed."""
        return self._sweep()

    def _sweep(self):
        with self._store_lock():
            for sub in ("", "entries", "records", "locks"):
                for f in self._readdir(sub):
                    m = re.match(r"^\.tmp-(\d+)-", f)
                    if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
                        _remove_own(self._path(sub, f))
            for sub in ("locks", ""):
                for f in self._readdir(sub):
                    if not (sub == "locks" and f.endswith(".lock")) and ".lock.break-" not in f:
                        continue
                    path = self._path(sub, f)
                    try:
                        _break_stale(path, _read_holder(path))
                    except (OSError, StoreError):
                        pass
            files = self._readdir("records")
            records = [f for f in files if _KEY_RE.match(f)]
            present = set(records)
            for f in files:
                if f.endswith(".damaged") and f[:-8] not in present:
                    _remove_own(self._path("records", f))
            return self._free_unused(records)

    async def verify_records(self, keys):
        checked = list(dict.fromkeys(_check_key(k) for k in keys))
        damaged = []
        for key in checked:
            data = self._read_record(key)
            if isinstance(data, str):
                continue
            if record_key(data) != key:
                self._mark_damaged(key)
                damaged.append(key)
        return {"checked": len(checked), "damaged": damaged}

    async def discard_records(self, keys):
        with self._store_lock():
            return self._free_unused(list(keys), ignore_pins=True)

    async def stats(self):
        records = [f for f in self._readdir("records") if _KEY_RE.match(f)]
        size = 0
        for k in records:
            st = _lstat(self._record_file(k))
            size += st.st_size if st else 0
        entries = [f for f in self._readdir("entries") if f.endswith(".json") and not f.startswith(".")]
        return {"checkpoints": len(entries), "records": len(records), "recordBytes": size}

    def _opened(self):
        if self._swept:
            return
        self._swept = True
        if not self._readdir():
            return
        try:
            self._sweep()
        except (OSError, StoreError):
            pass

    async def close(self):
        pass


def _parse_entry(raw, name):
    """An entry document checked, head/tail decoded; None if it is not a valid one for `name`."""
    try:
        d = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(d, dict) or d.get("format") != ENTRY_FORMAT or d.get("version") != ENTRY_VERSION \
            or d.get("name") != name or not isinstance(d.get("head"), str) \
            or not isinstance(d.get("tail"), str) or not isinstance(d.get("records"), list) \
            or not isinstance(d.get("meta"), dict):
        return None
    try:
        head, records, tail, size = _check_entry({"head": base64.b64decode(d["head"], validate=True),
                                                  "tail": base64.b64decode(d["tail"], validate=True),
                                                  "records": d["records"]})
    except (ValueError, StoreError):
        return None
    if size != d.get("size"):
        return None
    return {"name": name, "size": size, "head": head, "tail": tail, "records": records,
            "meta": d["meta"], "sig": d.get("sig")}
