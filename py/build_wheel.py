"""Build the elastic_lite wheel offline, with the C core and the IndexedDB store inside.

    python py/build_wheel.py --out build/wheels --wasm build/wasm/elastic_lite.wasm \
        --js js/store/indexeddb.mjs

A wheel is a zip with a fixed layout (PEP 427); writing it here needs no build backend and no
network, and is reproducible (sorted entries, fixed timestamps). Skips the work when the wheel
is newer than every input. Also writes `<out>/wheels.json` listing the wheels of <out>, so a
browser (which cannot list a directory over HTTP) knows which files to fetch.
"""

import argparse
import base64
import glob
import hashlib
import json
import os
import sys
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--wasm", required=True)
    ap.add_argument("--js", action="append", default=[])
    args = ap.parse_args()

    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    name, version = project["name"], project["version"]
    if not os.path.exists(args.wasm):
        sys.exit(f"build_wheel: {args.wasm} is missing; the C core build "
                 "(scripts/build.d/10-core.sh) must run first")

    files = {}  # archive path -> source path
    # *.json: package data read at run time (denylist.json, also read by the CLI).
    for pattern in ("*.py", "*.json"):
        for src in sorted(glob.glob(os.path.join(HERE, "elastic_lite", pattern))):
            files[f"elastic_lite/{os.path.basename(src)}"] = src
    files["elastic_lite/elastic_lite.wasm"] = args.wasm
    for src in args.js:
        if os.path.exists(src):
            files[f"elastic_lite/js/{os.path.basename(src)}"] = src
        else:
            print(f"build_wheel: warning: {src} is missing, not shipped", file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    wheel = os.path.join(args.out, f"{name}-{version}-py3-none-any.whl")
    inputs = list(files.values()) + [os.path.join(HERE, "pyproject.toml"), __file__]
    up_to_date = os.path.exists(wheel) and all(
        os.path.getmtime(p) <= os.path.getmtime(wheel) for p in inputs)
    if not up_to_date:
        _write_wheel(wheel, name, version, project, files)
        print(f"build_wheel: wrote {wheel}", file=sys.stderr)
    for old in glob.glob(os.path.join(args.out, f"{name}-*.whl")):
        if old != wheel:
            os.remove(old)
    _write_index(args.out, os.path.basename(wheel))


def _write_wheel(wheel, name, version, project, files):
    dist = f"{name}-{version}.dist-info"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
         f"Summary: {project.get('description', '')}",
         f"Requires-Python: {project.get('requires-python', '>=3.11')}"]
        + [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]) + "\n"
    wheel_meta = ("Wheel-Version: 1.0\nGenerator: elastic-lite build_wheel.py\n"
                  "Root-Is-Purelib: true\nTag: py3-none-any\n")
    entries = []
    for arc in sorted(files):
        with open(files[arc], "rb") as f:
            entries.append((arc, f.read()))
    entries.append((f"{dist}/METADATA", metadata.encode()))
    entries.append((f"{dist}/WHEEL", wheel_meta.encode()))
    entries.append((f"{dist}/top_level.txt", f"{name}\n".encode()))
    record = "".join(f"{arc},{_record_hash(data)},{len(data)}\n" for arc, data in entries)
    record += f"{dist}/RECORD,,\n"
    entries.append((f"{dist}/RECORD", record.encode()))
    tmp = wheel + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, wheel)


def _write_index(out, ours):
    wheels = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "*.whl")))
    index = {"elastic_lite": ours, "wheels": wheels}
    path = os.path.join(out, "wheels.json")
    text = json.dumps(index, indent=2) + "\n"
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
