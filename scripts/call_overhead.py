#!/usr/bin/env python3
"""Host time of a repeated gemm() call against a bare pyopencl kernel launch, in one run.

What a cached call costs above its kernels: for each contender, the median host time of
the call alone (it returns before the device finishes; queue.finish() follows, untimed)
and of the call plus queue.finish(), after a warm-up, the contenders interleaved in rounds:
  bare      an empty kernel, pre-bound, enqueued and finished (the floor of any call)
  bound     gemm()'s own first kernel as the plan bound it, enqueued again as it stands
            (the driver's cost of launching that kernel)
  bound_args  the same after setting its buffer arguments again, as each call does
  gemm      clgemm.gemm(queue, a, b) on device Arrays, a fresh output each call
  gemm_c    clgemm.gemm(queue, a, b, c) into an existing Array
  gemm_flush  gemm() then queue.flush(): whether the driver holds a launch back until the
            queue is flushed (the kernel would then start only at queue.finish())
  gemm_wait   gemm(), synchronised by waiting on the result's event (clWaitForEvents)
            instead of queue.finish()
  gemm_poll   gemm(), synchronised by a flush and then polling the result's event status
            in a loop (no driver wait at all): how much of "+ sync" is the driver's wait
  bound_poll  the bound kernel, synchronised the same way
  floor     what any cached call must do: a pooled output, the bound kernel pointed at it,
            enqueued, and the result Array made (no lookups, no checks)
  floor_same  floor without pointing the kernel at its output again where the pool handed
            back the buffer it already points at: what setting that argument costs
  plan      a clgemm.Plan called as plan(a, b)
  uncached  gemm() with its plan cache and its choices of entries emptied before each
            call (a new shape's first call, programs already built)
  plan_new  clgemm.Plan(queue, m, n, k) made with the choices of entries emptied: a new
            shape's planning, before its first call lays it out
  in_turn   gemm() on 40 shapes in turn, m, m+1, ..., m+39 rows (a loop over more shapes
            than gemm()'s cache once kept: 32 plans)
  cublas    torch's `a @ b` (cuBLAS, TF32 off) with torch.cuda.synchronize(), where torch
            has CUDA: the same whole call on the other side
Besides host times, where the call is one kernel, the device span of that kernel when each
call is synchronised (profiling events) and back to back (the tuner's measure), and
cuBLAS's span by CUDA events, of one call and back to back: whole call minus span is what
the call costs around its kernel. With --marks, where a synchronised gemm() call's host time
goes: from the call to the driver's enqueue, the enqueue itself, the rest of the call after
it, and the wait in queue.finish(). --only keeps the contenders named (comma-separated). With --steps, the device span of each launch of the call (e.g. a guarded kernel's
scan, kernel and fallback) and of the whole sequence, each call synchronised. --kernel
names the kernel of every clgemm call. Prints a table and, with --json, writes the rows
to a file.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clgemm
from clgemm import arrays, choice, db, entries, kernels
from call_reports import marks, pieces, python_us, step_spans   # (scripts/ comes first)


def gemm_kernel(text: str) -> str:
    """A GEMM kernel's registry key from its key or name, for argparse (which reports the
    registry's message, naming the valid kernels, for any other)."""
    try:
        return kernels.get(text).key
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def host_us(call, sync, repeat: int, idle=lambda: None) -> tuple[list[float], list[float]]:
    """(call alone, call + sync) in microseconds, `repeat` of each; `idle` runs before
    each timed call (--idle)."""
    call()
    sync()
    alone, synced = [], []
    for _ in range(repeat):
        idle()
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        sync()
        alone.append((t1 - t0) * 1e6)
        idle()
        t0 = time.perf_counter()
        call()
        sync()
        synced.append((time.perf_counter() - t0) * 1e6)
    return alone, synced


def idler(spec: str):
    """What --idle asks before each timed call: "spin:US" keeps the host thread busy for US
    microseconds (Python, no driver call), "sleep:US" sleeps that long, "" nothing: whether
    a call's host time depends on what the host did just before it."""
    if not spec:
        return lambda: None
    how, _, us = spec.partition(":")
    seconds = float(us) / 1e6
    if how == "sleep":
        return lambda: time.sleep(seconds)

    def spin():
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
    return spin


