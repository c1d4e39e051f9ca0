"""Sweep a kernel's parameter space on one device: compile in a thread pool ahead of the
timer, verify each configuration on an odd shape against float64, time it at the target
shape, then re-measure the best five interleaved. Used to choose the registry defaults
(results/ records each run's command); `clgemm tune` is the user-facing tuner.

    python3 scripts/sweep.py --kernels 3,4,5 --size 4096 --budget-s 120 --out sweep.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import build, device, kernels, operands, timing, verify  # noqa: E402
from clgemm.gemm import GemmPlan  # noqa: E402


def candidates(kern, dev, min_nt=64, max_nt=256):
    out = []
    for p in kern.space():
        if kern.violations(p, dev):
            continue
        lx, ly = kern.geometry.local_size(p)
        if "TS" not in p and not (min_nt <= lx * ly <= max_nt):
            continue
        if p.get("WIDTH", 4) == 1:
            continue
        out.append(p)
    return out


class Bench:
    def __init__(self, q, m, n, k):
        self.q, self.m, self.n, self.k = q, m, n, k
        rng = np.random.default_rng()
        self.a = verify.random_matrix(rng, m, k)
        self.b = verify.random_matrix(rng, k, n)
        self.mats = {}
        # odd check shape: not a multiple of any tile or vector width
        self.ca = verify.random_matrix(rng, 263, 389)
        self.cb = verify.random_matrix(rng, 389, 517)
        self.cref = verify.reference(self.ca, self.cb)

    def operands(self, al):
        if al not in self.mats:
            q = self.q
            self.mats[al] = (operands.raw(q, self.a, al), operands.raw(q, self.b, al),
                             operands.empty(q, self.m, self.n, operands.rounded(self.n, al)))
        return self.mats[al]

    def check(self, plan):
        q, al = self.q, plan.align
        am, bm = operands.raw(q, self.ca, al), operands.raw(q, self.cb, al)
        cm = operands.poison(q, operands.empty(q, 263, 517, operands.rounded(517, al)))
        cl.wait_for_events(plan.bind(am, bm, cm)())
        return verify.rel_error(operands.to_host(q, cm), self.cref)

    def time(self, plan, repeat):
        am, bm, cm = self.operands(plan.align)
        return timing.profile(plan.bind(am, bm, cm), repeat=repeat, warmup=1)


def sweep(q, kern, bench, budget_s, repeat, seed, log):
    pts = candidates(kern, q.device)
    random.Random(seed).shuffle(pts)
    t0 = time.time()
    rows = []
    tol = verify.tolerance(389)

    def compile_one(p):
        try:
            return build.program(q.context, kern, p), None
        except build.BuildError as e:
            return None, str(e)[:300]

    with ThreadPoolExecutor(8) as pool:
        futs = [(p, pool.submit(compile_one, p)) for p in pts]
        for p, f in futs:
            if time.time() - t0 > budget_s:
                break
            prg, err = f.result()
            row = {"kernel": kern.key, "params": p}
            if prg is None:
                row.update(status="compile_error", error=err)
            else:
                try:
                    plan = GemmPlan(q, kern.key, p)
                    e = bench.check(plan)
                    if not e <= tol:
                        row.update(status="wrong", rel_error=e)
                    else:
                        t = bench.time(plan, repeat)
                        row.update(status="ok", rel_error=e, ms=t.median,
                                   gflops=timing.gflops(bench.m, bench.n, bench.k, t.median))
                except cl.Error as ex:
                    row.update(status="launch_error", error=str(ex)[:300])
            rows.append(row)
            log.write(json.dumps(row) + "\n")
        for _, f in futs:
            f.cancel()
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: -r["gflops"])
    top = ok[:5]
    # Re-measure the top five interleaved, so drift affects them alike.
    plans = [GemmPlan(q, kern.key, r["params"]) for r in top]
    samples = [[] for _ in plans]
    for _ in range(5):
        for i, plan in enumerate(plans):
            samples[i].extend(bench.time(plan, 4).ms)
    for r, s in zip(top, samples):
        r["ms_final"] = statistics.median(s)
        r["gflops_final"] = timing.gflops(bench.m, bench.n, bench.k, r["ms_final"])
    top.sort(key=lambda r: -r["gflops_final"])
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {"kernel": kern.key, "valid": len(pts), "evaluated": len(rows), "counts": counts,
            "seconds": time.time() - t0, "top": top}


def finalists(q, logs, keys, top, sizes, rounds=3):
    """Evaluate the `top` best configurations found for any of `keys` on every one of those
    kernels at every size, interleaved; the winner per kernel has the best geometric mean."""
    rows = [json.loads(line) for f in logs for line in open(f)]
    shared = {p.name for p in kernels.get(keys[0]).params}
    pool = []
    for key in keys:
        ok = sorted((r for r in rows if r["kernel"] == key and r["status"] == "ok"),
                    key=lambda r: -r["gflops"])
        pool += [r["params"] for r in ok[:top] if set(r["params"]) == shared]
    pool = [dict(t) for t in dict.fromkeys(tuple(sorted(p.items())) for p in pool)]
    benches = {s: Bench(q, s, s, s) for s in sizes}
    plans = [(key, p, GemmPlan(q, key, p)) for key in keys for p in pool
             if not kernels.get(key).violations(p, q.device)]
    tol = verify.tolerance(389)
    plans = [t for t in plans if benches[sizes[0]].check(t[2]) <= tol]
    ms = {(i, s): [] for i in range(len(plans)) for s in sizes}
    for _ in range(rounds):
        for s in sizes:
            for i, (_, _, plan) in enumerate(plans):
                ms[i, s].extend(benches[s].time(plan, 3).ms)
    out = []
    for i, (key, p, _) in enumerate(plans):
        g = {s: timing.gflops(s, s, s, statistics.median(ms[i, s])) for s in sizes}
        gm = float(np.exp(np.mean(np.log(list(g.values())))))
        out.append({"kernel": key, "params": p, "gflops": g, "geomean": gm})
    out.sort(key=lambda r: -r["geomean"])
    best = {key: next(r for r in out if r["kernel"] == key) for key in keys}
    for key, r in best.items():
        print(f"kernel {key} best: {r['params']} " +
              " ".join(f"{s}^3 {v:.0f}" for s, v in r["gflops"].items()), flush=True)
    return {"finalists": out, "best": best}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--finalists", default=None, help="sweep .jsonl logs, comma-separated")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--kernels", default="3,4,5")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--budget-s", type=float, default=120)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="sweep.json")
    ap.add_argument("--device", default=None)
    a = ap.parse_args()
    q = device.queue(device.select(a.device))
    if a.finalists:
        r = finalists(q, a.finalists.split(","), a.kernels.split(","), a.top,
                      [int(s) for s in a.sizes.split(",")])
        Path(a.out).write_text(json.dumps(r | {"command": " ".join(sys.argv),
                                               "date": time.strftime("%Y-%m-%d")}, indent=1))
        return
    bench = Bench(q, a.size, a.size, a.size)
    results = []
    with open(Path(a.out).with_suffix(".jsonl"), "w") as log:
        for key in a.kernels.split(","):
            r = sweep(q, kernels.get(key), bench, a.budget_s, a.repeat, a.seed, log)
            results.append(r)
            print(f"kernel {key}: {r['evaluated']}/{r['valid']} evaluated in {r['seconds']:.0f}s "
                  f"{r['counts']}", flush=True)
            for t in r["top"]:
                print(f"   {t['gflops_final']:8.0f} GFLOPS  {t['params']}", flush=True)
    info = device.describe(q.device)
    Path(a.out).write_text(json.dumps({"device": info, "size": a.size, "command": " ".join(sys.argv),
                                       "date": time.strftime("%Y-%m-%d"), "sweeps": results}, indent=1))


if __name__ == "__main__":
    main()
