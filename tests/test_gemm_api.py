"""The library call's contract: numpy and Array in and out, both orders, transposed
operands, alpha/beta, c, the program cache, any layout and op, queues and events, threads,
and the kernel chosen without one named."""

import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clgemm
from clgemm import build, db, verify
from clgemm.gemm import GemmPlan
from clgemm.transpose import TransposePlan

from .conftest import P5, close, rand


@pytest.mark.parametrize("order_a", "CF")
@pytest.mark.parametrize("order_b", "CF")
@pytest.mark.parametrize("kernel,params", [("5", P5), ("2", {"TS": 4})])
def test_numpy_orders(queue, rng, order_a, order_b, kernel, params):
    a, b = rand(rng, 45, 23, order=order_a), rand(rng, 23, 31, order=order_b)
    c = clgemm.gemm(queue, a, b, kernel=kernel, params=params)
    assert isinstance(c, np.ndarray) and c.shape == (45, 31)
    assert close(c, verify.reference(a, b), 23)


@pytest.mark.parametrize("order_a", "CF")
@pytest.mark.parametrize("order_b", "CF")
def test_array_in_array_out(queue, rng, order_a, order_b):
    a, b = rand(rng, 33, 17, order=order_a), rand(rng, 17, 29, order=order_b)
    da, dB = cla.to_device(queue, a), cla.to_device(queue, b)
    dc = clgemm.gemm(queue, da, dB, kernel="5", params=P5)
    assert isinstance(dc, cla.Array) and dc.queue is queue and dc.shape == (33, 29)
    assert close(dc.get(), verify.reference(a, b), 17)


def test_array_result_stays_on_device(queue, rng, monkeypatch):
    """No host round trip for Array inputs: nothing is read back to the host."""
    a, b = cla.to_device(queue, rand(rng, 40, 40)), cla.to_device(queue, rand(rng, 40, 40))
    reads = []
    real = cl.enqueue_copy

    def spy(q, dest, src, **kw):
        if isinstance(dest, np.ndarray):
            reads.append(dest.shape)
        return real(q, dest, src, **kw)

    monkeypatch.setattr(cl, "enqueue_copy", spy)
    clgemm.gemm(queue, a, b, kernel="5", params=P5)
    assert reads == []


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("order", "CF")
@pytest.mark.parametrize("by", ["transpose", "kernel", "auto"])
def test_transposed_operands(queue, rng, trans_a, trans_b, order, by, monkeypatch):
    m, n, k = 19, 37, 11
    a = rand(rng, *((k, m) if trans_a else (m, k)), order=order)
    b = rand(rng, *((n, k) if trans_b else (k, n)), order=order)
    launches = []
    monkeypatch.setattr(GemmPlan, "bound", spy(GemmPlan.bound, launches))
    monkeypatch.setattr(TransposePlan, "bind", spy(TransposePlan.bind, launches))
    c = clgemm.gemm(queue, a, b, trans_a=trans_a, trans_b=trans_b, kernel="5", params=P5,
                    transposed_by=by)
    ref = verify.reference(a.T if trans_a else a, b.T if trans_b else b)
    assert close(c, ref, k)
    if by == "kernel":      # operands read as they lie: one launch, no transposes
        assert launches == ["GemmPlan"]
    if by == "auto":        # A^T read as it lies; B^T transposed unless C^T = B^T A^T avoids it
        op_a_t, op_b_t = trans_a != (order == "F"), trans_b != (order == "F")
        assert launches.count("TransposePlan") == (op_b_t and not op_a_t)
        assert launches.count("GemmPlan") == 1


def spy(method, log):
    def wrapper(self, *args, **kwargs):
        log.append(type(self).__name__)
        return method(self, *args, **kwargs)
    return wrapper


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("shape", [(64, 128, 48), (37, 53, 29), (1, 70, 33), (70, 1, 5)])
def test_kernel_reads_transposed_operands(queue, rng, ta, tb, shape):
    """The A_KMAJOR / B_NMAJOR builds of kernels 5 and 6, whole tiles (EXACT) and partial."""
    m, n, k = shape
    for kernel, params in (("5", P5), ("6", dict(P5, WIDTH=2, WPTN=4, WPTM=4))):
        a = rand(rng, *((k, m) if ta else (m, k)))
        b = rand(rng, *((n, k) if tb else (k, n)))
        c = clgemm.gemm(queue, a, b, trans_a=ta, trans_b=tb, kernel=kernel, params=params,
                        transposed_by="kernel")
        assert close(c, verify.reference(a.T if ta else a, b.T if tb else b), k)


