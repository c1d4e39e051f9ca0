"""The events of a call (clgemm.events): what gemm() waits for, and what it leaves on its
output Array. On an in-order queue its own earlier work needs no wait list; work pending
on another queue (or behind a user event) does, and the output carries only this call's
last event, however many calls went into it."""

import contextlib

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cl_tools
import pytest

import clgemm
from clgemm import cache, verify

from .conftest import P5, close, rand

CALLS = 50

pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


@pytest.fixture
def waits(monkeypatch):
    """The wait lists of every kernel, copy, barrier and marker enqueued from now on (a
    list per enqueue; clear it before the calls to look at)."""
    seen = []

    def spy(real):
        def enqueue(*args, **kwargs):
            seen.append(list(kwargs.get("wait_for") or ()))
            return real(*args, **kwargs)
        return enqueue
    for name in ("enqueue_nd_range_kernel", "enqueue_copy", "enqueue_barrier", "enqueue_marker"):
        monkeypatch.setattr(cl, name, spy(getattr(cl, name)))
    return seen


@contextlib.contextmanager
def late_write(queue, target, values):
    """A copy of `values` into the Array `target`, enqueued on another queue behind a user
    event that is set only when the block ends, and added to target's events; yields the
    copy's event. The copy waits for what target has pending too, as any writer from
    another queue must: without it, under load an earlier kernel into target ran after the
    copy and overwrote it (a race of the test's own making, seen on 2 cores)."""
    other = cl.CommandQueue(queue.context)
    gate = cl.UserEvent(queue.context)
    try:
        write = cl.enqueue_copy(other, target.base_data, values, is_blocking=False,
                                wait_for=[gate, *target.events])
        target.add_event(write)
        yield write
    finally:
        gate.set_status(cl.command_execution_status.COMPLETE)


def waited_only_for(waits, write) -> bool:
    """Whether the enqueues spied on named a wait list, and nothing in it but `write`."""
    waited = [e for w in waits for e in w]
    return bool(waited) and all(e == write for e in waited)


def _c_of(queue, rng, m, n, where):
    """c as a whole Array, or as a block of a larger one at an offset no sub-buffer origin
    has (written through a copy; its events list is the larger Array's), and a call that
    reads it back."""
    if where == "whole":
        c = cla.to_device(queue, rand(rng, m, n))
        return c, c.get
    big = cla.to_device(queue, rand(rng, m + 3, n + 5))
    return big[1:1 + m, 2:2 + n], lambda: big.get()[1:1 + m, 2:2 + n]


@pytest.mark.parametrize("how", ["gemm", "plan", "block", "k0", "same"])
def test_repeated_calls_into_one_c_leave_it_this_calls_event(queue, rng, waits, how):
    """50 calls into one c, fresh operands each time (or the same ones: "same"): c carries
    one event after each (it grew by one a call, and past 12 pyopencl made the host wait
    for the oldest), no call passes the queue's own events as a wait list, and every
    result is right, beta zero or not."""
    m, n, k = (37, 41, 0) if how == "k0" else (37, 41, 29)
    c, read = _c_of(queue, rng, m, n, "block" if how == "block" else "whole")
    plan = clgemm.Plan(queue, m, n, k, kernel="5", params=P5) if how == "plan" else None
    same = cla.to_device(queue, rand(rng, m, k)), cla.to_device(queue, rand(rng, k, n))
    for i in range(CALLS):
        a, b = same if how == "same" else (cla.to_device(queue, rand(rng, m, k)),
                                           cla.to_device(queue, rand(rng, k, n)))
        before = read().astype(np.float64)
        alpha, beta = (1.5, 0.0) if i % 3 == 0 else (-1.0, 0.5)
        waits.clear()
        if plan is not None:
            plan(a, b, c, alpha=alpha, beta=beta)
        else:
            clgemm.gemm(queue, a, b, c, alpha=alpha, beta=beta, kernel="5", params=P5)
        assert len(c.events) == 1, f"call {i}: c carries {len(c.events)} events"
        assert not any(waits), f"call {i}: the queue's own events as a wait list"
        assert waits or how == "k0"      # pyopencl's fill and *= enqueue past the spy
        want = verify.reference(a.get(), b.get(), alpha, beta, before)
        assert close(read(), want, k), f"call {i}"


