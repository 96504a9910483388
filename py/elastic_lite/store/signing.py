"""Signatures of store entries, and what they make of a checkpoint: this store's own, or foreign.

Every store signs the entries its commit() saves: an HMAC-SHA256 under a key of the store,
over the checkpoint's name, head, record keys and lengths, tail and metadata (the records are
content-addressed: their keys stand for their bytes). The JS stores do it in JS
(js/store/indexeddb.mjs, "Signatures": a non-extractable WebCrypto key kept in IndexedDB, a
key file beside a DirectoryStore); Python's MemoryStore does it here, with one random key per
process. The bytes signed are the same in both languages (`signed_bytes`), so the two stay
one design, though an entry is only ever checked by the store that holds it.

What a signature means: saved by code that holds this store's key. It says nothing about the
contents being harmless, and nothing against someone who can write the store (and its key).
What it is for: an entry that does not carry it (an import, a checkpoint of another browser or
store, an entry changed after it was saved, one written by an older version) is FOREIGN, and
restore loads nothing of it until a person confirmed (see trust/rules.py and load/loader.py).
"""

import decimal
import hashlib
import hmac
import json
import secrets

from .._words import quoted

VERSION = 1

# One key per Python process: MemoryStore's checkpoints live and die with the process too.
_PROCESS_KEY = secrets.token_bytes(32)
_PROCESS_KEY_ID = secrets.token_hex(8)


def _js_number(x):
    """Number.prototype.toString of a JSON number (what JSON.stringify writes)."""
    if isinstance(x, int) and abs(x) < 2 ** 53:
        return str(x)
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    t = decimal.Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, t.digits))
    k, n = len(digits), len(digits) + t.exponent  # value = 0.digits * 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    mant = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mant}e{'+' if e >= 0 else '-'}{abs(e)}"


def canonical_json(value):
    """JS canonicalJson: JSON with object keys sorted (UTF-16 order, as JS sorts) at every
    level, numbers and strings as JSON.stringify writes them (1.0 -> 1, 1e-07 -> 1e-7, -0.0 ->
    0). One text per value in both languages (tests/vectors/signed-bytes.json)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(f"{quoted(k)}:{canonical_json(value[k])}" for k in keys) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return _js_number(value)
    if isinstance(value, str):
        return quoted(value)
    raise ValueError(f"checkpoint metadata holds {type(value).__name__}, not JSON data")


def _utf8(text):
    return text.encode("utf-8", "surrogatepass")


def signed_bytes(name, head, records, tail, meta):
    """The bytes a signature covers: netstrings (`<length>:<bytes>,`) of a version line, the
    name, the head, one "key length" line per record, the tail and the canonical metadata."""
    fields = [_utf8(f"elastic-lite entry signature {VERSION}"), _utf8(name), bytes(head),
              "".join(f"{r['key']} {r['length']}\n" for r in records).encode(), bytes(tail),
              _utf8(canonical_json(meta))]
    return b"".join(b"%d:%s," % (len(f), f) for f in fields)


def _utf8(text):
    return text.encode("utf-8", "surrogatepass")


def sign(name, head, records, tail, meta):
    """The signature of an entry under this process's key: {v, alg, keyId, mac}."""
    mac = hmac.new(_PROCESS_KEY, signed_bytes(name, head, records, tail, meta), hashlib.sha256)
    return {"v": VERSION, "alg": "HMAC-SHA256", "keyId": _PROCESS_KEY_ID, "mac": mac.hexdigest()}


def state(name, head, records, tail, meta, sig):
    """{"state", "keyId"} of an entry's signature under this process's key: "valid",
    "unsigned", "other-key" (signed elsewhere) or "invalid" (changed since it was signed)."""
    if not isinstance(sig, dict) or not isinstance(sig.get("mac"), str):
        return {"state": "unsigned", "keyId": None}
    key_id = sig.get("keyId") if isinstance(sig.get("keyId"), str) else None
    if key_id != _PROCESS_KEY_ID or sig.get("v") != VERSION:
        return {"state": "other-key", "keyId": key_id}
    want = hmac.new(_PROCESS_KEY, signed_bytes(name, head, records, tail, meta),
                    hashlib.sha256).hexdigest()
    return {"state": "valid" if hmac.compare_digest(want, sig["mac"]) else "invalid",
            "keyId": key_id}


_WHY = {
    "unsigned": "it is not signed by this store (imported, or saved by an older version)",
    "other-key": "it was signed by another browser, store or key",
    "invalid": "its signature does not match: it was changed after it was saved",
    "rollback": ("it is an older copy of a checkpoint this store has since saved again or "
                 "deleted (put back from a backup, or by someone who can write the store)"),
}


def foreign_reason(signature, meta=None):
    """Why a store entry is foreign, from the signature state its store reported (None: a store
    that does not sign, whose entries are foreign only when their metadata says they were
    imported); None when it is this store's own."""
    if isinstance(signature, dict) and signature.get("state"):
        if signature["state"] == "valid":
            return None
        why = _WHY.get(signature["state"], "its signature cannot be checked")
        imported = (meta or {}).get("imported")
        if imported and signature["state"] == "unsigned":
            why = f"it was imported from {_source(imported)} and nobody has confirmed it since"
        return why
    imported = (meta or {}).get("imported")
    if imported:
        return f"it was imported from {_source(imported)}, not checkpointed here"
    return None


def _source(imported):
    return imported if isinstance(imported, str) and imported else "elsewhere"