def test_transposed_by_is_checked(queue, rng):
    with pytest.raises(ValueError, match="transposed_by must be one of"):
        clgemm.gemm(queue, rand(rng, 4, 4), rand(rng, 4, 4), transposed_by="magic")
    with pytest.raises(ValueError, match="kernel 4 .* cannot read transposed operands"):
        clgemm.gemm(queue, rand(rng, 4, 4), rand(rng, 4, 4), trans_a=True, kernel="4",
                    transposed_by="kernel")


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (0.0, 1.0), (-1.5, 0.5), (2.0, -1.0), (0.0, 0.0)])
@pytest.mark.parametrize("as_array", [False, True])
def test_alpha_beta_into_c(queue, rng, alpha, beta, as_array):
    a, b, c0 = rand(rng, 21, 13), rand(rng, 13, 18), rand(rng, 21, 18)
    c = cla.to_device(queue, c0) if as_array else c0.copy()
    out = clgemm.gemm(queue, a, b, c, alpha=alpha, beta=beta, kernel="5", params=P5)
    assert out is c
    got = c.get() if as_array else c
    ref = verify.reference(a, b, alpha, beta, c0)
    if not np.any(ref):  # alpha = beta = 0: exactly zero
        assert not np.any(got)
    else:
        assert close(got, ref, 13)


@pytest.mark.parametrize("kernel,params", [("1", {"TS": 4}), ("2", {"TS": 4}), ("3", None), ("5", P5)])
def test_beta_zero_never_reads_c(queue, rng, kernel, params):
    a, b = rand(rng, 30, 9), rand(rng, 9, 22)
    c = np.full((30, 22), np.nan, np.float32)
    clgemm.gemm(queue, a, b, c, beta=0.0, kernel=kernel, params=params)
    assert np.all(np.isfinite(c))
    assert close(c, verify.reference(a, b), 9)


def test_fortran_c_is_filled_in_place(queue, rng):
    a, b = rand(rng, 14, 6), rand(rng, 6, 10)
    c0 = rand(rng, 14, 10, order="F")
    c = cla.to_device(queue, c0)
    clgemm.gemm(queue, a, b, c, alpha=1.0, beta=1.0, kernel="5", params=P5)
    assert close(c.get(), verify.reference(a, b, 1.0, 1.0, c0), 6)


def test_program_cache(queue, rng):
    a, b = rand(rng, 8, 8), rand(rng, 8, 8)
    params = {"TS": 8}
    clgemm.gemm(queue, a, b, kernel="2", params=params)
    n = build.cache_size()
    clgemm.gemm(queue, a, b, kernel="2", params=params)
    assert build.cache_size() == n


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40),
       ta=st.booleans(), tb=st.booleans(), orders=st.sampled_from(["CCC", "FCF", "CFC", "FFF", "FFC"]),
       with_c=st.booleans(), beta=st.sampled_from([0.0, 1.0, -0.5]), as_array=st.booleans(),
       kernel=st.sampled_from(["3", "5", "6", "7"]), by=st.sampled_from(["transpose", "kernel", "auto"]),
       guarded=st.booleans())
def test_any_layout_any_op(queue, m, n, k, ta, tb, orders, with_c, beta, as_array, kernel, by,
                           guarded):
    """Every layout and op through gemm(); kernel 7 guarded (k < 48 runs kernel 5 then) or
    alone, so that its own layouts are covered at these small shapes too."""
    rng = np.random.default_rng()
    a = rand(rng, *((k, m) if ta else (m, k)), order=orders[0])
    b = rand(rng, *((n, k) if tb else (k, n)), order=orders[1])
    c0 = rand(rng, m, n, order=orders[2])
    put = (lambda x: cla.to_device(queue, x)) if as_array else (lambda x: x.copy(order="K"))
    params = {"3": dict(TSM=16, TSN=16, TSK=4, WPTM=2, WPTN=2),
              "5": P5, "6": dict(P5, WIDTH=2, WPTN=4, WPTM=4),
              "7": dict(TSM=32, TSN=32, TSK=16, WM=32, WN=32, FOLD=8)}[kernel]
    c = put(c0) if with_c else None
    out = clgemm.gemm(queue, put(a), put(b), c, alpha=1.5, beta=beta, trans_a=ta, trans_b=tb,
                      kernel=kernel, params=params, guard=guarded,
                      transposed_by="transpose" if kernel in ("3", "7") and by == "kernel" else by)
    got = out.get() if as_array else out
    opa, opb, b_eff = a.T if ta else a, b.T if tb else b, beta if with_c else 0.0
    ref = verify.reference(opa, opb, 1.5, b_eff, c0)
    assert got.shape == (m, n)
    # m = n = 1 is one sum, which may cancel: judged against its terms' magnitudes too
    assert verify.passes(np.asarray(got), ref, k, opa, opb, 1.5, b_eff, c0)
    if with_c:
        assert out is c


