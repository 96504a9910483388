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
restore loads nothing of it until a person confirmed (see _trust.py and _restore.py).
"""

import hashlib
import hmac
import json
import secrets

VERSION = 1

# One key per Python process: MemoryStore's checkpoints live and die with the process too.
_PROCESS_KEY = secrets.token_bytes(32)
_PROCESS_KEY_ID = secrets.token_hex(8)


def canonical_json(value):
    """JSON with object keys sorted at every level (JS: canonicalJson): one text per value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def signed_bytes(name, head, records, tail, meta):
    """The bytes a signature covers: netstrings (`<length>:<bytes>,`) of a version line, the
    name, the head, one "key length" line per record, the tail and the canonical metadata."""
    fields = [f"elastic-lite entry signature {VERSION}".encode(), name.encode("utf-8"),
              bytes(head), "".join(f"{r['key']} {r['length']}\n" for r in records).encode(),
              bytes(tail), canonical_json(meta).encode("utf-8")]
    return b"".join(b"%d:%s," % (len(f), f) for f in fields)


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
