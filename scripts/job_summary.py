#!/usr/bin/env python3
"""Summaries of gpu_job.sh's jobs.

`recorded OUT`: the table of `gpu_job.sh recorded`: per recorded shape, the whole-call time of
`clgemm.gemm(queue, a, b)` with the database before the tune (untuned: the shipped entries
and the rules) and after it, the median over the alternating rounds of `clgemm bench`, and
the speedup. Every timed output must have been verified against float64.

    python3 scripts/job_summary.py recorded OUT      (OUT holds untuned-N/ and tuned-N/)

`tune-rate FILE`: configurations a second, from `clgemm tune --json` lines in FILE.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def calls(out: Path, label: str) -> dict[tuple, list[dict]]:
    """Rows of the `clgemm` contender by shape, over every round of `label`."""
    rows: dict[tuple, list[dict]] = {}
    for path in sorted(out.glob(f"{label}-*/*/bench-*.json")):
        for r in json.loads(path.read_text())["rows"]:
            if r["contender"] == "clgemm":
                if not r.get("verified"):
                    sys.exit(f"{path}: {r['m']}x{r['n']}x{r['k']} was not verified")
                rows.setdefault((r["m"], r["n"], r["k"]), []).append(r)
    return rows


def tune_rate(path: Path) -> None:
    for line in path.read_text().splitlines():
        r = json.loads(line)
        best = (r.get("best") or {}).get("gflops")
        if r.get("stopped_by") == "busy":       # skipped: another process was tuning it
            print(f"kernel {r['kernel']} {r['m']}x{r['n']}x{r['k']}: {r['note']}")
            continue
        print(f"kernel {r['kernel']} {r['m']}x{r['n']}x{r['k']}: {r['evaluated_now']} evaluated in "
              f"{r['seconds']} s, {r['configs_per_second']} configurations/s, {r['workers']} "
              f"workers, strategy {r['strategy']}, best {best} GFLOPS")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    jobs = ap.add_subparsers(dest="job", required=True)
    jobs.add_parser("recorded", help="gpu_job.sh recorded's table").add_argument(
        "path", type=Path, help="the job's OUT (untuned-N/ and tuned-N/)")
    jobs.add_parser("tune-rate", help="configurations a second").add_argument(
        "path", type=Path, help="clgemm tune --json lines")
    a = ap.parse_args()
    if a.job == "tune-rate":
        return tune_rate(a.path)
    out = a.path
    before, after = calls(out, "untuned"), calls(out, "tuned")
    table = []
    print("shape            untuned ms  tuned ms  speedup  untuned -> tuned choice")
    for shape in before:
        b = statistics.median(r["call_ms_median"] for r in before[shape])
        a = statistics.median(r["call_ms_median"] for r in after[shape])
        pick = lambda r: f"{r['kernel']} {r['params_source']}"   # noqa: E731
        row = {"shape": "x".join(map(str, shape)), "untuned_ms": b, "tuned_ms": a,
               "speedup": b / a, "untuned": pick(before[shape][0]), "tuned": pick(after[shape][0]),
               "rounds": len(before[shape])}
        table.append(row)
        print(f"{row['shape']:<16} {b:10.4f} {a:9.4f} {b / a:8.2f}  {row['untuned']} -> {row['tuned']}")
    (out / "summary.json").write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
