"""How many evaluations each search strategy needs to get within 3% of the best, replayed
offline on a recorded sweep: the strategies propose, the recorded GFLOPS answer. Median
over seeds. The space searched is the set of configurations the log holds, so a log of a
complete grid sweep answers the question for the kernel's whole space.

    python3 scripts/search_efficiency.py results/h200/tune/kernel5-4096-grid-partial-call4.jsonl \
        --kernel 5 --seeds 5 --out efficiency.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import db, kernels  # noqa: E402
from clgemm.tune import TPE, RandomSearch, _key  # noqa: E402


class NoDevice:
    """Device limits that reject nothing: the recorded points were valid on their device."""
    max_work_group_size = 1 << 30
    max_work_item_sizes = [1 << 30] * 3
    local_mem_size = 1 << 40


def evaluations_to_reach(strategy, table: dict, target: float, limit: int) -> int | None:
    for n in range(1, limit + 1):
        p = strategy.propose()
        if p is None:
            return None
        g = table.get(_key(p))
        strategy.observe(p, g)
        if g is not None and g >= target:
            return n
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--kernel", default="5")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--within", type=float, default=0.03)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    kern = kernels.get(a.kernel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", db.DataWarning)
        recs = list(db.read_log(Path(a.log), kern))
    table = {_key(r["params"]): (r["gflops"] if r["status"] == "ok" else None) for r in recs}
    space = [r["params"] for r in recs]
    # the strategies search the space the log covers (the registry's may have grown since)
    kern = dataclasses.replace(kern, params=tuple(
        dataclasses.replace(p, space=tuple(sorted({q[p.name] for q in space}))) for p in kern.params))
    best = max(g for g in table.values() if g)
    target = (1 - a.within) * best
    out = {"log": a.log, "points": len(space), "best_gflops": best, "within": a.within,
           "command": " ".join(sys.argv), "strategies": {}}
    for name in ("random", "tpe"):
        counts = []
        for seed in range(1, a.seeds + 1):
            if name == "random":
                strat = RandomSearch(space, {}, seed)
            else:
                # TPE proposes from the whole declared space; points the log lacks count as
                # unmeasurable (no GFLOPS) and cost an evaluation like a failure would
                strat = TPE(space, {}, seed, kern, NoDevice())
            counts.append(evaluations_to_reach(strat, table, target, len(space)))
        done = [c for c in counts if c is not None]
        med = statistics.median(done) if len(done) == len(counts) else None
        out["strategies"][name] = {"evaluations": counts, "median": med,
                                   "median_pct_of_space": None if med is None else 100 * med / len(space)}
        print(f"{name}: evaluations to within {100 * a.within:.0f}% of {best:.0f} GFLOPS over "
              f"{a.seeds} seeds: {counts}, median {med} "
              f"({'n/a' if med is None else f'{100 * med / len(space):.1f}%'} of {len(space)} points)",
              flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
