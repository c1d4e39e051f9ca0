"""Re-apply the split stage's choice (clgemm.tune: the fewest slices within SPLIT_MARGIN of
the fastest count) to the split stages of a `clgemm tune --json` log, and write a database
with the entries' "splits", "gflops" and "ms_median" taken from that count's timings.
Session 11's call 1 ran before the margin existed: its stages took the fastest count. An
entry whose parameters are those of --before's entry (a budget-1 tune re-measures the
shipped winner) gets a note saying where they were found.

    python3 scripts/split_margin.py results/h200/session11/call1/tune.jsonl \\
        results/h200/session11/call1/nvidia-h200.json --before results/h200/session11/call1/db-before.json \\
        --out clgemm/tuned/nvidia-h200.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import db  # noqa: E402
from clgemm.tune import SPLIT_MARGIN, pick_split  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("database")
    ap.add_argument("--before", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    doc = json.loads(Path(a.database).read_text())
    old = json.loads(Path(a.before).read_text())["entries"]
    for line in open(a.log):
        r = json.loads(line)
        timed = [s for s in r["split_stage"] if s["status"] == "ok"]
        if len(timed) < 2:
            continue
        top = pick_split(timed)
        entry = doc["entries"][r["kernel"]][db.shape_key(r["m"], r["n"], r["k"])]
        assert entry["params"] == r["best"]["params"], (entry, r["best"])
        print(f"kernel {r['kernel']} {db.shape_key(r['m'], r['n'], r['k'])}: {entry.get('splits')} -> "
              f"{top['splits']} slices, {top['gflops']:.0f} GFLOPS")
        entry.update(splits=top["splits"], gflops=top["gflops"], ms_median=top["ms_median"])
        prev = old.get(r["kernel"], {}).get(db.shape_key(r["m"], r["n"], r["k"]))
        if prev and prev["params"] == entry["params"]:
            entry["note"] = (f"session 11 call 1: split stage on the shipped winner (scripts/h200_s11_call1.sh); "
                             f"parameters from the tune of {prev.get('date')} ({prev.get('evaluated')} "
                             f"evaluated{'; ' + prev['note'] if prev.get('note') else ''})")
    doc["what"] += (" The split stages' counts re-chosen with the fewest slices within "
                    f"{SPLIT_MARGIN} of the fastest (scripts/split_margin.py).")
    Path(a.out).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