@pytest.mark.parametrize("pending", ["a", "c"])
def test_another_queues_pending_write_is_still_waited_for(queue, rng, waits, pending):
    """After calls that left c an event of this queue, an operand (a, or c read at beta 1)
    is written by a copy on another queue that cannot start before a user event completes:
    the call waits for that copy on the device (and for nothing of its own queue), without
    blocking the host, and its result holds the values written after the user event."""
    m, n, k = 37, 41, 29
    a, b = rand(rng, m, k), rand(rng, k, n)
    da, db_ = cla.to_device(queue, a), cla.to_device(queue, b)
    c = cla.to_device(queue, rand(rng, m, n))
    for _ in range(3):
        clgemm.gemm(queue, cla.to_device(queue, rand(rng, m, k)), db_, c, kernel="5", params=P5)
    assert len(c.events) == 1 and c.events[0].command_queue == queue
    if pending == "a":       # a's values arrive late; c holds the last product
        da = target = cla.to_device(queue, np.zeros_like(a))
        written, old_c = a, c.get()
    else:                    # c's new values arrive late
        target = c
        written = old_c = rand(rng, m, n)
    with late_write(queue, target, written) as write:
        waits.clear()
        clgemm.gemm(queue, da, db_, c, beta=1.0, kernel="5", params=P5)
        assert waited_only_for(waits, write), "not (only) the other queue's write"
        assert len(c.events) == 1
        assert c.events[0].command_execution_status != cl.command_execution_status.COMPLETE
    assert close(c.get(), verify.reference(a, b, 1.0, 1.0, old_c), k)


@pytest.mark.parametrize("options", [dict(kernel="5", params=P5), {}], ids=["named", "plain"])
def test_the_same_operands_again_wait_for_another_queues_new_write(queue, rng, waits, options):
    """Calls without c on the same Arrays look at their events once while nothing changes
    (all of this queue); a write from another queue added to a's events afterwards is
    waited for by the next call, on the device, and its result holds the new values. With
    no option given the calls after the second take gemm()'s express lane, which must see
    the write too."""
    m, n, k = 37, 41, 29
    a, b = rand(rng, m, k), rand(rng, k, n)
    da, db_ = cla.to_device(queue, a), cla.to_device(queue, b)
    for _ in range(3):
        waits.clear()
        out = clgemm.gemm(queue, da, db_, **options)
        assert not any(waits)
    assert close(out.get(), verify.reference(a, b), k)
    fresh = rand(rng, m, k)
    with late_write(queue, da, fresh) as write:
        waits.clear()
        out = clgemm.gemm(queue, da, db_, **options)
        assert waited_only_for(waits, write), "not (only) the other queue's write"
        assert out.events[-1].command_execution_status != cl.command_execution_status.COMPLETE
    assert close(out.get(), verify.reference(fresh, b), k)


@pytest.mark.parametrize("with_c", [False, True], ids=["new", "into-c"])
def test_another_queues_finished_uploads_are_dropped_not_waited_for(queue, rng, waits, with_c,
                                                                     monkeypatch):
    """Operands uploaded on another queue and finished there: the first call takes their
    events out of the Arrays' lists instead of naming them in its wait list, and calls
    without c after it take the express lane (Plan._again); the results stay right."""
    m, n, k = 37, 40, 28
    a, b = rand(rng, m, k), rand(rng, k, n)
    upload = cl.CommandQueue(queue.context)
    da, db_ = cla.to_device(upload, a), cla.to_device(upload, b)
    upload.finish()
    assert da.events and db_.events
    c = cla.to_device(queue, rand(rng, m, n)) if with_c else None
    waits.clear()
    out = clgemm.gemm(queue, da, db_, c)
    assert not any(waits) and not da.events and not db_.events
    assert close(out.get(), verify.reference(a, b), k)
    if not with_c:
        from clgemm.plan import Plan
        clgemm.gemm(queue, da, db_)
        assert next(iter(clgemm.cache.plans.values()))._express is not None
        monkeypatch.setattr(Plan, "_call", None)     # the express lane does not go through it
        out = clgemm.gemm(queue, da, db_)
        assert close(out.get(), verify.reference(a, b), k)