_STATUS = cl.event_info.COMMAND_EXECUTION_STATUS


def poll(queue: cl.CommandQueue, ev: cl.Event) -> None:
    """Until `ev` completes, by asking its status in a loop (after a flush, so that the
    launch is submitted whatever the driver's policy)."""
    queue.flush()
    while ev.get_info(_STATUS) > 0:
        pass


def kernel_spans(ctx, a, b, repeat: int) -> tuple[float, float] | None:
    """gemm()'s kernel in microseconds on a profiling queue: (median when each call is
    synchronised, mean back to back), or None where the call is more than one kernel."""
    pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    a, b = a.with_queue(pq), b.with_queue(pq)
    d = clgemm.Plan(pq, a.shape[0], b.shape[1], a.shape[1]).describe()
    if d["splits"] not in (None, 1) or d["padded"] or d["a_kmajor"]:
        return None
    clgemm.gemm(pq, a, b)
    pq.finish()
    synced = []
    for _ in range(repeat):
        ev = clgemm.gemm(pq, a, b).events[-1]
        ev.wait()
        synced.append((ev.profile.end - ev.profile.start) / 1e3)
    evs = [clgemm.gemm(pq, a, b).events[-1] for _ in range(repeat)]
    pq.finish()
    return statistics.median(synced), (evs[-1].profile.end - evs[0].profile.start) / 1e3 / repeat


