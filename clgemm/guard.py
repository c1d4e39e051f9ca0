"""The guarded launch of a kernel whose products differ from float's on some inputs
(kernels 7 and 8: Inf, NaN, magnitudes below 2^-51 or from 2^60; kernels/scan_special.cl
derives the bounds), without a host read: a scan of the operands, the kernel, and a
fallback FMA kernel, every call. The scan stores the call's epoch into a flag when it
finds such a value; the fallback then computes the product, else it returns at once.
Where C is read (beta != 0) the three run in that order on the caller's queue and the
kernel is built with GUARD=1, returning at once on a flagged call, since C must reach the
fallback untouched. Where it is not, the kernel runs without that check and the fallback
overwrites its result, and the scan runs beside the kernel on a second queue (Beside):
on the H200 the check cost kernel 8 4% at 4096^3 and 2% at 8192^3 and the scan in line
40 and 130 us (`python3 scripts/call_overhead.py --kernel 8 --steps`, 2026-12-04,
results/h200/raw/call-steps-kernel8-2026-12-04.json).
Each call takes a new epoch (Guard.advance), so the flag never needs clearing."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyopencl as cl

from . import build, kernels, operands
from .operands import Matrix

SMALL_EXP = -51     # nonzero |x| < 2^SMALL_EXP is flagged
BIG_EXP = 60        # |x| >= 2^BIG_EXP (and Inf, NaN) is flagged (scan_special.cl says why)
FALLBACK = "5"      # the FMA kernel that computes a flagged product (GUARD=2 in its build)
SCAN_LOCAL = 256    # work-items per group of the scan
# A product less deep than this runs kernel 5 (routed): summed by the MMA's truncating
# adder, a short product's three terms keep less than float's round-to-nearest FMA chain.
# Kernel 7's error over kernel 5's on uniform data (CPU emulation, 64 x 64, 2026-12-04):
# k = 1: 3.1x, 8: 1.7x, 16: 1.4x, 24: 1.1x, 32: 1.0x, 48: 0.84x, 256: 0.44x. Kernel 8's,
# the same way (6 seeds, 2026-12-04): k = 1: 3.4x, 8: 1.7x, 16: 1.3x, 32: 1.14x, 48: 0.93x,
# 64: 0.85x, 256: 0.46x.
MIN_DEPTH = 48
_EPOCHS = 2**31 - 1


class Guard:
    """A layout's flag buffer and the kernel arguments that carry the epoch (kernel
    object, index), set anew each call. Epochs run 1, 2, ... (wrapping before int32's
    end); the arguments start at 0 against a zeroed flag, which sends a launch that
    never advanced to the fallback: slower, never wrong."""

    def __init__(self, flag, slots: list[tuple[cl.Kernel, int]]):
        self.flag, self.slots, self.epoch = flag, slots, 0

    def advance(self) -> None:
        self.epoch = self.epoch % _EPOCHS + 1
        epoch = np.int32(self.epoch)
        for knl, i in self.slots:
            build.set_scalar(knl, i, epoch)


def routed(kernel: object, params, k: int) -> tuple[object, object]:
    """The (kernel, params) a guarded call of a product k deep runs: kernel 5's entry, for a
    guarded kernel asked by name below MIN_DEPTH, where its errors exceed kernel 5's and
    its speed cannot matter (one tile step); else what was asked. Parameters given for the
    kernel asked are checked all the same (ValueError naming the bad one), as if it ran."""
    if kernel is None or k >= MIN_DEPTH:
        return kernel, params
    try:
        kern = kernels.get(kernel)
    except ValueError:       # an unknown kernel: the plan names it, as without the guard
        return kernel, params
    if not kern.guarded:
        return kernel, params
    if params is not None:
        kern.check(kern.resolve(params))
    return FALLBACK, None


def scan(queue: cl.CommandQueue, a: Matrix, b: Matrix, flag) -> build.Bound:
    """The scan of a and b (row-major, at their buffers' origin) as a bound launch: their
    rows shared out among at most 8 work-groups of SCAN_LOCAL a compute unit, each row
    read once, by float4s where its leading dimension allows."""
    if a.offset or b.offset:
        raise ValueError("the scan reads matrices at their buffer's origin")
    prg = build.helper(queue.context, "scan_special.cl",
                       {"SMALL_EXP": SMALL_EXP, "BIG_EXP": BIG_EXP})
    groups = min(a.rows + b.rows, 8 * queue.device.max_compute_units)
    size = groups * SCAN_LOCAL
    return build.bind(queue, prg, "scan", (size,), (SCAN_LOCAL,),
                      (a.buf, np.int32(a.rows), np.int32(a.cols), np.int32(a.ld),
                       b.buf, np.int32(b.rows), np.int32(b.cols), np.int32(b.ld),
                       flag, np.int32(0)))


def kernel_code(c_read: bool) -> int:
    """The GUARD code of the guarded kernel's build: 1 (return on a flagged call) where C
    is read, since the fallback needs it as it was; else 0, an unguarded build whose
    result the fallback overwrites on a flagged call."""
    return 1 if c_read else 0


class Beside:
    """The guarded launches where C is not read, as one step: the kernel on the plan's
    queue and the scan beside it on a second queue of the device, then the fallback once
    both are done. On the H200 the scan's work-groups run among the kernel's from its
    start and end before it: kernel 8's call at 4096^3 kept the device 7.6 us longer than
    the kernel alone, against 40 us for the scan in line (2026-12-04,
    results/h200/raw/call-steps-kernel8-2026-12-04.json). Since kernel 8 spreads its last
    wave (heuristics.tail_split) the scan has no idle units left at the end: at 8192^3 it
    ended 62 us after the kernel and held tail_reduce back, 120 us over the unguarded
    launches (e4ce6df, results/h200/raw/call-steps-kernel8-tail-2026-12-04.json).
    The marker makes the scan wait for what the caller's queue writes into the operands
    before the call. `parts` are the bound launches, in which the plan finds the slots of
    the caller's buffers; `events` those of the last call: the marker, the kernel's (one
    for each of its launches), the scan's and the fallback's (scripts/call_overhead.py
    times them)."""

    __slots__ = ("queue", "side", "scan", "kernel", "fallback", "parts", "events")

    def __init__(self, scan: build.Bound, kernel: list, fallback: list):
        self.queue, self.side, self.scan = kernel[0].queue, scan.queue, scan
        self.kernel, self.fallback = kernel, fallback
        self.parts = [scan, *kernel, *fallback]
        self.events: tuple = ()

    def __call__(self, wait_for: list | None = None) -> cl.Event:
        ready = cl.enqueue_marker(self.queue, wait_for)    # the operands' writers are done
        kevs = [step() for step in self.kernel]
        scanned = self.scan([ready])
        self.side.flush()          # the fallback waits for it: it must reach the device
        ev = self.fallback[0]([scanned])
        for step in self.fallback[1:]:
            ev = step()
        self.events = (ready, *kevs, scanned, ev)
        return ev


def bound(plan, x: Matrix, y: Matrix, c: Matrix, alpha: float, beta: float,
          a_kmajor: bool, b_nmajor: bool, c_read: bool,
          allocator: Callable[[int], object] | None) -> tuple[list, list, Guard]:
    """GemmPlan.bound's product (plan: a launch.GemmPlan of a guarded kernel) as the
    guarded launches (in line: the scan, the kernel, the fallback; where C is not read one
    Beside step), where alpha and beta sit among their arguments, and their Guard. The
    fallback takes the entry gemm() would pick for kernel 5 at this shape (tuned, else the
    registry defaults), in one slice of k, reading the same matrices and writing c."""
    from .launch import GemmPlan        # launch imports this module
    q = plan.queue
    flag = operands.zeros(q, 1, 1, 1, allocator).buf      # zeroed once, for the layout's life
    k = x.rows if a_kmajor else x.cols
    fallback = GemmPlan(q, FALLBACK, shape=(c.rows, c.cols, k), split_k=1, pad="no")
    code = kernel_code(c_read)
    steps, scalars = plan.bound(x, y, c, alpha, beta, a_kmajor, b_nmajor,
                                guard=(code, flag) if code else None)
    more, extra = fallback.bound(x, y, c, alpha, beta, a_kmajor, b_nmajor, guard=(2, flag))
    first = scan(plan.side_queue() if not code else q, x, y, flag)
    slots = [(s.knl, len(s.args) - 1)                                        # epoch: last
             for s in (first, *(steps if code else ()), *more)]
    launches = [first, *steps, *more] if code else [Beside(first, steps, more)]
    return launches, scalars + extra, Guard(flag, slots)
