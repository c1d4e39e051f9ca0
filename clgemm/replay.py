"""Search strategies replayed offline on a complete sweep: the strategy proposes, the
recorded GFLOPS answer. How many evaluations each seed needs to come within a margin of
the best tells how robust a strategy is, with no device at all.

    python -m clgemm.replay SWEEP.jsonl --kernel 5 --strategy cma --seeds 1-5 [--json]

The space searched is the set of configurations the log holds (the registry's may have
grown since it was recorded): each parameter's values are those of the log, and a point
the log lacks is one the device rejected (as the kernel-5 sweep's 4,088 points are exactly
those the H200's limits admit), told to the model without costing an evaluation.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

from . import kernels, strategies
from .tunelog import key, read_records


class _Logged:
    """The kernel, whose valid points are those of the log."""

    def __init__(self, kern: kernels.Kernel, table: dict):
        self._kern, self._table = kern, table

    def __getattr__(self, name):
        return getattr(self._kern, name)

    def violations(self, p, device=None) -> list[str]:
        return [] if key(p) in self._table else ["not in the log"]


def load(path: str, kernel: str) -> tuple[_Logged, list[dict], dict]:
    """(the kernel with its space cut to the log's values, the log's points, {point: GFLOPS
    or None})."""
    kern = kernels.tunable(kernel)
    if not Path(path).is_file():
        raise ValueError(f"{path} is not a file")
    recs = read_records(path, kern, quiet=True)
    if not any(r["status"] == "ok" for r in recs):
        raise ValueError(f"{path} holds no correct record of kernel {kern.key} (a log of "
                         f"another kernel, or of a sweep that found none)")
    table = {key(r["params"]): (r["gflops"] if r["status"] == "ok" else None) for r in recs}
    points = [dict(k) for k in table]
    kern = dataclasses.replace(kern, params=tuple(
        dataclasses.replace(p, space=tuple(sorted({q[p.name] for q in points})))
        for p in kern.params))
    return _Logged(kern, table), points, table


def evaluations_to_reach(strategy: strategies.Strategy, table: dict, target: float,
                         limit: int) -> int | None:
    """Evaluations until one scores at least `target`; None if `limit` pass first."""
    for n in range(1, limit + 1):
        p = strategy.propose()
        if p is None:
            return None
        g = table.get(key(p))
        strategy.observe(p, g)
        if g is not None and g >= target:
            return n
    return None


def replay(path: str, kernel: str = "5", name: str = "tpe", seeds=range(1, 6),
           within: float = 0.03, limit: int | None = None) -> dict:
    kern, points, table = load(path, kernel)
    best = max(g for g in table.values() if g)
    target = (1 - within) * best
    limit = limit or len(points)
    counts = []
    for seed in seeds:
        strat = strategies.make(name, points, {}, seed, kern, None)
        counts.append(evaluations_to_reach(strat, table, target, limit))
    done = [c for c in counts if c is not None]
    worst = max(done) if len(done) == len(counts) else None
    return {"log": path, "kernel": kernel, "strategy": name,
            "points": len(points), "best_gflops": best, "within": within, "evaluations": counts,
            "median": statistics.median(done) if done else None, "worst": worst,
            "worst_pct_of_space": None if worst is None else round(100 * worst / len(points), 2)}


def _seeds(text: str) -> list[int]:
    """--seeds: a range lo-hi or a list a,b,c of integers from 0 to 2^32 - 1."""
    lo, dash, hi = text.partition("-")
    words = [lo, hi] if dash else text.split(",")
    if not all(w.strip().isascii() and w.strip().isdigit() and len(w.strip()) <= 10
               for w in words) or any(int(w) >= 2**32 for w in words):
        raise ValueError(f"--seeds {text!r}: give a range like 1-5 or a list like 1,7,9 of "
                         f"integers from 0 to 2^32 - 1")
    seeds = list(range(int(lo), int(hi) + 1)) if dash else [int(w) for w in words]
    if not seeds:
        raise ValueError(f"--seeds {text!r} runs backwards: write it low-high")
    return seeds


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m clgemm.replay", description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="a JSON Lines tuning log of a complete sweep")
    ap.add_argument("--kernel", default="5")
    ap.add_argument("--strategy", default="tpe", choices=strategies.NAMES)
    ap.add_argument("--seeds", default="1-5", help="e.g. 1-5 or 1,7,9")
    ap.add_argument("--within", type=float, default=0.03)
    ap.add_argument("--limit", type=int, default=None, help="evaluations per seed at most")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not 0 <= a.within < 1:          # NaN fails this too
        ap.error(f"--within {a.within}: a fraction from 0 to below 1, e.g. 0.03")
    if a.limit is not None and a.limit < 1:
        ap.error(f"--limit {a.limit}: at least 1 evaluation")
    try:
        out = replay(a.log, a.kernel, a.strategy, _seeds(a.seeds), a.within, a.limit)
    except OSError as e:
        ap.error(f"cannot read {a.log}: {e.strerror or e}")
    except ValueError as e:           # the log, the kernel or the seeds
        ap.error(str(e))
    out["command"] = "python -m clgemm.replay " + " ".join(argv if argv is not None else sys.argv[1:])
    if a.json:
        print(json.dumps(out))
    else:
        print(f"{a.strategy}: evaluations to within {100 * a.within:g}% of "
              f"{out['best_gflops']:.0f} GFLOPS, seeds {a.seeds}: {out['evaluations']}; median "
              f"{out['median']}, worst {out['worst']} ({out['worst_pct_of_space']}% of "
              f"{out['points']} points)")


if __name__ == "__main__":
    main()
