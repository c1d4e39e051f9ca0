#!/usr/bin/env python3
"""The optional reports of scripts/call_overhead.py, apart from its timing of whole calls:
where a cached call's host time goes (--pieces, --python, --marks) and the device span of
each launch of a call (--steps). They take a call apart with pyopencl's and clgemm's
internals, so they live beside the script that measures the call as it stands."""

from __future__ import annotations

import statistics
import time

import pyopencl as cl

import clgemm
from clgemm import arrays, db

def step_spans(ctx, a, b, kernel: str | None, repeat: int) -> dict:
    """Microseconds, medians over `repeat` synchronised calls: each launch of gemm()'s plan
    at this shape (its bound steps enqueued again in order, on a profiling queue), the gap
    before each, and the whole sequence from the first start to the last end. Where the
    plan is guarded (clgemm.guard), the same plan with beta = 1 (whose kernel is built to
    return on a flagged call) and the plan unguarded run in turn with it."""
    pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    a, b = a.with_queue(pq), b.with_queue(pq)
    out = clgemm.gemm(pq, a, b, kernel=kernel)
    m, n, k = a.shape[0], b.shape[1], a.shape[1]
    plan = clgemm.Plan(pq, m, n, k, kernel=kernel)
    calls = {"call": (plan, 0.0)}
    if plan.describe()["guarded"]:
        calls["call with beta 1"] = (plan, 1.0)
        calls["unguarded call"] = (clgemm.Plan(pq, m, n, k, kernel=kernel, guard=False), 0.0)
    steps = {}
    for name, (p, beta) in calls.items():
        p(a, b, out, beta=beta)          # binds a layout's steps to a, b, out
        steps[name] = list(p._variants.values())[-1].steps
    pq.finish()
    runs = {name: [] for name in calls}
    for _ in range(repeat):
        for name, seq in steps.items():
            evs = []
            for step in seq:      # a guard.Beside step: its kernel, scan and fallback
                ev = step()
                evs += list(step.events[1:]) if hasattr(step, "events") else [ev]
            evs[-1].wait()
            runs[name].append([(ev.profile.start, ev.profile.end) for ev in evs])
    report = {}
    for name, seq in steps.items():
        names = [n for s in seq for n in ([_label(k) for k in s.kernel]
                                          + ["scan (second queue)", "fallback"]
                 if hasattr(s, "events") else [_label(s)])]
        rs = runs[name]
        report[name] = {
            "steps": [{"name": nm,
                       "span_us": statistics.median((r[i][1] - r[i][0]) / 1e3 for r in rs),
                       "gap_before_us": statistics.median((r[i][0] - r[i - 1][1]) / 1e3
                                                          for r in rs) if i else 0.0}
                      for i, nm in enumerate(names)],
            "whole_us": statistics.median((max(e for _, e in r) - min(s for s, _ in r)) / 1e3
                                          for r in rs)}
    return report


def _label(step) -> str:
    """A bound launch's kernel name (a copy's type name)."""
    return getattr(getattr(step, "knl", None), "function_name", type(step).__name__)


PIECES = [   # statements of a cached call, timed alone (names from pieces() below)
    "clgemm.gemm(queue, a, b)", "plan(a, b)", "step()", "bound_args()",
    "queue.device", "db.version(queue.device)", "hash(queue)",
    "_plans.get((queue, 16, 16, 16, False, False, None, None, 'auto', 'auto', None, True, "
    "db.version(queue.device)))",
    "operands.scalar(1.0, 'alpha')", "a.shape == b.shape", "a.dtype == F32",
    "a.context == ctx", "a.flags.forc", "a.events", "a.base_data", "a.offset",
    "pool(4096)", "knl_.set_arg(i_, a.base_data)",
    "new_array(queue, (16, 16), (64, 4), a.base_data, pool, ev)",
    "with lock: pass", "threading.get_ident()",
]


def pieces(queue, a, b, plan, step, bound_args, number: int = 2000) -> dict[str, float]:
    """Microseconds per statement of the cached path, the fastest of 5 runs of `number`
    (the queue is finished between runs, so enqueues do not pile up)."""
    import threading
    import timeit

    from clgemm import operands
    import importlib
    gemm_module = importlib.import_module("clgemm.gemm")
    from clgemm.operands import F32
    variant = next(iter(plan._variants.values()))
    knl_, i_, _ = variant.kslots[0]
    ev = step()
    queue.finish()
    env = dict(clgemm=clgemm, queue=queue, a=a, b=b, plan=plan, step=step,
               bound_args=bound_args, db=db, operands=operands, F32=F32, ctx=queue.context,
               _plans=gemm_module._plans, pool=clgemm.memory_pool(queue), knl_=knl_, i_=i_,
               new_array=arrays.new_array, ev=ev, lock=threading.RLock(),
               threading=threading)
    out = {}
    for stmt in PIECES:
        runs = []
        for _ in range(5):
            runs.append(timeit.timeit(stmt, globals=env, number=number) / number * 1e6)
            queue.finish()
        out[stmt] = min(runs)
    return out


def python_us(queue, a, b, plan, number: int = 20000) -> dict[str, float]:
    """Microseconds of Python in a cached gemm() and plan(a, b), every bound launch replaced
    by handing back one prepared event (the fastest of 5 runs of `number` calls): the host
    work of a call without the driver's, which varies with the host less."""
    import timeit

    from clgemm import build
    ev = cl.enqueue_marker(queue)
    queue.finish()
    launch = build.Bound.__call__
    build.Bound.__call__ = lambda self, wait_for=None: ev
    try:
        return {name: min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6
                for name, call in (("gemm", lambda: clgemm.gemm(queue, a, b)),
                                   ("plan", lambda: plan(a, b)))}
    finally:
        build.Bound.__call__ = launch


def marks(queue, a, b, repeat: int) -> dict[str, float]:
    """Median microseconds of each part of a synchronised gemm() call (--marks): from the
    call to the driver's enqueue of its (first) kernel, the enqueue, the rest of the call
    after it, and queue.finish(); the result is dropped before the finish, as the bench
    drops it. Wrapping the enqueue adds about 0.5 us to the parts on either side of it."""
    enqueue0 = cl.enqueue_nd_range_kernel
    stamps: list = [0, 0]

    def enqueue(*args, **kwargs):
        if not stamps[0]:
            stamps[0] = time.perf_counter_ns()
        ev = enqueue0(*args, **kwargs)
        stamps[1] = time.perf_counter_ns()
        return ev

    parts: dict[str, list[float]] = {k: [] for k in ("to_enqueue", "enqueue", "after", "finish")}
    cl.enqueue_nd_range_kernel = enqueue
    try:
        clgemm.gemm(queue, a, b)
        queue.finish()
        for _ in range(repeat):
            stamps[0] = 0
            t0 = time.perf_counter_ns()
            clgemm.gemm(queue, a, b)
            t1 = time.perf_counter_ns()
            queue.finish()
            t2 = time.perf_counter_ns()
            for name, (x, y) in zip(parts, ((t0, stamps[0]), (stamps[0], stamps[1]),
                                            (stamps[1], t1), (t1, t2))):
                parts[name].append((y - x) / 1e3)
    finally:
        cl.enqueue_nd_range_kernel = enqueue0
    return {name: statistics.median(v) for name, v in parts.items()}


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Run them through scripts/call_overhead.py: --pieces, --python, --marks, --steps.")
    ap.parse_args()
    ap.error("nothing to run on its own: give scripts/call_overhead.py the report's option")
