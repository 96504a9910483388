"""Native-CPython side of the serializer benchmark (host .venv, native C core by ctypes).

    .venv/bin/python benchmarks/serializer_native.py            # JSON rows on stdout
Each fresh-interpreter check runs in a new `python` process that never saw the notebook code.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "py"))
sys.path.insert(0, HERE)

import serializer_cases as bench  # noqa: E402


def fresh_check(case, name, payload):
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        f.write(payload)
        path = f.name
    try:
        out = subprocess.run([sys.executable, __file__, "--fresh", case, name, path],
                             capture_output=True, text=True, check=False)
        return out.stdout.strip() or f"no: {out.stderr.strip().splitlines()[-1:]}"
    finally:
        os.unlink(path)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--fresh":
        _, _, case, name, path = sys.argv
        with open(path, "rb") as f:
            print(bench.check_fresh(case, name, f.read()))
        return
    rows = []
    for case in bench.CASES:
        bench.setup(case)
        case_rows, payloads = bench.measure_case(case)
        for row in case_rows:
            row["env"] = "native CPython " + sys.version.split()[0]
            print(f"[native] {case} {row['serializer']}: {row.get('dump_ms')}", file=sys.stderr)
        rows.extend(case_rows)
        bench.teardown(case)
        for name in bench.FRESH_ORDER:
            row = next(r for r in rows if r["case"] == case and r["serializer"] == name)
            row["fresh"] = fresh_check(case, name, payloads[name]) if payloads.get(name) else "no"
        payloads.clear()
    json.dump(rows, sys.stdout)


if __name__ == "__main__":
    main()
