#!/usr/bin/env python3
"""Host time of a repeated gemm() call against a bare pyopencl kernel launch, in one run.

What a cached call costs above its kernels: for each contender, the median host time of
the call alone (it returns before the device finishes; queue.finish() follows, untimed)
and of the call plus queue.finish(), after a warm-up, the contenders interleaved in rounds:
  bare      an empty kernel, pre-bound, enqueued and finished (the floor of any call)
  gemm      clgemm.gemm(queue, a, b) on device Arrays, a fresh output each call
  gemm_c    clgemm.gemm(queue, a, b, c) into an existing Array
  plan      a clgemm.Plan called as plan(a, b)
  uncached  gemm() with its plan cache emptied before each call (the first-call path,
            programs already built)
Prints a table and, with --json, writes the rows to a file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clgemm


def host_us(call, queue, repeat: int) -> tuple[list[float], list[float]]:
    """(call alone, call + finish) in microseconds, `repeat` of each."""
    call()
    queue.finish()
    alone, synced = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        queue.finish()
        alone.append((t1 - t0) * 1e6)
        t0 = time.perf_counter()
        call()
        queue.finish()
        synced.append((time.perf_counter() - t0) * 1e6)
    return alone, synced


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,512", help="square sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=200, help="calls per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", dest="json_path", default=None, help="write the rows here")
    args = ap.parse_args()
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, "__kernel void empty(__global float *x) {}").build()
    knl = cl.Kernel(prg, "empty")
    rows = []
    rng = np.random.default_rng()
    for size in (int(s) for s in args.sizes.split(",")):
        a = cla.to_device(queue, rng.uniform(-1, 1, (size, size)).astype(np.float32))
        b = cla.to_device(queue, rng.uniform(-1, 1, (size, size)).astype(np.float32))
        c = cla.zeros(queue, (size, size), np.float32)
        knl.set_arg(0, c.base_data)
        plan = clgemm.Plan(queue, size, size, size)

        def uncached():
            clgemm.clear_cache()
            clgemm.gemm(queue, a, b)

        calls = {"bare": lambda: cl.enqueue_nd_range_kernel(queue, knl, (32,), (32,)),
                 "gemm": lambda: clgemm.gemm(queue, a, b),
                 "gemm_c": lambda: clgemm.gemm(queue, a, b, c),
                 "plan": lambda: plan(a, b),
                 "uncached": uncached}
        alone: dict[str, list[float]] = {name: [] for name in calls}
        synced: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(args.rounds):
            for name, call in calls.items():
                x, y = host_us(call, queue, args.repeat)
                alone[name] += x
                synced[name] += y
        row = {"size": size, "device": queue.device.name.strip(),
               "driver": queue.device.driver_version.strip(),
               **{f"{name}_us": statistics.median(ts) for name, ts in alone.items()},
               **{f"{name}_sync_us": statistics.median(ts) for name, ts in synced.items()}}
        row["gemm_over_bare_us"] = row["gemm_us"] - row["bare_us"]
        rows.append(row)
    names = list(calls)
    for what, suffix in (("the call alone", "_us"), ("call + finish", "_sync_us")):
        print(f"median host us, {what}")
        print("size  " + "  ".join(f"{n:>9}" for n in names))
        for r in rows:
            print(f"{r['size']:<5} " + "  ".join(f"{r[n + suffix]:9.1f}" for n in names))
    for r in rows:
        print(f"{r['size']}: a cached gemm() call takes {r['gemm_over_bare_us']:.1f} us of host "
              f"time more than a bare kernel launch")
    print("plan cache:", clgemm.cache_info())
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
