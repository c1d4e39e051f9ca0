"""What gemm() keeps from call to call: its plans, the memory pools that results and
scratch buffers come from, and the scratch of dropped plans until their launches are done.

Apart from clgemm.gemm and clgemm.plan because neither depends on how a product is
planned: the cache holds the Plans gemm() hands it and never makes one, and a pool is asked
for by Plans, by products that need no plan (clgemm.degenerate) and by the benchmark alike.
Nothing here imports either, so the flow call -> plan -> launch stays one way.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

import pyopencl as cl
import pyopencl.tools as cl_tools

from . import build

# plans gemm() keeps, and the share of the device's memory their scratch
# (Plan.scratch_bytes) may take together; the newest is kept whatever it holds. With 32
# plans and no bound on bytes, a loop over more than 32 shapes planned every call (340 us
# of host time at 16^3 on the H200, where a cached call took 12), and 32 plans of large
# odd shapes could hold 32 pairs of operand copies
PLAN_CACHE_SIZE = 256
PLAN_SCRATCH_SHARE = 1 / 16


def memory_pool(queue: cl.CommandQueue) -> cl_tools.MemoryPool:
    """The pool that gemm() takes outputs and scratch buffers from, one per queue and thread:
    a fresh device allocation cost 422 us for an 8192^2 matrix on the H200, 116 us from a
    pool, and allocating can make NVIDIA's driver wait for the device. A buffer goes back to
    its pool when dropped, even while a kernel still has to write or read it (a result
    dropped before its kernel ran, a call's upload of a host operand); a pool of its queue's
    own hands it only to later commands of that queue, which the queue runs after that
    kernel. One pool per context let a call on another queue take such a buffer and write
    it first (a wrong result). pyopencl's MemoryPool is not made for threads (a result
    dropped in one thread goes back to its pool while another allocates), so each thread has
    its own. A pool lives as long as something holds it (the plans of its queue, gemm()'s
    cached ones among them, its Arrays, the caller), and this table finds it meanwhile:
    one that kept only the last 4 queues' pools per thread lost track of a pool that plans
    still used, so that free_held() here missed it and calls rotating over 5 queues made
    a new pool, and allocated, each time (pocl, 2026-12-05).

    A fresh block is placed on the device through a queue of clgemm's own (_Pool), not
    the caller's: NVIDIA's driver (580.159.04) crashed or hung when the placement
    (clEnqueueMigrateMemObjects, which pyopencl's ImmediateAllocator enqueues) sat behind
    a command that waited for a user event."""
    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"memory_pool takes a pyopencl CommandQueue, not {type(queue).__name__}")
    key = (queue.context.int_ptr, queue.int_ptr, threading.get_ident())
    with _pools_lock:
        ref = _pools.get(key)
        pool = None if ref is None else ref()
        if pool is None:
            for gone in [k for k, r in _pools.items() if r() is None]:
                del _pools[gone]
            pool = _Pool(queue, _placer(queue))
            _pools[key] = weakref.ref(pool)
    return pool


_pools: dict[tuple[int, int, int], weakref.ref] = {}    # (context, queue, thread) -> pool
_pools_lock = threading.Lock()
_placers: dict[tuple[int, int], cl.CommandQueue] = {}    # (context, device) -> queue


class _Pool(cl_tools.MemoryPool):
    """A MemoryPool whose fresh blocks are placed on the device by a queue of clgemm's own,
    `placer`, and handed out only once placed. Placed on the caller's queue, behind a
    command that waited for a user event, the placement crashed NVIDIA's driver when the
    event was set (a segmentation fault in a driver thread), or hung it where a kernel used
    the block (H100 and H200, driver 580.159.04, 2026-12-05). The placer holds nothing
    else, so waiting for it takes only the placement; a block the pool already holds is
    handed out without it (managed_bytes unchanged). It holds its queue, so that no queue
    made later gets that queue's handle, and its key in memory_pool's table, while it
    lives."""

    def __init__(self, queue: cl.CommandQueue, placer: cl.CommandQueue) -> None:
        super().__init__(cl_tools.ImmediateAllocator(placer))
        self._queue, self._placer = queue, placer

    def __call__(self, nbytes: int):
        before = self.managed_bytes
        block = _take(self, nbytes)         # (not super(): its lookup is on every call)
        if self.managed_bytes != before:    # a fresh block: its placement done before use
            self._placer.finish()
        return block

    allocate = __call__


_take = cl_tools.MemoryPool.__call__


def _placer(queue: cl.CommandQueue) -> cl.CommandQueue:
    """The queue that places the pools' fresh blocks on `queue`'s device (_Pool), one per
    context and device; called under _pools_lock."""
    key = (queue.context.int_ptr, queue.device.int_ptr)
    placer = _placers.get(key)
    if placer is None:
        placer = _placers[key] = cl.CommandQueue(queue.context, queue.device)
    return placer


def checked(allocator: Callable[[int], object], context: cl.Context) -> Callable[[int], object]:
    """A caller's allocator with each buffer it returns checked: one too small would be
    overrun by the kernels (heap corruption on pocl), one of another context fails deep
    inside OpenCL."""
    def allocate(nbytes: int):
        buf = allocator(nbytes)
        size = getattr(buf, "size", None)
        if not isinstance(size, int) or size < nbytes:
            raise ValueError(f"the allocator returned {size!r} bytes where {nbytes} were asked "
                             f"({type(buf).__name__})")
        if getattr(buf, "context", None) != context:
            raise ValueError("the allocator returned a buffer of another context than the "
                             "queue's")
        return buf
    if hasattr(allocator, "_queue"):      # a pool of clgemm's: whose queue hold_elsewhere asks
        allocate._queue = allocator._queue
    return allocate


# A dropped plan's scratch buffers (padded and transposed operands, split-K sums, aligned
# results) go back to their pool only once its last launch is done: a plan's pool may be a
# caller's allocator that serves every queue, and a buffer handed out again while a launch
# on another queue still wrote into it gave that queue's product wrong results (after
# clear_cache(), the cache's eviction or `del plan`). (event, the plan's layouts) pairs
# wait here.
_graves: list[tuple[cl.Event, object]] = []
_graves_lock = threading.RLock()      # re-entered where a sweep's frees collect a plan


def bury(layouts: dict, last: list) -> None:
    """A Plan's finalizer (clgemm.plan): its layouts, which hold its scratch buffers, kept
    until `last` (its last launch's event) is done."""
    if last[0] is not None and layouts:
        hold(last[0], layouts)
    else:
        sweep()


def hold(ev: cl.Event, things: object) -> None:
    """Keep `things` until `ev` is done: a Plan's layouts, or the uploads of a call that
    returned before its kernel ran (their pooled buffers, and their copies' events, which
    would wait for the copy where they were dropped)."""
    with _graves_lock:
        _graves.append((ev, things))
    sweep()


def hold_elsewhere(ev: cl.Event, queue: cl.CommandQueue, arrays) -> None:
    """Keep the Arrays among `arrays` that came from a pool and name another queue than
    `queue` until `ev` (work on `queue` that reads or writes them) is done. Dropped before,
    such an Array's block went back to its own queue's pool, which handed it to that
    queue's next result while the work here had yet to run: the late kernel overwrote that
    result, or read it as its operand (pocl, 2026-12-05). A block of the call queue's own
    pool needs no keeping: only later work of that queue is handed it. The pool's queue is
    the one that counts, not the Array's (`.with_queue()` gives a block of queue A's pool
    to queue B: taken for A's, it went back to A's pool unkept); for an allocator of the
    caller's own, the Array's."""
    kept = tuple(x for x in arrays if x is not None and x.allocator is not None
                 and getattr(x.allocator, "_queue", x.queue) is not queue)
    if kept:
        hold(ev, kept)


def sweep() -> None:
    """Let go of the buried layouts whose launches are done (or failed)."""
    with _graves_lock:
        pending = []
        while _graves:
            ev, layouts = _graves.pop()
            if ev.command_execution_status > cl.command_execution_status.COMPLETE:
                pending.append((ev, layouts))
            del ev, layouts
        _graves.extend(pending)


# gemm() reads these two on its hot path itself (a function call there is host time on
# every call); everything else goes through the functions below
plans: OrderedDict[tuple, object] = OrderedDict()     # key -> clgemm.Plan, oldest first
stats = {"hits": 0, "misses": 0}
# gemm()'s express lane: (plan, database generation) of the last call without c and with
# every option at its default, whose plan repeats such a call in the fewest steps
# (clgemm.plan.Plan._again), or None
express: list = [None]


def keep(key: tuple, plan: object) -> None:
    """Keep `plan` under `key`, dropping the least recently used past PLAN_CACHE_SIZE plans
    or past scratch_bound(plan) bytes of their scratch (counted now: a kept plan's later
    layouts add to it). A dropped plan's scratch goes back to its pool once its launches
    are done."""
    plans[key] = plan
    # list() copies the values in one step, which another thread's move_to_end cannot cut
    held = sum([p.scratch_bytes for p in list(plans.values())])   # 32 us at 256 plans (pocl host)
    bound = scratch_bound(plan)
    while len(plans) > 1 and (len(plans) > PLAN_CACHE_SIZE or held > bound):
        try:
            _, old = plans.popitem(last=False)
        except KeyError:        # another thread's keep emptied it meanwhile
            break
        held -= old.scratch_bytes


def scratch_bound(plan: object) -> int:
    """Bytes of scratch the kept plans may hold: PLAN_SCRATCH_SHARE of the global memory of
    the device `plan` runs on (8.8 GB on the H200)."""
    return int(PLAN_SCRATCH_SHARE * plan.queue.device.global_mem_size)


def cache_info() -> dict[str, int]:
    """gemm()'s plan cache: calls that found their plan (hits), that made one (misses),
    and the plans kept (size)."""
    return {**stats, "size": len(plans)}


def clear_cache() -> None:
    """Drop gemm()'s plans (their scratch buffers go back to their pool once their last
    launches are done: bury), and start cache_info's counts again."""
    plans.clear()
    express[0] = None
    stats.update(hits=0, misses=0)


def release(context: cl.Context) -> None:
    """Let go of what clgemm keeps for `context`: gemm()'s plans on its queues, its memory
    pools (every thread's; their held memory freed, buffers still in use keep theirs), its
    compiled programs and idle kernel objects. A process that makes contexts one after
    another calls it for each it is done with: each kept about 6 MB of host memory and its
    pools' device memory for the life of the process (pocl, 2026-12-05)."""
    if not isinstance(context, cl.Context):
        raise TypeError(f"release takes a pyopencl Context, not {type(context).__name__}")
    ptr = context.int_ptr
    # list() copies the keys in one step that no other thread's call interleaves with (it
    # runs no Python code); iterating the dict itself met another thread's gemm() moving
    # its plan to the end (RuntimeError: OrderedDict mutated during iteration)
    for key in [k for k in list(plans) if k[0].context.int_ptr == ptr]:
        plans.pop(key, None)
    if express[0] is not None and express[0][0].queue.context.int_ptr == ptr:
        express[0] = None
    with _pools_lock:
        for key in [k for k in _pools if k[0] == ptr]:
            pool = _pools.pop(key)()
            if pool is not None:
                pool.free_held()
        for key in [k for k in _placers if k[0] == ptr]:
            del _placers[key]
    build.forget(ptr)
