"""The library call, C = alpha * op(A) @ op(B) + beta * C on an OpenCL queue: gemm() finds
the Plan (clgemm.plan) that an earlier call with the same shape and options made, in a
cache keyed by what plans depend on, the tuning database's state included (clgemm.cache),
or makes one; products with a zero dimension need none (clgemm.degenerate).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyopencl as cl

from . import cache, db, degenerate, kernels, operands
from .cache import express as _express, plans as _plans, stats as _stats  # the hot path
from .launch import GemmPlan, Workspace  # noqa: F401  (re-exported)
from .launch import check_split_k, check_transposed_by
from .layout import prepare  # noqa: F401  (re-exported)
from .plan import Allocator, Plan, _check_allocator, _planning

_AUTO = "auto"        # the default of transposed_by and split_k, as the express lane tests it


def gemm(queue: cl.CommandQueue, a, b, c=None, *, alpha: float = 1.0, beta: float = 0.0,
         trans_a: bool = False, trans_b: bool = False, kernel: object = None,
         params: Mapping[str, object] | None = None, transposed_by: str = "auto",
         split_k: int | str = "auto", allocator: Allocator | None = None, guard: bool = True):
    """C = alpha * op(A) @ op(B) + beta * C in float32.

    numpy inputs give a numpy result; if any input is a pyopencl Array the result is an
    Array on the same queue, computed without a host round trip and without blocking the
    host. With `c` given, the result is written into it (in place for Arrays) and `c` is
    returned; beta == 0 never reads c. Fortran-ordered operands are used as they lie:
    when both are, the kernel computes C^T = op(B)^T op(A)^T instead, and otherwise one
    operand is transposed on the device. Kernels 5 and 6 can also read a transposed
    operand as it lies: transposed_by="kernel" for both, "transpose" for neither, "auto"
    (the default) for the left one only, which measured fastest. `split_k` (kernels 5 and
    6) cuts k into that many slices computed apart and then summed; "auto" takes the count
    the tuner measured for the entry in use, else splits only when C has too few tiles to
    fill the device. `allocator` makes the result and scratch buffers (default: a
    pyopencl MemoryPool per queue and thread, `memory_pool`); `guard`: as Plan's.

    Device operands may be blocks of larger matrices, BLAS's sub-matrices with an offset and
    a leading dimension: a pyopencl Array view such as big[r0:r1, c0:c1] (strides (4*ld, 4))
    or its transpose (strides (4, 4*ld)), for a, b and c (c's neighbours in big are left as
    they are). A block is read where it lies when the kernel can read it so (its width and
    leading dimension multiples of the vector width, its start at an origin a sub-buffer can
    have: CL_DEVICE_MEM_BASE_ADDR_ALIGN), else copied by a step of the launch; c is written
    where it lies when it starts at such an origin, else through a copy.

    Each call reuses a Plan made by an earlier call with the same shape, transposes,
    kernel, parameters and options, while the tuning database is unchanged (checked at
    most once a second, at once after a tune in this process). The queue must be in-order.
    Work pending on Array operands (their .events) is waited for on the device: that of
    other queues and user events by name, the queue's own by its order. An Array result
    carries the event of its last kernel, and c only that one in place of those it carried
    (each of them comes before it), so repeated calls into one c do not pile up events.
    k = 0 gives beta * C (zeros without c), as BLAS and numpy do; m = 0 or n = 0 an empty
    result.
    """
    plain = (c is None and kernel is None and params is None and allocator is None
             and trans_a is False and trans_b is False and guard is True
             and transposed_by is _AUTO and split_k is _AUTO)
    if plain:
        # the express lane: the plan of the last such call, asked first (Plan._again)
        last = _express[0]
        if last is not None and last[0].queue is queue and last[1] == db.generation():
            out = last[0]._again(a, b, alpha, beta)
            if out is not None:
                _stats["hits"] += 1
                return out
    try:
        key = _key(queue, a, b, trans_a, trans_b, kernel, params, transposed_by, split_k,
                   allocator, guard)
        plan = _plans.get(key)
    except (AttributeError, TypeError):   # unhashable parameters or allocator: not kept
        key = plan = None                   # (and what is no mapping, Plan refuses)
    if plan is not None:
        _stats["hits"] += 1
        try:
            _plans.move_to_end(key)
        except KeyError:      # another thread dropped it meanwhile; this call still has it
            pass
        out = plan._call(a, b, c, alpha, beta)
        if plain and plan._express is not None:
            _express[0] = (plan, key[-1])
        return out
    return _uncached(key, queue, a, b, c, alpha, beta, trans_a, trans_b, kernel, params,
                     transposed_by, split_k, allocator, guard)


def _key(queue, a, b, trans_a, trans_b, kernel, params, transposed_by, split_k, allocator,
         guard) -> tuple:
    """The plan cache's key: the operands' shapes as given (only shapes that made a plan are
    kept), the options, and the database's generation. The options' types are in it: 1.0 ==
    True and 5.0 == 5 hash alike, and a value refused by its check (trans_b=1.0, kernel=5.0)
    must not find the plan that a valid one made. A call that leaves every option at its
    default, the common case, has a short key of its own: building and hashing the long
    one cost about a microsecond of a cached call's host time."""
    if (kernel is None and params is None and allocator is None and trans_a is False
            and trans_b is False and guard is True and type(transposed_by) is str
            and transposed_by == "auto" and type(split_k) is str and split_k == "auto"):
        return (queue, a.shape, b.shape, db.generation())
    return (queue, a.shape, b.shape, trans_a, type(trans_a), trans_b, type(trans_b), kernel,
            type(kernel), None if params is None else
            tuple(sorted((name, value, type(value)) for name, value in params.items())),
            transposed_by, split_k, type(split_k), allocator, guard, type(guard),
            db.generation())


