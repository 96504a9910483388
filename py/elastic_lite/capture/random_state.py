"""The global random generators' state travels with the session.

`np.random.seed(0)` or `random.seed(0)` is the first line of countless notebooks; without
this, the draws after a restore did not continue the seeded sequence. A checkpoint's manifest
holds (field "random"):
- "random": the `random` module's global generator (random.getstate(): version 3, 625
  32-bit words, the cached gauss value);
- "numpy": numpy's legacy global RandomState (np.random.get_state(): "MT19937", 624 32-bit
  words, the position, the cached Gaussian), only when numpy.random was already imported.
The words are packed little-endian and base64-encoded (plain JSON data: a data-only restore
reads them safely, nothing is unpickled). Restore validates every field and puts the state
back, so the next draw is the one the old kernel would have made; the reports say which
generators were saved and put back. numpy's new-style Generators (np.random.default_rng())
are ordinary variables: they pickle with their state.
"""

import base64
import math
import struct
import sys

_MT_WORDS = 624


def _pack(words):
    return base64.b64encode(struct.pack(f"<{len(words)}I", *words)).decode("ascii")


def _unpack(text, count):
    if not isinstance(text, str) or len(text) != (4 * count + 2) // 3 * 4:
        raise ValueError("the generator's words are not what Elastic Lite writes")
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) != 4 * count:
        raise ValueError(f"{len(raw)} bytes of generator words, expected {4 * count}")
    return struct.unpack(f"<{count}I", raw)


def _float_or_none(value):
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value):
        raise ValueError("a cached Gaussian value that is not a finite number")
    return float(value)


def capture():
    """The manifest's "random" field: {"random": {...}, "numpy": {...}} for the generators
    that can be read here (an empty dict when none)."""
    out = {}
    rnd = sys.modules.get("random")
    try:
        version, internal, gauss = rnd.getstate()
        if version == 3 and len(internal) == _MT_WORDS + 1:
            out["random"] = {"version": 3, "words": _pack(internal),
                             "gauss_next": _float_or_none(gauss)}
    except Exception:  # a `random` module replaced by something else: nothing to save
        pass
    nprandom = sys.modules.get("numpy.random")
    if nprandom is not None:
        try:
            name, keys, pos, has_gauss, cached = nprandom.get_state(legacy=True)
            if name == "MT19937" and len(keys) == _MT_WORDS:
                out["numpy"] = {"bit_generator": "MT19937",
                                "words": _pack([int(k) for k in keys]), "pos": int(pos),
                                "has_gauss": int(has_gauss),
                                "cached_gaussian": _float_or_none(float(cached))}
        except Exception:
            pass
    return out


def _put_random(state):
    import random
    if state.get("version") != 3:
        raise ValueError(f"version {state.get('version')!r} of random's state is not known here")
    words = _unpack(state.get("words"), _MT_WORDS + 1)
    if words[-1] > _MT_WORDS:
        raise ValueError("the generator's position is out of range")
    random.setstate((3, words, _float_or_none(state.get("gauss_next"))))


def _put_numpy(state):
    if state.get("bit_generator") != "MT19937":
        raise ValueError("only numpy's MT19937 global state is restored")
    words = _unpack(state.get("words"), _MT_WORDS)
    pos, has_gauss = state.get("pos"), state.get("has_gauss")
    if type(pos) is not int or not 0 <= pos <= _MT_WORDS or has_gauss not in (0, 1):
        raise ValueError("the generator's position or Gaussian flag is out of range")
    cached = _float_or_none(state.get("cached_gaussian")) or 0.0
    try:
        import numpy
    except ImportError:
        raise ValueError("numpy is not installed here") from None
    numpy.random.set_state(("MT19937", numpy.array(words, dtype=numpy.uint32), pos, has_gauss,
                            cached))


_PUT = (("random", "random", _put_random), ("numpy", "numpy.random", _put_numpy))
LABELS = {key: label for key, label, _ in _PUT}


def put_back(manifest, warnings):
    """Put the manifest's generator states back; returns the names of those put back
    ("random", "numpy.random"); a state that cannot be put back is a warning."""
    field = manifest.get("random") if isinstance(manifest, dict) else None
    if not isinstance(field, dict):
        return []
    done = []
    for key, label, put in _PUT:
        state = field.get(key)
        if state is None:
            continue
        try:
            if not isinstance(state, dict):
                raise ValueError("not a generator state")
            put(state)
            done.append(label)
        except Exception as exc:
            warnings.append(f"the global random state of {label} was not put back ({exc}): "
                            "the next draws do not continue the saved sequence")
    return done