def test_an_operand_whose_event_failed_is_refused_not_waited_for(queue, rng):
    """A user event set to an error status on an operand: the call raises naming it
    instead of enqueueing a kernel that waits for it (on pocl the result's read then
    hung for good)."""
    a, b = cla.to_device(queue, rand(rng, 8, 8)), cla.to_device(queue, rand(rng, 8, 8))
    failed = cl.UserEvent(queue.context)
    a.add_event(failed)
    failed.set_status(-1)
    with pytest.raises(ValueError, match="an operand waits for an event that ended in error"):
        clgemm.gemm(queue, a, b)
    a.events.remove(failed)
    assert close(clgemm.gemm(queue, a, b).get(), verify.reference(a.get(), b.get()), 8)


def test_transpose_waits_only_for_other_queues(queue, rng, waits):
    """clgemm.transpose of an Array: its own queue's earlier work needs no barrier; a write
    pending on another queue behind a user event is waited for, without blocking the host,
    and the result holds the values written after the event."""
    a = rand(rng, 37, 53)
    da = cla.to_device(queue, a)
    da.add_event(cl.enqueue_marker(queue))
    waits.clear()
    out = clgemm.transpose(queue, da)
    assert not any(waits), waits                     # nothing named of its own queue
    assert np.array_equal(out.get(), a.T)
    fresh = rand(rng, 37, 53)
    with late_write(queue, da, fresh) as write:
        waits.clear()
        out = clgemm.transpose(queue, da)
        assert waited_only_for(waits, write), waits
    assert np.array_equal(out.get(), fresh.T)


MIXED = """
import numpy as np, pyopencl as cl, pyopencl.array as cla, clgemm
from clgemm import device, verify
q = device.queue(device.select())
rng = np.random.default_rng()
a, b, x, y = (verify.random_matrix(rng, 64, 64) for _ in range(4))
db = cla.empty(q, b.shape, np.float32)
writer, third = cl.CommandQueue(q.context), cl.CommandQueue(q.context)
gate = cl.UserEvent(q.context)
db.add_event(cl.enqueue_copy(writer, db.base_data, b, is_blocking=False, wait_for=[gate]))
r0 = clgemm.gemm(q, cla.to_device(q, a), db)   # q now has a kernel waiting for the gate
given = a.copy()
r1 = clgemm.gemm(q, given, db)          # before the gate is set, by this thread alone
given[...] = 0.0                        # the caller's array, changed once the call returned
r2 = clgemm.gemm(third, x, cla.to_device(third, y))
gate.set_status(cl.command_execution_status.COMPLETE)
ab = verify.reference(a, b)
print(verify.rel_error(r0.get(), ab), verify.rel_error(r1.get(), ab),
      verify.rel_error(r2.get(), verify.reference(x, y)))
"""


GATED_MISS = """
import numpy as np, pyopencl as cl, pyopencl.array as cla, clgemm
from clgemm import device, verify
q = device.queue(device.select())
rng = np.random.default_rng()
a, b, x, y = (verify.random_matrix(rng, n, n) for n in (64, 64, 96, 96))
da, dx, dy = (cla.to_device(q, m) for m in (a, x, y))
db = cla.empty(q, b.shape, np.float32)
writer = cl.CommandQueue(q.context)
gate = cl.UserEvent(q.context)
db.add_event(cl.enqueue_copy(writer, db.base_data, b, is_blocking=False, wait_for=[gate]))
r0 = clgemm.gemm(q, da, db)     # q now has a kernel waiting for the gate
r1 = clgemm.gemm(q, dx, dy)     # a result of a size its pool has not held: a fresh block
gate.set_status(cl.command_execution_status.COMPLETE)
print(verify.rel_error(r0.get(), verify.reference(a, b)),
      verify.rel_error(r1.get(), verify.reference(x, y)))
"""


