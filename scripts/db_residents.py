"""Add to every entry of a shipped tuning database the work-groups its configuration keeps
resident per compute unit (GemmPlan.residents, from NVIDIA's -cl-nv-verbose), merging in the
entries of --merge first (default: what `clgemm tune` recorded in this machine's user
database, CLGEMM_HOME). The result goes to --out; copy it over clgemm/tuned/ after
reading the diff.

    python3 scripts/db_residents.py --shipped clgemm/tuned/nvidia-h200.json --out $OUT/nvidia-h200.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import db, device  # noqa: E402
from clgemm.gemm import GemmPlan  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shipped", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--merge", nargs="*", help="databases whose entries go in first "
                    "(default: this machine's user database)")
    ap.add_argument("--note", default="", help="appended to the file's 'what'")
    a = ap.parse_args()
    q = device.queue(device.select())
    doc = json.loads(Path(a.shipped).read_text())
    for path in map(Path, a.merge if a.merge is not None else [db.db_path(q.device)]):
        for key, shapes in json.loads(path.read_text())["entries"].items():
            for shape, entry in shapes.items():
                print(f"from {path}: kernel {key} {shape} {entry['params']} {entry['gflops']:.0f}")
                doc["entries"].setdefault(key, {})[shape] = entry
    for key, shapes in doc["entries"].items():
        for shape, entry in shapes.items():
            r = GemmPlan(q, key, entry["params"]).residents()
            if r:
                entry["resident"] = r
            print(f"kernel {key} {shape} {entry['params']} resident {r}", flush=True)
    doc["what"] += a.note
    Path(a.out).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
