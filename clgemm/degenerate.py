"""Products with a zero dimension, for which gemm() plans nothing and no kernel runs:
k = 0 leaves beta * C (zeros without c: the empty sum), as BLAS and numpy do; m or n = 0
an empty matrix.

Apart from clgemm.gemm because none of it is a plan, only a few pyopencl and numpy
operations. The one case that needs a product, a block of a larger matrix as c, is handed
gemm() itself (`product`) rather than importing it back, so that this module stays below
the call that uses it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import cache, events, operands
from .cache import checked, memory_pool
from .operands import F32


def result(queue: cl.CommandQueue, a, b, c, beta: float, m: int, n: int, allocator,
           product: Callable):
    """op(a) @ op(b) with m, n or k zero (gemm() has checked the operands): c, scaled by
    beta, when given (in place), else zeros of m x n, an Array when any operand is one."""
    device = any(isinstance(x, cla.Array) for x in (a, b, c))
    # a caller's allocator is checked as a plan checks it: a buffer too small was filled
    # past its end (heap corruption on pocl), one of another context failed at .get()
    alloc = memory_pool(queue) if allocator is None else checked(allocator, queue.context)
    if c is not None:
        if isinstance(c, np.ndarray):
            c[...] = 0.0 if beta == 0.0 else beta * c
        elif c.size:
            if c.offset or not c.flags.forc:
                # a block of a larger matrix, which pyopencl's fill and *= do not take: the
                # k = 1 product of zeros leaves the same beta * C (never reading c at beta
                # 0); alpha 1, since a product at alpha 0 comes back here
                zeros = [cla.zeros(queue, shape, F32, allocator=alloc) for shape in ((m, 1), (1, n))]
                return product(queue, *zeros, c, alpha=1.0, beta=beta, allocator=allocator)
            _scale(queue, c, beta)
            if c.events:
                cache.hold_elsewhere(c.events[-1], queue, (c,))
        return c
    if device:
        out = cla.empty(queue, (m, n), F32, allocator=alloc)
        if out.size:
            out.fill(0.0)
        return out
    return np.zeros((m, n), F32)


def _scale(queue: cl.CommandQueue, c: cla.Array, beta: float) -> None:
    """c = beta * c in place on `queue`, after the work pending on c from other queues, as
    gemm()'s kernels would: c is left with this one operation's event (clgemm.events)."""
    seen = c.events[:]
    operands.wait_for_arrays(queue, c)
    if beta == 0.0:
        c.fill(0.0, queue=queue)
    else:       # on the call's queue, behind the barrier, whatever queue c names
        on_queue = c if c.queue == queue else c.with_queue(queue)
        on_queue *= np.float32(beta)
    events.forget(c, seen)
