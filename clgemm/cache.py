"""What gemm() keeps from call to call: its plans, and the memory pools that results and
scratch buffers come from.

Apart from clgemm.gemm because neither depends on how a product is planned: the cache
holds the Plans gemm() hands it and never makes one, and a pool is asked for by Plans, by
products that need no plan (clgemm.degenerate) and by the benchmark alike. Nothing here
imports clgemm.gemm, so the flow call -> plan -> launch stays one way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyopencl as cl
import pyopencl.tools as cl_tools

PLAN_CACHE_SIZE = 32      # plans gemm() keeps; each holds its scratch buffers


def memory_pool(queue: cl.CommandQueue) -> cl_tools.MemoryPool:
    """The pool that gemm() takes outputs and scratch buffers from, one per context and
    thread: a fresh device allocation cost 422 us for an 8192^2 matrix on the H200, 116 us
    from a pool, and allocating can make NVIDIA's driver wait for the device. pyopencl's
    MemoryPool is not made for threads (a result dropped in one thread goes back to its
    pool while another allocates), so each thread has its own."""
    key = (queue.context.int_ptr, threading.get_ident())
    pool = _pools.get(key)
    if pool is None:
        pool = _pools.setdefault(key, cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue)))
    return pool


_pools: dict[tuple[int, int], cl_tools.MemoryPool] = {}

# gemm() reads these two on its hot path itself (a function call there is host time on
# every call); everything else goes through the functions below
plans: OrderedDict[tuple, object] = OrderedDict()     # key -> clgemm.Plan, oldest first
stats = {"hits": 0, "misses": 0}


def keep(key: tuple, plan: object) -> None:
    """Keep `plan` under `key`, dropping the least recently used past PLAN_CACHE_SIZE."""
    plans[key] = plan
    while len(plans) > PLAN_CACHE_SIZE:
        plans.popitem(last=False)


def cache_info() -> dict[str, int]:
    """gemm()'s plan cache: calls that found their plan (hits), that made one (misses),
    and the plans kept (size)."""
    return {**stats, "size": len(plans)}


def clear_cache() -> None:
    """Drop gemm()'s plans (and with them their scratch buffers, back to their pool), and
    start cache_info's counts again."""
    plans.clear()
    stats.update(hits=0, misses=0)