# ------------------------------------------------------------------ queues and host time

def test_out_of_order_queue_is_refused(queue, rng):
    """clgemm's launches follow each other only on an in-order queue; on another one a
    transpose could run after the product that reads it. Refused, naming why."""
    ooo = cl.CommandQueue(queue.context,
                          properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    a = rand(rng, 5, 6)
    for call in (lambda: clgemm.gemm(ooo, a, a.T), lambda: clgemm.transpose(ooo, a),
                 lambda: GemmPlan(ooo, "5", P5)):
        with pytest.raises(ValueError, match="in-order"):
            call()
    with pytest.raises(TypeError, match="CommandQueue"):
        clgemm.gemm(queue.context, a, a.T)


@pytest.mark.parametrize("op", ["gemm", "transpose"])
def test_pending_work_on_array_operands_is_waited_for(queue, rng, op):
    """An Array whose contents are still being written by work on another queue (its
    .events) is read only after that work: here a user event stands for it. The result
    Array carries an event for the work that wrote it, so others can wait in turn."""
    other = cl.CommandQueue(queue.context)
    a, b = rand(rng, 37, 29), rand(rng, 29, 41)
    da, db_ = cla.to_device(other, np.zeros_like(a)), cla.to_device(queue, b)
    gate = cl.UserEvent(queue.context)
    # the "other work": a copy of the real values into da that cannot start before the gate
    da.add_event(cl.enqueue_copy(other, da.base_data, a, is_blocking=False, wait_for=[gate]))
    out = (clgemm.gemm(queue, da, db_, kernel="5", params=P5) if op == "gemm"
           else clgemm.transpose(queue, da))
    assert out.events, "the result carries the event of the work that writes it"
    assert out.events[-1].command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    want = verify.reference(a, b) if op == "gemm" else a.T
    assert close(out.get(), want, 29)


def test_repeated_calls_make_no_new_kernel_objects(queue, rng, monkeypatch):
    """A kernel object costs ~150 us of host time in pyopencl: after the first call, gemm()
    takes them from a pool (build.bind) instead of creating them."""
    a, b = rand(rng, 40, 30), rand(rng, 30, 20)
    clgemm.gemm(queue, a, b, kernel="5", params=P5)
    made = []
    real = cl.Kernel
    monkeypatch.setattr(cl, "Kernel", lambda *args: made.append(args) or real(*args))
    for _ in range(5):
        assert close(clgemm.gemm(queue, a, b, kernel="5", params=P5), verify.reference(a, b), 30)
    assert made == []


def test_launches_bound_at_once_keep_their_own_arguments(queue, rng):
    """Two launches of one program bound before either runs hold two kernel objects: the
    second binding must not change the first one's operands, in either order of running."""
    from clgemm import operands
    plan = GemmPlan(queue, "5", P5)
    pairs = [(rand(rng, 33, 20), rand(rng, 20, 17)) for _ in range(2)]
    outs = [operands.empty(queue, 33, 17, 20) for _ in pairs]
    calls = [plan.bind(operands.raw(queue, a, 4), operands.raw(queue, b, 4), out)
             for (a, b), out in zip(pairs, outs)]
    for order in ((0, 1), (1, 0)):
        for i in order:
            operands.poison(queue, outs[i])
        for i in order:
            cl.wait_for_events(calls[i]())
        for (a, b), out in zip(pairs, outs):
            assert close(operands.to_host(queue, out), verify.reference(a, b), 20)


def test_threads_get_their_own_products(queue):
    """gemm() from several threads at once, each on its own queue of one context (the way
    README's "Threads" asks for): the program cache, the pooled kernel objects, the plan
    cache and the kept choices are shared, plans are made and evicted (more shapes than
    the cache keeps) while other threads call, and no thread's operands reach another's
    product. On the H200 this ran clean in 8 of 8 runs; threads sharing one queue crashed
    NVIDIA's driver (README, "Threads")."""
    from concurrent.futures import ThreadPoolExecutor

    def work(seed):
        r = np.random.default_rng(seed)
        q = cl.CommandQueue(queue.context, queue.device)
        bad = []
        for i in range(6):
            m, n, k = (int(v) for v in r.integers(1, 60, 3))
            a, b = rand(r, m, k), rand(r, k, n)
            out = clgemm.gemm(q, cla.to_device(q, a), cla.to_device(q, b),
                              kernel="5", params=P5).get()
            bad += [] if close(out, verify.reference(a, b), k) else [(seed, i, m, n, k)]
        return bad

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)      # threads interleave between any two bytecodes
    try:
        with ThreadPoolExecutor(4) as pool:
            assert sum(pool.map(work, range(8)), []) == []
    finally:
        sys.setswitchinterval(interval)


