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
    recs = read_records(path, kern, quiet=True)
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
    lo, dash, hi = text.partition("-")
    return list(range(int(lo), int(hi) + 1)) if dash else [int(s) for s in text.split(",")]


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
    out = replay(a.log, a.kernel, a.strategy, _seeds(a.seeds), a.within, a.limit)
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
