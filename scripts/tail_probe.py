"""Does a split-K launch of C's last tile rows, on a second queue, fill the last wave of the
plain launch of the rest? At 8192^3 the tuned launch's 4096 tiles are 15.5 waves of 264
resident groups, and the half-empty last wave costs ~2.3% (session 7). Here the plain
build covers C's first R tile rows on one queue while the SPLIT_K build covers the last
ones in S slices on another, both flushed before either is waited for, so that the
device may run the second kernel's groups beside the first one's last wave.

Each variant: host wall time of enqueue-to-finish of both queues, median of R calls after
a warm-up, interleaved rounds; C checked against float64 on sampled rows (poisoned first);
each kernel's start and end (profiling events) in one call, to see whether they overlap.

    python3 scripts/tail_probe.py --size 8192 --rows 61:4,62:2,60:4 --rounds 3 --out tail.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import device, operands, timing, verify  # noqa: E402
from clgemm.gemm import GemmPlan  # noqa: E402
from clgemm.operands import Matrix  # noqa: E402


def rows_of(q, m: Matrix, r0: int, r1: int) -> Matrix:
    """Rows r0..r1-1 of a device matrix as a sub-buffer (offsets must meet the device's
    base-address alignment, which whole tile rows of these sizes do)."""
    if r0 == 0:
        return Matrix(m.buf, r1, m.cols, m.ld)
    sub = m.buf.get_sub_region(r0 * m.ld * 4, (r1 - r0) * m.ld * 4)
    return Matrix(sub, r1 - r0, m.cols, m.ld)


def priority_queue(ctx: cl.Context, dev: cl.Device, level: str) -> cl.CommandQueue:
    """A profiling queue with cl_khr_priority_hints' priority (pyopencl has no parameter for
    it): the device may then run a low-priority queue's work-groups only where the others
    leave room, e.g. in their last wave."""
    import ctypes
    import glob
    import os
    libs = glob.glob(os.path.join(os.path.dirname(cl.__file__) + ".libs", "libOpenCL*")) + ["libOpenCL.so.1"]
    lib = ctypes.CDLL(libs[0])
    fn = lib.clCreateCommandQueueWithProperties
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                   ctypes.POINTER(ctypes.c_int32)]
    levels = {"high": 1, "medium": 2, "low": 4}      # CL_QUEUE_PRIORITY_{HIGH,MED,LOW}_KHR
    props = (ctypes.c_uint64 * 5)(0x1093, 2, 0x1096, levels[level], 0)   # PROPERTIES: PROFILING
    err = ctypes.c_int32()
    ptr = fn(ctx.int_ptr, dev.int_ptr, props, ctypes.byref(err))
    if err.value != 0 or not ptr:
        raise RuntimeError(f"clCreateCommandQueueWithProperties: error {err.value}")
    return cl.CommandQueue.from_int_ptr(ptr, retain=False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--rows", default="61:4,62:2,60:4", help="plain tile rows : slices of the rest")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--priority", action="store_true",
                    help="queue 1 high, queue 2 low priority (cl_khr_priority_hints)")
    ap.add_argument("--out")
    a = ap.parse_args()
    n = a.size
    dev = device.select()
    print("cl_khr_priority_hints:", "cl_khr_priority_hints" in dev.extensions, flush=True)
    if a.priority:
        ctx = cl.Context([dev])
        q1, q2 = priority_queue(ctx, dev, "high"), priority_queue(ctx, dev, "low")
    else:
        q1 = device.queue(dev)
        q2 = cl.CommandQueue(q1.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng()
    ah, bh = verify.random_matrix(rng, n, n), verify.random_matrix(rng, n, n)
    rows = verify.sample_rows(rng, n, 40)
    rows = np.unique(np.concatenate([rows, [n - 1, n - 200]]))
    ref = verify.reference(ah[rows], bh)
    A, B = operands.raw(q1, ah, 4), operands.raw(q1, bh, 4)
    C = operands.empty(q1, n, n, n)
    plan = GemmPlan(q1, "5", shape=(n, n, n))
    tsm = plan.params["TSM"]
    print("params", plan.params, "source", plan.source, flush=True)

    def variant(spec: str):
        if spec == "whole":
            whole = plan.bind(A, B, C)
            return lambda: [whole()]
        top, s = map(int, spec.split(":"))
        r = top * tsm
        first = plan.bind(rows_of(q1, A, 0, r), B, rows_of(q1, C, 0, r))
        rest_plan = GemmPlan(q2, "5", plan.params, split_k=s)
        rest = rest_plan.bind(rows_of(q1, A, r, n), B, rows_of(q1, C, r, n))

        def call():
            e1 = first()
            q1.flush()
            e2 = rest()
            q2.flush()
            return [e1, e2]
        return call

    specs = ["whole"] + a.rows.split(",")
    calls = {s: variant(s) for s in specs}
    results = {s: {"host_ms": [], "err": None} for s in specs}
    for s, call in calls.items():                  # check each, output poisoned first
        operands.poison(q1, C)
        q1.finish()
        call()
        q1.finish()
        q2.finish()
        err = verify.rel_error(operands.rows_to_host(q1, C, rows), ref)
        results[s]["err"] = float(err)
        print(f"{s}: rel error {err:.2e}", flush=True)
        assert err <= verify.tolerance(n), s
    for s, call in calls.items():                  # do the two launches overlap?
        call()
        q1.finish()
        q2.finish()
        evs = call()
        q1.finish()
        q2.finish()
        evs = [e for x in evs for e in timing.events(x)]
        t0 = min(e.profile.start for e in evs)
        results[s]["events_us"] = [((e.profile.start - t0) / 1e3, (e.profile.end - t0) / 1e3)
                                   for e in evs]
        print(f"{s}: kernels (start, end) us: " + ", ".join(
            f"({b:.0f}, {e:.0f})" for b, e in results[s]["events_us"]), flush=True)
    for _ in range(a.rounds):
        for s, call in calls.items():
            call()
            q1.finish()
            q2.finish()
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                call()
                q1.finish()
                q2.finish()
                results[s]["host_ms"].append((time.perf_counter() - t0) * 1e3)
    print(f"{'variant':>8} {'median ms':>10} {'GFLOPS':>8} {'x whole':>8}")
    base = statistics.median(results["whole"]["host_ms"])
    for s in specs:
        med = statistics.median(results[s]["host_ms"])
        results[s]["gflops"] = timing.gflops(n, n, n, med)
        print(f"{s:>8} {med:10.3f} {results[s]['gflops']:8.0f} {base / med:8.3f}")
    if a.out:
        Path(a.out).write_text(json.dumps({"size": n, "params": plan.params, "results": results}, indent=1))


if __name__ == "__main__":
    main()