def test_without_a_kernel_an_entry_beaten_at_its_own_shape_is_not_taken(queue, tmp_path, monkeypatch):
    """gemm() without a kernel chooses among every kernel's entries; where two kernels were
    tuned at one shape, the slower one's entry does not stand for that shape elsewhere. A
    narrow product passed over kernel 5's wide tiles (tile waste) and took kernel 2's small
    ones, four times slower on the H200 at 4096 x 32 x 4096."""
    monkeypatch.setenv("CLGEMM_HOME", str(tmp_path))
    dev = queue.device
    db.record_best(dev, "2", 64, 64, 64, {"TS": 4}, 5.0)
    db.record_best(dev, "5", 64, 64, 64, P5, 10.0)
    plan = GemmPlan(queue, None, shape=(64, 4, 64))
    assert plan.kernel.key == "5" and plan.params == P5
    db.record_best(dev, "2", 64, 64, 64, {"TS": 4}, 50.0)      # now kernel 2 was the faster
    assert GemmPlan(queue, None, shape=(64, 4, 64)).kernel.key == "2"
    assert GemmPlan(queue, "5", shape=(64, 4, 64)).params == P5    # a kernel named: its own


def test_the_exported_helpers_name_what_they_take(queue):
    """memory_pool(None) and memory_pool(context) raised AttributeErrors about `.context`,
    device_queue(None) and device_queue("1") a RuntimeError of std::bad_cast."""
    for wrong in (None, queue.context):
        with pytest.raises(TypeError, match="memory_pool takes a pyopencl CommandQueue"):
            clgemm.memory_pool(wrong)
    for wrong in (None, "1"):
        with pytest.raises(TypeError, match="device_queue takes a pyopencl Device"):
            clgemm.device_queue(wrong)
    assert clgemm.memory_pool(queue) is clgemm.memory_pool(queue)


@pytest.mark.parametrize("kernel", [None, "1", "5", "7"])
@pytest.mark.parametrize("where", ["numpy", "device", "block"])
def test_alpha_zero_is_beta_c_and_never_reads_a_or_b(queue, rng, kernel, where):
    """alpha = 0 gives beta * C, as BLAS has it: A and B are checked but not read, so a NaN
    or an Inf there cannot reach C (0 * NaN put NaNs into C through every kernel, and a
    result without c held NaNs, not zeros); beta = 0 still never reads C."""
    a, b = rand(rng, 4, 8), rand(rng, 8, 3)
    a[1, 2], b[5, 0] = np.nan, np.inf
    c0 = rand(rng, 4, 3)
    if where == "numpy":
        got = clgemm.gemm(queue, a, b, c0.copy(), alpha=0.0, beta=1.5, kernel=kernel)
        zero = clgemm.gemm(queue, a, b, alpha=0.0, kernel=kernel)
    else:
        da, db_ = cla.to_device(queue, a), cla.to_device(queue, b)
        if where == "device":
            dc = cla.to_device(queue, c0)
        else:                          # c a block of a larger matrix
            host = np.full((6, 5), 7.0, np.float32)
            host[1:5, 1:4] = c0
            big = cla.to_device(queue, host)
            dc = big[1:5, 1:4]
        res = clgemm.gemm(queue, da, db_, dc, alpha=0.0, beta=1.5, kernel=kernel)
        got = big.get()[1:5, 1:4] if where == "block" else res.get()
        zero = clgemm.gemm(queue, da, db_, alpha=0.0, kernel=kernel).get()
        if where == "block":
            outside = big.get()
            outside[1:5, 1:4] = 7.0
            assert (outside == 7.0).all()           # nothing outside the block written
    assert np.array_equal(got, np.float32(1.5) * c0)
    assert np.array_equal(zero, np.zeros((4, 3), np.float32))
    nan_c = np.full((4, 3), np.nan, np.float32)
    assert np.array_equal(clgemm.gemm(queue, a, b, nan_c, alpha=0.0, beta=0.0, kernel=kernel),
                          np.zeros((4, 3), np.float32))


@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_a_scalar_that_is_zero_in_float32_is_refused(queue, rng, name):
    """alpha or beta below float32's range (1e-46) was taken as 0 without a word, as one
    above it is refused; 0 itself, and the smallest float32, are taken."""
    a, b = rand(rng, 4, 4), rand(rng, 4, 4)
    c = rand(rng, 4, 4)
    with pytest.raises(ValueError, match=f"{name}=1e-46 is below float32's range"):
        clgemm.gemm(queue, a, b, c, **{name: 1e-46})
    clgemm.gemm(queue, a, b, c, **{name: float(np.finfo(np.float32).smallest_subnormal)})
    clgemm.gemm(queue, a, b, c, **{name: 0.0})
