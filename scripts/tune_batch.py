"""Run several tuning jobs in one device session and write their summaries.

    python3 scripts/tune_batch.py --job 5:2048:random:300:60 --job 5:4096:grid:0:330 \
        --out tune_summary.json
Each job is KERNEL:SIZE:STRATEGY:BUDGET:TIME_LIMIT (BUDGET 0 = the whole space); SIZE is
S for S^3 or MxNxK.
Logs and the database go under $CLGEMM_HOME as `clgemm tune` writes them. With
--compare, each job's best and the registry defaults are then run against each other
(`clgemm run`'s measurement, alternated ROUNDS times) to give what tuning gained.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import device, kernels  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402
from clgemm.tune import tune  # noqa: E402

ROUNDS = 2


def compare(queue, kernel: str, shape: tuple[int, int, int], best: dict) -> dict:
    """GFLOPS of the tuned best and of the defaults, each the median over ROUNDS
    alternated runs (each a median of profiled launches), both verified."""
    runs: dict[str, list] = {"tuned": [], "defaults": []}
    sets = {"tuned": best, "defaults": kernels.get(kernel).defaults}
    for _ in range(ROUNDS):
        for name, params in sets.items():
            r = run_gemm(queue, *shape, kernel=kernel, params=params)
            runs[name].append(r["gflops"] if r["verified"] else None)
    med = {n: (None if None in v else sorted(v)[len(v) // 2]) for n, v in runs.items()}
    gain = med["tuned"] / med["defaults"] if med["tuned"] and med["defaults"] else None
    return {"tuned_gflops": med["tuned"], "defaults_gflops": med["defaults"], "gain": gain,
            "runs": runs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", action="append", required=True)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--out", default="tune_summary.json")
    ap.add_argument("--compare", action="store_true", help="time the best against the defaults")
    ap.add_argument("--fresh", action="store_true", help="ignore earlier logs of these jobs")
    a = ap.parse_args()
    queue = device.queue(device.select()) if a.compare else None
    out = {"device": device.describe(device.select()), "date": time.strftime("%Y-%m-%d"),
           "command": " ".join(sys.argv), "jobs": []}
    for job in a.job:
        kernel, size, strategy, budget, limit = job.split(":")
        m, n, k = (int(d) for d in size.split("x")) if "x" in size else (int(size),) * 3
        res = tune(kernel, m, n, k, strategy=strategy, budget=int(budget) or None,
                   time_limit=float(limit) or None, workers=a.workers, fresh=a.fresh)
        summ = res.summary()
        out["jobs"].append(summ)
        b = summ["best"]
        print(f"kernel {kernel} {m}x{n}x{k} {strategy}: {len(res.records)} evaluated "
              f"({summ['evaluated_now']} now, {summ['configs_per_second']}/s over "
              f"{summ['seconds']} s) of {summ['valid']} valid / {summ['raw']} raw; "
              f"{summ['status_counts']}; best {b['gflops']:.0f} GFLOPS {b['params']}", flush=True)
        if a.compare:
            summ["compare"] = compare(queue, kernel, (m, n, k), b["params"])
            c = summ["compare"]
            print(f"  tuned {c['tuned_gflops']} vs defaults {c['defaults_gflops']}: "
                  f"gain {c['gain']}", flush=True)
        Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