def cublas_calls(m: int, n: int, k: int):
    """torch's a @ b on CUDA (TF32 off) and its synchronisation, or None without them."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.rand(m, k, device="cuda") * 2 - 1
    y = torch.rand(k, n, device="cuda") * 2 - 1
    return (lambda: x @ y), torch.cuda.synchronize, (x, y)


def cublas_span_us(call, repeat: int) -> float:
    from cublas_ref import bench      # scripts/cublas_ref.py: CUDA events around a call
    return bench(call, repeat) * 1e3


def cublas_back_to_back_us(call, repeat: int) -> float:
    """Microseconds a call, CUDA events around `repeat` calls made back to back."""
    import torch
    call()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(repeat):
        call()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e3 / repeat


def own_database(dev: cl.Device, path: str) -> None:
    """`path`'s entries and thresholds as `dev`'s own database, in a fresh CLGEMM_HOME: the
    host time of choosing among a GPU's entries, timed on any device (pocl's on CI)."""
    os.environ["CLGEMM_HOME"] = tempfile.mkdtemp(prefix="clgemm-overhead-")
    doc = json.loads(Path(path).read_text())
    doc["device"] = db.device_key(dev)
    mine = Path(db.db_path(dev))
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text(json.dumps(doc))


def shapes(text: str) -> list[tuple[int | str, tuple[int, int, int]]]:
    """--sizes as (label, (m, n, k)): N for N^3 (label N), or MxNxK (label the text)."""
    out = []
    for tok in text.split(","):
        shape = entries.parse_shape(f"{tok}x{tok}x{tok}" if tok.isdigit() else tok)
        if shape is None:
            raise SystemExit(f"--sizes: {tok!r} is neither N nor MxNxK (positive integers)")
        out.append((shape[0] if tok.isdigit() else tok, shape))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,512",
                    help="shapes, comma-separated: N for N^3 or MxNxK")
    ap.add_argument("--repeat", type=int, default=200, help="calls per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", dest="json_path", default=None, help="write the rows here")
    ap.add_argument("--kernel", default=None, type=gemm_kernel,
                    help="the kernel every clgemm call names")
    ap.add_argument("--steps", action="store_true",
                    help="also time each launch of the call on the device")
    ap.add_argument("--pieces", action="store_true",
                    help="also time the statements of a cached call one by one")
    ap.add_argument("--python", action="store_true",
                    help="also time the Python of a cached call, its launches replaced")
    ap.add_argument("--marks", action="store_true",
                    help="also time the parts of a synchronised gemm() call")
    ap.add_argument("--idle", default="", help="spin:US or sleep:US before each timed call")
    ap.add_argument("--only", default=None,
                    help="the contenders to time, comma-separated (default: all)")
    ap.add_argument("--database", default=None,
                    help="a database file (e.g. clgemm/tuned/nvidia-h200.json) whose entries "
                         "and thresholds this device takes as its own, in a fresh CLGEMM_HOME")
    args = ap.parse_args()
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    if args.database:
        try:
            own_database(queue.device, args.database)
        except (OSError, ValueError) as e:
            ap.error(f"--database {args.database}: cannot read a database from it ({e})")
    only = args.only.split(",") if args.only else None

    def wanted(*names: str) -> bool:
        """Whether a contender of `names` is timed (what only they need is made only then)."""
        return only is None or any(name in only for name in names)
    # what a shape not planned before finds: no choice of entry kept for it (the facts and the
    # entries that fit the device, kept per database state, are found as for any shape)
    forget = choice._chosen.clear
    prg = cl.Program(ctx, "__kernel void empty(__global float *x) {}").build()
    knl = cl.Kernel(prg, "empty")
    rows = []
    rng = np.random.default_rng()
    for size, (m, n, k) in shapes(args.sizes):
        a = cla.to_device(queue, rng.uniform(-1, 1, (m, k)).astype(np.float32))
        b = cla.to_device(queue, rng.uniform(-1, 1, (k, n)).astype(np.float32))
        c = cla.zeros(queue, (m, n), np.float32)
        knl.set_arg(0, c.base_data)
        plan = clgemm.Plan(queue, m, n, k, kernel=args.kernel)
        gemm = functools.partial(clgemm.gemm, kernel=args.kernel)

        def uncached():
            clgemm.clear_cache()
            forget()
            gemm(queue, a, b)

        rows_of = [cla.to_device(queue, rng.uniform(-1, 1, (m + i, k)).astype(np.float32))
                   for i in range(40 if wanted("in_turn") else 0)]
        turn = itertools.cycle(rows_of)

        def in_turn():
            return gemm(queue, next(turn), b)

        # the layout plan(a, b) uses, for the contenders that launch its kernel themselves
        # (laid out only for them: pocl takes minutes to build a GPU entry's large tiles)
        variant = step = None
        if args.pieces or wanted("bound", "bound_args", "bound_poll", "floor", "floor_same",
                                 "plan"):
            plan(a, b)
            variant = next(iter(plan._variants.values()))
            step = variant.steps[0]

        def bound_args():
            for k_, i, r in variant.kslots:
                k_.set_arg(i, (a, b, c, c)[r].base_data)
            return step()

        last: list = [None]          # the last call's event, for the waits on it
        pool = clgemm.memory_pool(queue)
        out_slot = [(k_, i) for k_, i, r in variant.kslots if r == 3] if variant else []

        def floor():
            out = pool(4 * m * n)
            for k_, i in out_slot:
                k_.set_arg(i, out)
            return arrays.new_array(queue, (m, n), (4 * n, 4), out, pool, step())

        held: list = [None]

        def floor_same():
            out = pool(4 * m * n)
            if held[0] != out.int_ptr:
                for k_, i in out_slot:
                    k_.set_arg(i, out)
                held[0] = out.int_ptr
            return arrays.new_array(queue, (m, n), (4 * n, 4), out, pool, step())

        def keep(ev):
            last[0] = ev
        calls = {"bare": lambda: cl.enqueue_nd_range_kernel(queue, knl, (32,), (32,)),
                 "bound": step,
                 "bound_args": bound_args,
                 "gemm": lambda: gemm(queue, a, b),
                 "gemm_c": lambda: gemm(queue, a, b, c),
                 "gemm_flush": lambda: (gemm(queue, a, b), queue.flush()),
                 "gemm_wait": lambda: keep(gemm(queue, a, b).events[-1]),
                 "gemm_poll": lambda: keep(gemm(queue, a, b).events[-1]),
                 "bound_poll": lambda: keep(step()),
                 "floor": floor,
                 "floor_same": floor_same,
                 "plan": lambda: plan(a, b),
                 "uncached": uncached,
                 "plan_new": lambda: (forget(), clgemm.Plan(queue, m, n, k, kernel=args.kernel)),
                 "in_turn": in_turn}
        syncs = dict.fromkeys(calls, queue.finish)
        syncs["gemm_wait"] = lambda: last[0].wait()
        syncs["gemm_poll"] = syncs["bound_poll"] = lambda: poll(queue, last[0])
        torch_side = cublas_calls(m, n, k)
        if torch_side is not None:
            calls["cublas"], syncs["cublas"] = torch_side[0], torch_side[1]
        if only is not None:
            calls = {name: calls[name] for name in only if name in calls}
        alone: dict[str, list[float]] = {name: [] for name in calls}
        synced: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(args.rounds):
            for name, call in calls.items():
                x, y = host_us(call, syncs[name], args.repeat, idler(args.idle))
                alone[name] += x
                synced[name] += y
        row = {"size": size, "device": queue.device.name.strip(),
               "driver": queue.device.driver_version.strip(),
               **{f"{name}_us": statistics.median(ts) for name, ts in alone.items()},
               **{f"{name}_sync_us": statistics.median(ts) for name, ts in synced.items()}}
        if "gemm" in calls and "bare" in calls:
            row["gemm_over_bare_us"] = row["gemm_us"] - row["bare_us"]
        if args.pieces:
            row["pieces_us"] = pieces(queue, a, b, plan, step, bound_args)
            for stmt, us in row["pieces_us"].items():
                print(f"{size}: {us:7.2f} us  {stmt}")
        if args.marks:
            row["marks_us"] = marks(queue, a, b, args.repeat * args.rounds)
            print(f"{size}: parts of a synchronised gemm() (us): " + ", ".join(
                f"{name} {us:.1f}" for name, us in row["marks_us"].items()))
        if args.python:
            row["python_us"] = python_us(queue, a, b, plan)
            print(f"{size}: Python of a cached call (launches replaced): " + ", ".join(
                f"{name} {us:.2f} us" for name, us in row["python_us"].items()))
        if args.steps:
            row["steps"] = step_spans(ctx, a, b, args.kernel, args.repeat)
            for name, rep in row["steps"].items():
                print(f"{size}: device spans of the {name}'s launches (us): " + ", ".join(
                    f"{s['name']} {s['span_us']:.1f} (gap {s['gap_before_us']:.1f})"
                    for s in rep["steps"]) + f"; whole {rep['whole_us']:.1f}")
        # (not where only plans were made or the bare kernel run: nothing of gemm()'s ran)
        ran = set(calls) - {"bare", "plan_new", "cublas"}
        spans = None if args.kernel or not ran else kernel_spans(ctx, a, b, args.repeat)
        if spans is not None:
            row["kernel_span_synced_us"], row["kernel_span_back_to_back_us"] = spans
        if "cublas" in calls:
            row["cublas_span_us"] = cublas_span_us(calls["cublas"], args.repeat)
            row["cublas_back_to_back_us"] = cublas_back_to_back_us(calls["cublas"], args.repeat)
        rows.append(row)
    names = list(calls)
    for what, suffix in (("the call alone", "_us"), ("call + finish", "_sync_us")):
        print(f"median host us, {what}")
        print("size  " + "  ".join(f"{n:>9}" for n in names))
        for r in rows:
            print(f"{r['size']:<5} " + "  ".join(f"{r[n + suffix]:9.1f}" for n in names))
    for r in rows:
        if "gemm_over_bare_us" in r:
            print(f"{r['size']}: a cached gemm() call takes {r['gemm_over_bare_us']:.1f} us of "
                  f"host time more than a bare kernel launch")
    for r in rows:
        parts = [f"{key[:-3]} {r[key]:.1f}" for key in ("kernel_span_synced_us",
                 "kernel_span_back_to_back_us", "cublas_span_us",
                 "cublas_back_to_back_us") if key in r]
        if parts:
            print(f"{r['size']}: device spans (us): " + ", ".join(parts))
    print("plan cache:", clgemm.cache_info())
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
