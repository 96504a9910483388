"""Which checkpoint bytes this Python process made itself (snapshot()), so that
load_snapshot(bytes) can tell the person's own bytes from bytes that came from anywhere else.

A file read back with `open(f, "rb").read()` is the natural way to restore, and it is also how
a hostile file arrives; a list of imports cannot tell a hostile notebook-function body from a
legitimate one (see trust/rules.py), so raw bytes are FOREIGN unless this process made them.

How: snapshot() `remember`s a tag of what it produced, an HMAC-SHA256 under a random key of
this process over the container's STRUCTURE: every byte that is neither a pickle stream nor an
out-of-band buffer (the file header, each record header — it carries the stream's length and
CRC-32 —, each buffer table — it carries every buffer's length and CRC-32 —, the zero padding,
the index and the footer), each region with its offset, and the file size. `made_here` computes
the same tag from the inspection load_snapshot makes anyway (the core has by then checked every
content CRC against those headers) and looks it up. Cost: one HMAC over a few hundred bytes per
record, never a pass over the payloads.

What it does not cover: CRC-32 is a checksum, not a MAC. Someone who obtained bytes this
process made (a file it saved) could change a stream and keep its CRC-32, and hand the result
back to this same process while it still runs; that would count as made here. Bytes from any
other source, or given to another process, never do. The tags of the last MAX_TAGS snapshots
are kept (32 bytes each); the key and the tags die with the process.
"""

import hashlib
import hmac
import secrets
from collections import OrderedDict

from .. import _core

MAX_TAGS = 1 << 16

_KEY = secrets.token_bytes(32)
_tags = OrderedDict()  # tag -> None, oldest first


def _regions(info):
    """(offset, length) of every structural region of an inspected container, in file order,
    or None when the inspection does not lay every record out (damage in a header, format 1.0
    reading of a damaged file...): such bytes are never taken as made here."""
    size = info.get("size")
    records = info.get("records") or []
    index = info.get("index_offset")
    if not isinstance(size, int) or not isinstance(index, int) or not records:
        return None
    payloads = []  # (start, end) of streams and buffers, the content CRCs cover
    for rec in records:
        start, length = rec.get("payload_offset"), rec.get("length")
        if not isinstance(start, int) or not isinstance(length, int):
            return None
        payloads.append((start, start + length))
        for b in rec.get("buffers") or ():
            if not isinstance(b.get("offset"), int) or not isinstance(b.get("length"), int):
                return None
            payloads.append((b["offset"], b["offset"] + b["length"]))
    payloads.sort()
    out, at = [], 0
    for start, end in payloads:
        if start < at or end > index:
            return None  # overlapping or past the index: not a layout snapshot() writes
        if start > at:
            out.append((at, start - at))
        at = end
    out.append((at, size - at))
    return out


def _tag(data, info):
    regions = _regions(info)
    if regions is None:
        return None
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    if view.nbytes != info["size"]:
        return None
    mac = hmac.new(_KEY, b"elastic-lite made here 1 %d\n" % view.nbytes, hashlib.sha256)
    for offset, length in regions:
        mac.update(b"%d %d\n" % (offset, length))
        mac.update(view[offset:offset + length])
    return mac.digest()


def remember(data):
    """Called by snapshot() on the bytes it returns: from now on this process takes them as
    its own. Reads only headers (the core lists the records without checking payloads)."""
    tag = _tag(data, _core.inspect(data, validate=False, headers_only=True))
    if tag is None:
        return
    _tags[tag] = None
    _tags.move_to_end(tag)
    while len(_tags) > MAX_TAGS:
        _tags.popitem(last=False)


def made_here(data, info):
    """True when `data` (inspected as `info`) is a container snapshot() of this process
    produced (see the module docstring for what that proves)."""
    tag = _tag(data, info)
    return tag is not None and tag in _tags