def _errors_of(script: str, blocked: str) -> list[float]:
    """Run `script` in a process of its own (a call that blocks, or a driver that crashes,
    fails the test rather than the suite) and return the errors it prints."""
    import os
    import subprocess
    import sys
    try:
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, PYOPENCL_COMPILER_OUTPUT="0"))
    except subprocess.TimeoutExpired:
        pytest.fail(blocked)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    return [float(e) for e in p.stdout.split()]


def test_a_mixed_call_returns_at_once_and_uses_its_operand_as_given():
    """numpy a with an Array b whose contents wait behind a user event: the call returns
    before the event is set (its upload of a waited behind the queue's work: for ever, as
    here, where the thread that was to set the event made the call), computes with a as it
    was when called (the caller may change a at once), and a call on another queue meanwhile
    cannot take the pooled block that a went into (it took it, and the first result was
    x @ b). On NVIDIA's driver the upload's fresh block, placed on the queue behind the
    waiting kernel, crashed the process once the event was set (cache._Pool)."""
    errors = _errors_of(MIXED, "the call waited for the user event that its own thread was "
                               "to set")
    assert len(errors) == 3 and all(e <= verify.tolerance(64) for e in errors), errors


def test_a_fresh_pool_block_behind_a_waiting_kernel_is_placed_elsewhere():
    """A result of a new size while the queue holds a kernel that waits for a user event:
    the pool's fresh block was placed on the device by that queue, behind the kernel, and
    NVIDIA's driver crashed (or hung) once the event was set (driver 580.159.04). Its
    blocks are placed by a queue of clgemm's own (cache._Pool)."""
    errors = _errors_of(GATED_MISS, "the call waited for the user event that its own thread "
                                    "was to set")
    assert len(errors) == 2 and errors[0] <= verify.tolerance(64) \
        and errors[1] <= verify.tolerance(96), errors


def test_pool_blocks_are_placed_by_a_queue_of_clgemms_own(queue):
    """The pools' allocator enqueues on a queue that holds nothing of the caller's (the
    placement behind a caller's waiting command crashed NVIDIA's driver), one per context
    and device; a block the pool holds is handed out again without a wait."""
    mine = cl.CommandQueue(queue.context, queue.device)     # a pool of its own, empty
    pool = clgemm.memory_pool(mine)
    assert isinstance(pool, cl_tools.MemoryPool) and pool.managed_bytes == 0
    placer = cache._placer(mine)
    assert placer is not mine and placer.int_ptr not in (mine.int_ptr, queue.int_ptr)
    assert placer.device == mine.device and placer.context == mine.context
    assert cache._placer(queue) is placer
    block = pool(12345)
    held = pool.managed_bytes
    del block
    again = pool(12345)
    assert pool.managed_bytes == held and pool.held_blocks == 0
    del again


ERROR_AFTER_UPLOAD = """
import numpy as np, pyopencl as cl, pyopencl.array as cla, clgemm
from clgemm import device, verify
q = device.queue(device.select())
a = verify.random_matrix(np.random.default_rng(), 32, 32)
da, db = cla.to_device(q, a), cla.to_device(q, a)
gate = cl.UserEvent(q.context)
da.add_event(gate)
r0 = clgemm.gemm(q, da, db)          # q now waits for the gate
try:
    clgemm.gemm(q, a, db, db, beta=1.0)  # c is b: refused, after a's upload was enqueued
except ValueError:
    pass
gate.set_status(cl.command_execution_status.COMPLETE)
print(verify.rel_error(r0.get(), verify.reference(a, a)))
"""


def test_a_call_refused_after_its_upload_returns_while_the_queue_waits():
    """A call with a numpy operand refused after the operand's upload was enqueued (c is
    b), while the queue waits for a user event: the upload, dropped with the error, waited
    for its copy holding the GIL, and the process hung for good. It is kept until the copy
    is done, and the error comes back at once."""
    errors = _errors_of(ERROR_AFTER_UPLOAD, "the refused call waited for the user event")
    assert len(errors) == 1 and errors[0] <= verify.tolerance(32), errors