def _check_options(kernel, params, transposed_by, split_k, allocator, guard) -> None:
    """The options of a call with nothing to compute (a zero dimension) refused as a Plan
    refuses them: a mistake must not wait for the first non-empty product to show."""
    if kernel is not None:
        kernels.tunable(kernel).resolve(params)
    check_transposed_by(transposed_by)
    check_split_k(split_k)
    operands.flag(guard, "guard")
    _check_allocator(allocator)


def _uncached(key, queue, a, b, c, alpha, beta, trans_a, trans_b, kernel, params,
              transposed_by, split_k, allocator, guard):
    """The call whose plan the cache lacked: checked in full, planned, kept under `key`
    (gemm()'s lookup key, None where it cannot be kept)."""
    operands.check_queue(queue)
    operands.check(a, "a", queue, empty=True, views=True)
    operands.check(b, "b", queue, empty=True, views=True)
    alpha, beta = operands.scalar(alpha, "alpha"), operands.scalar(beta, "beta")
    trans_a, trans_b = operands.flag(trans_a, "trans_a"), operands.flag(trans_b, "trans_b")
    (m, k), (k2, n) = (a.shape[::-1] if trans_a else a.shape), (b.shape[::-1] if trans_b else b.shape)
    if k != k2:
        raise ValueError(f"inner dimensions differ: op(a) is {m}x{k} but op(b) is {k2}x{n}")
    if c is not None:
        operands.check(c, "c", queue, empty=True, views=True)
        if c.shape != (m, n):
            raise ValueError(f"c has shape {c.shape}; op(a) @ op(b) is {m}x{n}")
        if isinstance(c, np.ndarray) and not c.flags.writeable:
            raise ValueError("c is a read-only numpy array; the result is written into c")
    if 0 in (m, n, k):
        _check_options(kernel, params, transposed_by, split_k, allocator, guard)
        return degenerate.result(queue, a, b, c, beta, m, n, allocator, gemm)
    # the key's database generation (its last item) is taken before the plan is made: a
    # tune recorded while it was made would otherwise keep a plan of the old entries under
    # the new generation, for good
    db.watch(queue.device)
    if key is not None:
        key = key[:-1] + (db.generation(),)
    with _planning:
        plan = Plan(queue, m, n, k, trans_a=trans_a, trans_b=trans_b, kernel=kernel,
                    params=params, transposed_by=transposed_by, split_k=split_k,
                    allocator=allocator, guard=guard)
    _stats["misses"] += 1
    result = plan(a, b, c, alpha=alpha, beta=beta)
    if key is not None:
        cache.keep(key, plan)
    return result
