#!/usr/bin/env python3
"""Summaries of gpu_job.sh's jobs.

`recorded OUT`: the table of `gpu_job.sh recorded`: per recorded shape, the whole-call time of
`clgemm.gemm(queue, a, b)` with the database before the tune (untuned: the shipped entries
and the rules) and after it, the median over the alternating rounds of `clgemm bench`, and
the speedup. Every timed output must have been verified against float64.

    python3 scripts/job_summary.py recorded OUT      (OUT holds untuned-N/ and tuned-N/)

`compare OUT --before LABEL --after LABEL`: the same table for any two labels of rounds
(`gpu_job.sh ship-and-compare`: before-N/ and after-N/), with each side's call against
cuBLAS's in the same bench where it ran, and a line each for the shapes whose launch
changed and those whose launch did not (their speedups' geometric mean, range, and the
shapes that moved by more than 5% either way).

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
    cmp = jobs.add_parser("compare", help="two labels of rounds against each other")
    cmp.add_argument("path", type=Path, help="the job's OUT (BEFORE-N/ and AFTER-N/)")
    cmp.add_argument("--before", default="before")
    cmp.add_argument("--after", default="after")
    jobs.add_parser("tune-rate", help="configurations a second").add_argument(
        "path", type=Path, help="clgemm tune --json lines")
    a = ap.parse_args()
    if a.job == "tune-rate":
        return tune_rate(a.path)
    if a.job == "recorded":
        return compare(a.path, "untuned", "tuned")
    return compare(a.path, a.before, a.after)


def compare(out: Path, first: str, second: str) -> None:
    """The table of `first` against `second`, written to OUT/summary.json as well."""
    before, after = calls(out, first), calls(out, second)
    if not before or not after:
        sys.exit(f"{out}: no verified `clgemm` rows under {first}-*/ and {second}-*/")

    def median(rows: list[dict], key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(values) if values else None

    def pick(r: dict) -> str:
        """The launch: kernel, where its parameters come from (the tuned entry's shape, which
        a new entry can take over far from its own shape), slices of k, and "floats" where
        unaligned rows are read in place."""
        parts = [r["kernel"], r.get("tuned_at") or r["params_source"]]
        if (r.get("splits") or 1) > 1:
            parts.append(f"{r['splits']} slices")
        if r.get("floats"):
            parts.append("floats")
        return " ".join(parts)

    table = []
    print(f"{'shape':<16} {first + ' ms':>11} {second + ' ms':>11} {'speedup':>8}  "
          f"x cuBLAS {first} / {second}  {first} -> {second} choice")
    for shape in [s for s in before if s in after]:
        b, a = median(before[shape], "call_ms_median"), median(after[shape], "call_ms_median")
        vb, va = median(before[shape], "vs_cublas_call"), median(after[shape], "vs_cublas_call")
        row = {"shape": "x".join(map(str, shape)), f"{first}_ms": b, f"{second}_ms": a,
               "speedup": b / a, f"{first}_vs_cublas": vb, f"{second}_vs_cublas": va,
               first: pick(before[shape][0]), second: pick(after[shape][0]),
               "rounds": len(before[shape])}
        table.append(row)
        ratios = " / ".join("-" if v is None else f"{v:.3f}" for v in (vb, va))
        print(f"{row['shape']:<16} {b:11.4f} {a:11.4f} {b / a:8.2f}  {ratios:>17}  "
              f"{row[first]} -> {row[second]}")
    changed = [r["speedup"] for r in table if r[first] != r[second]]
    same = [r["speedup"] for r in table if r[first] == r[second]]
    print(overall("launch changed", changed, len(table)))
    print(overall("same launch (the rounds' noise)", same, len(table)))
    (out / "summary.json").write_text(json.dumps(table, indent=1))


def overall(what: str, speedups: list[float], shapes: int) -> str:
    """One line over a group of the table's shapes: how many, the geometric mean of their
    speedups and its range, and how many moved by more than 5% each way; what a decision
    to ship reads first, with the shapes whose launch did not change beside it as the
    measure of noise."""
    if not speedups:
        return f"{what}: 0 of {shapes} shapes"
    mean = statistics.geometric_mean(speedups)
    return (f"{what}: {len(speedups)} of {shapes} shapes, geomean x{mean:.3f} "
            f"(x{min(speedups):.2f}-{max(speedups):.2f}), faster by over 5% at "
            f"{sum(x > 1.05 for x in speedups)}, slower by over 5% at "
            f"{sum(x < 1 / 1.05 for x in speedups)}")


if __name__ == "__main__":
    main()