@pytest.mark.parametrize("role", ["c", "a", "c moved", "a moved"])
def test_a_pooled_array_of_another_queue_is_kept_until_the_kernel_ran(queue, rng, role):
    """A result of one queue (a block of that queue's pool), used on another queue as c
    (or as a) by a kernel that waits for a user event, then dropped: its block went back
    to its pool, the first queue's next result took it, and the late kernel overwrote that
    result (or read it in place of its operand). It is kept until that kernel is done;
    also where it was moved to the other queue with .with_queue() (the block is still the
    first queue's pool's: taken for the other queue's, it was not kept, 20 of 20 wrong)."""
    a0, b0, x, y, z = (rand(rng, 64, 64) for _ in range(5))
    other = cl.CommandQueue(queue.context)
    r = clgemm.gemm(queue, cla.to_device(queue, a0), cla.to_device(queue, b0))
    r_host = r.get()
    if role.endswith("moved"):
        r = r.with_queue(other)
    role = role.split()[0]
    dx, dz = cla.to_device(other, x), cla.to_device(other, z)
    gate = cl.UserEvent(queue.context)
    (dx if role == "c" else dz).add_event(gate)
    s = []
    if role == "c":
        clgemm.gemm(other, dx, dz, r, beta=1.0)        # r += x @ z on the other queue
    else:       # r @ z on the other queue, twice (a repeated call's way, the express lane)
        s = [clgemm.gemm(other, r, dz) for _ in range(2)]
    del r
    _reused_while_waiting(gate, other, queue, x, y, s, r_host, z)


def _reused_while_waiting(gate, waiting, reuse, x, y, products, r_host, z):
    """With the dropped result's readers (`products`, or a write into it) waiting on
    `waiting` for `gate`, `reuse`'s next result (x @ y) runs and may take its block; then
    the gate opens: both are right only where that block was kept."""
    r2 = clgemm.gemm(reuse, cla.to_device(reuse, x), cla.to_device(reuse, y))
    reuse.finish()
    gate.set_status(cl.command_execution_status.COMPLETE)
    waiting.finish()
    assert close(r2.get(), verify.reference(x, y), 64)
    for product in products:
        assert close(product.get(), verify.reference(r_host, z), 64)


def test_a_result_dropped_before_its_kernel_ran_is_not_another_queues_result(queue, rng):
    """A result dropped while its kernel waits goes back to its pool; a call on another
    queue must not be handed that block (it was, and the first kernel overwrote its
    result once it ran)."""
    a, b, x, y = (rand(rng, 64, 64) for _ in range(4))
    da, db_ = cla.to_device(queue, a), cla.empty(queue, b.shape, np.float32)
    other = cl.CommandQueue(queue.context)
    with late_write(queue, db_, b):
        r1 = clgemm.gemm(queue, da, db_)
        del r1
        r2 = clgemm.gemm(other, cla.to_device(other, x), cla.to_device(other, y))
        before = r2.get()
    queue.finish()
    xy = verify.reference(x, y)
    assert close(before, xy, 64) and close(r2.get(), xy, 64)


def test_a_result_made_with_another_queues_pool_as_allocator_is_kept(queue, rng):
    """allocator=memory_pool(other): the result names this queue but its block is the other
    queue's pool's. Used here by a kernel that waits, then dropped, it went back to that
    pool, whose queue's next result took it before the kernel read it, where the result
    came through the check that wraps a caller's allocator (alpha = 0's zeros), which
    hid the pool's queue from hold_elsewhere."""
    a0, b0, x, y, z = (rand(rng, 64, 64) for _ in range(5))
    other = cl.CommandQueue(queue.context)
    r = clgemm.gemm(queue, cla.to_device(queue, a0), cla.to_device(queue, b0), alpha=0.0,
                    allocator=clgemm.memory_pool(other))
    r_host = r.get()
    dz = cla.to_device(queue, z)
    gate = cl.UserEvent(queue.context)
    dz.add_event(gate)
    s = [clgemm.gemm(queue, r, dz) for _ in range(2)]
    del r
    _reused_while_waiting(gate, queue, other, x, y, s, r_host, z)
