"""The fast path of repeated calls: gemm()'s plan cache, clgemm.Plan, and the memory pool."""

import sys
import time
import types

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cl_tools
import pytest

import clgemm
from clgemm import cache, db, store, verify

from .conftest import P5, rand

pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


def hits():
    return clgemm.cache_info()["hits"]


def test_a_repeated_call_takes_the_cached_plan(queue, rng):
    a, b = cla.to_device(queue, rand(rng, 37, 29)), cla.to_device(queue, rand(rng, 29, 41))
    first = clgemm.gemm(queue, a, b, kernel="5", params=P5).get()
    assert clgemm.cache_info()["misses"] == 1 and hits() == 0
    for i in range(3):
        again = clgemm.gemm(queue, a, b, kernel="5", params=P5).get()
        assert hits() == i + 1
        assert np.array_equal(again, first)          # bit for bit the uncached result
    plan = next(iter(cache.plans.values()))
    assert plan.calls == 4 and plan.reused == 3      # one layout, laid out once


@pytest.fixture
def full_path(monkeypatch):
    """The calls that went the full way (Plan._call), each as its plan, counted: a call on
    gemm()'s or a Plan's express lane (Plan._again) does not."""
    from clgemm.plan import Plan
    seen = []
    call = Plan._call

    def counted(self, *args, **kwargs):
        seen.append(self)
        return call(self, *args, **kwargs)
    monkeypatch.setattr(Plan, "_call", counted)
    return seen


@pytest.mark.parametrize("shape,floats", [((37, 40, 28), 1), ((37, 41, 29), 0),
                                          ((37, 41, 29), 1)], ids=["one-kernel", "copies", "floats"])
def test_a_plain_repeated_call_takes_the_express_lane(queue, rng, full_path, thresholds, shape,
                                                      floats):
    """gemm(queue, a, b) with every option at its default: from the third identical call on
    (the first makes the plan, the second finds it and sets the lane) the launch goes the
    express way, counted as a cache hit, its result bit for bit the full path's; for a
    layout of one kernel (rows of whole vectors, or any read a float at a time) and one with
    copies in and out alike."""
    on = 10**18 if floats else 0
    thresholds(unaligned_max_volume=on, unaligned_light_volume=on)
    m, n, k = shape
    a, b = cla.to_device(queue, rand(rng, m, k)), cla.to_device(queue, rand(rng, k, n))
    first = clgemm.gemm(queue, a, b).get()
    clgemm.gemm(queue, a, b)
    assert len(full_path) == 2 and clgemm.cache_info()["hits"] == 1
    for i in range(3):
        out = clgemm.gemm(queue, a, b)
        assert np.array_equal(out.get(), first)
        assert clgemm.cache_info()["hits"] == 2 + i
    assert len(full_path) == 2
    plan = next(iter(cache.plans.values()))
    assert plan.calls == 5 and plan.reused == 4
    assert (next(iter(plan._variants.values())).single is None) == (n % 4 != 0 and not floats)
    plan2 = clgemm.Plan(queue, m, n, k)              # a Plan's own calls alike
    plan2(a, b)
    plan2(a, b)
    assert np.array_equal(plan2(a, b).get(), first) and len(full_path) == 3  # its first


def test_the_express_lane_takes_no_none_for_a_dead_operand(queue, rng):
    """Once the lane's Arrays are gone its weakrefs give None: a call with None operands
    still gets the error that names the operand, from gemm() and from a Plan alike."""
    import gc
    a, b = cla.to_device(queue, rand(rng, 8, 8)), cla.to_device(queue, rand(rng, 8, 8))
    plan = clgemm.Plan(queue, 8, 8, 8)
    for _ in range(3):
        clgemm.gemm(queue, a, b)
        plan(a, b)
    del a, b
    gc.collect()
    for call in (lambda: clgemm.gemm(queue, None, None), lambda: plan(None, None)):
        with pytest.raises(TypeError, match="a must be"):
            call()


def test_alpha_zero_of_either_sign_gives_beta_c_between_lane_calls(queue):
    """alpha = 0.0 or -0.0 (equal as floats) is beta * C, zeros without c, as BLAS has it
    (C = beta * C, +0.0 at beta 0; numpy's -0.0 times the product kept its sign before
    2026-12-05), between calls on the lane and the full path's reused layout."""
    x = np.ones((40, 40), np.float32)
    a, b = cla.to_device(queue, x), cla.to_device(queue, x)
    for alpha in (1.0, 1.0, 0.0, 0.0, -0.0, 1.0, -0.0, 2.0):
        out = clgemm.gemm(queue, a, b, alpha=alpha).get()
        want = alpha * (x.astype(np.float64) @ x) if alpha else np.zeros((40, 40))
        assert np.array_equal(out, want) and not np.signbit(out).any()


@pytest.mark.parametrize("change", ["b", "alpha", "beta", "c", "option", "database", "order",
                                    "cleared"])
def test_what_leaves_the_express_lane(queue, rng, full_path, change):
    """A call that differs from the lane's in anything it rests on goes the full way and
    gives its own right result; the lane then follows the newest such call."""
    m, n, k = 37, 40, 28
    a0, b0 = rand(rng, m, k), rand(rng, k, n)
    a, b = cla.to_device(queue, a0), cla.to_device(queue, b0)
    for _ in range(3):
        clgemm.gemm(queue, a, b)
    seen = len(full_path)
    kwargs, c, ref = {}, None, verify.reference(a0, b0)
    if change == "b":
        b0 = rand(rng, k, n)
        b = cla.to_device(queue, b0)
        ref = verify.reference(a0, b0)
    elif change == "alpha":
        kwargs, ref = dict(alpha=-2.0), verify.reference(a0, b0, -2.0)
    elif change == "beta":             # no c: beta is not read, yet the lane keeps its own
        kwargs = dict(beta=3.0)
    elif change == "c":                # written in place, every time (beta 0: not read)
        c = cla.to_device(queue, rand(rng, m, n))
    elif change == "option":
        kwargs = dict(split_k=2)
    elif change == "database":         # a new tune: the next call plans again
        db.record_best(queue.device, "5", m, n, k, P5, 1.0)
    elif change == "order":            # the same values, Fortran-ordered: another layout
        a = cla.to_device(queue, np.asfortranarray(a0))
    else:
        clgemm.clear_cache()
    out = clgemm.gemm(queue, a, b, c, **kwargs)
    assert len(full_path) == seen + 1, "the call took the express lane"
    assert verify.rel_error(out.get(), ref) <= verify.tolerance(k)
    if change == "database":
        assert full_path[-1] is not full_path[seen - 1]      # a new plan's layout
    for _ in range(3):                 # the lane follows the newest calls without options
        before = len(full_path)
        again = clgemm.gemm(queue, a, b, c, **kwargs)
    assert verify.rel_error(again.get(), ref) <= verify.tolerance(k)
    assert (len(full_path) == before) == (change not in ("c", "option"))


def test_a_tune_recorded_while_a_plan_is_made_is_seen_by_the_next_call(queue, rng, monkeypatch):
    """A tune's entry lands (another thread, in this process) while gemm() makes the plan
    for that shape: the plan, made from the old entries, was kept under the database's new
    generation, and every later call took it. The next call plans again, from the new."""
    gemm_mod = sys.modules["clgemm.gemm"]        # (clgemm.gemm is the function)
    old, new = dict(P5, TSN=64, WPTN=8), dict(P5, TSN=32, WPTN=4)
    db.record_best(queue.device, "5", 64, 64, 64, old, 100.0)

    class TunedMeanwhile(clgemm.Plan):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            db.record_best(queue.device, "5", 64, 64, 64, new, 200.0)

    a, b = cla.to_device(queue, rand(rng, 64, 64)), cla.to_device(queue, rand(rng, 64, 64))
    with monkeypatch.context() as m:
        m.setattr(gemm_mod, "Plan", TunedMeanwhile)
        clgemm.gemm(queue, a, b)
    misses = clgemm.cache_info()["misses"]
    clgemm.gemm(queue, a, b)
    assert clgemm.cache_info()["misses"] == misses + 1
    assert clgemm.Plan(queue, 64, 64, 64).describe()["params"]["TSN"] == 32


@pytest.mark.parametrize("change", ["shape", "trans", "kernel", "params", "split_k", "database"])
def test_what_the_plan_keys_on_misses_the_cache(queue, rng, change):
    a, b = cla.to_device(queue, rand(rng, 37, 29)), cla.to_device(queue, rand(rng, 29, 41))
    clgemm.gemm(queue, a, b, kernel="5", params=P5)
    misses = clgemm.cache_info()["misses"]
    args, kwargs = (a, b), dict(kernel="5", params=P5)
    if change == "shape":
        args = (cla.to_device(queue, rand(rng, 36, 29)), b)
    elif change == "trans":
        args, kwargs = (cla.to_device(queue, rand(rng, 29, 37)), b), dict(kwargs, trans_a=True)
    elif change == "kernel":
        kwargs = dict(kernel="6", params=dict(P5, WIDTH=1))
    elif change == "params":
        kwargs = dict(kwargs, params=dict(P5, PAD=1))
    elif change == "split_k":
        kwargs = dict(kwargs, split_k=2)
    else:                                            # a new tune is seen by the next call
        db.record_best(queue.device, "5", 37, 41, 29, P5, 1.0)
        kwargs = dict(kernel="5")
        clgemm.gemm(queue, *args, **kwargs)
        misses = clgemm.cache_info()["misses"]
        db.record_best(queue.device, "5", 37, 41, 29, dict(P5, PAD=1), 2.0)
    out = clgemm.gemm(queue, *args, **kwargs)
    assert clgemm.cache_info()["misses"] == misses + 1
    opa = args[0].get().T if kwargs.get("trans_a") else args[0].get()
    assert verify.rel_error(out.get(), verify.reference(opa, b.get())) <= verify.tolerance(29)
    if change == "database":
        assert next(reversed(cache.plans.values())).params == dict(P5, PAD=1)


def test_another_process_tune_is_seen_within_restat_s(queue, rng, monkeypatch):
    """gemm() reads no file on a cached call: a tune written by another process counts from
    the first call db.RESTAT_S after the last look, not before."""
    clock = [time.monotonic()]
    monkeypatch.setattr(db, "_seen", {})
    monkeypatch.setattr(db, "time", types.SimpleNamespace(monotonic=lambda: clock[0],
                                                          strftime=time.strftime))
    db._restat_at[0] = 0.0
    a, b = cla.to_device(queue, rand(rng, 37, 29)), cla.to_device(queue, rand(rng, 29, 41))
    clgemm.gemm(queue, a, b, kernel="5")
    assert next(reversed(cache.plans.values())).params != P5
    written = db._written
    db.record_best(queue.device, "5", 37, 41, 29, P5, 1.0)
    monkeypatch.setattr(db, "_written", written)         # as if another process wrote it
    db._restat_at[0] = clock[0] + db.RESTAT_S
    misses = clgemm.cache_info()["misses"]
    clock[0] += db.RESTAT_S / 2
    clgemm.gemm(queue, a, b, kernel="5")
    assert clgemm.cache_info()["misses"] == misses             # not looked at yet
    clock[0] += db.RESTAT_S / 2
    out = clgemm.gemm(queue, a, b, kernel="5")
    assert clgemm.cache_info()["misses"] == misses + 1
    assert next(reversed(cache.plans.values())).params == P5
    assert verify.rel_error(out.get(), verify.reference(a.get(), b.get())) <= verify.tolerance(29)


def test_a_plan_lays_out_each_order_and_beta_once(queue, rng):
    """Orders of a, b and c, c or none, beta zero or not: each combination is laid out on
    its first call and reused after; every result is right, alpha and beta as given."""
    plan = clgemm.Plan(queue, 33, 21, 17, kernel="5", params=P5)
    for order in ("CC", "FC", "CF", "FF"):
        a = cla.to_device(queue, rand(rng, 33, 17, order=order[0]))
        b = cla.to_device(queue, rand(rng, 17, 21, order=order[1]))
        for c_order, alpha, beta in ((None, 1.0, 0.0), ("C", 2.0, 0.5), ("F", -1.0, 0.0),
                                     ("C", 0.5, -2.0)):
            for _ in range(2):
                c0 = rand(rng, 33, 21, order=c_order or "C")
                c = None if c_order is None else cla.to_device(queue, c0)
                out = plan(a, b, c, alpha=alpha, beta=beta)
                ref = verify.reference(a.get(), b.get(), alpha, beta if c is not None else 0.0, c0)
                assert out is c or c is None
                assert verify.rel_error(out.get(), ref) <= verify.tolerance(17)
    assert plan.reused == plan.calls - len(plan._variants)


def test_a_plan_takes_numpy_and_refuses_other_shapes(queue, rng):
    plan = clgemm.Plan(queue, 20, 30, 10, trans_b=True, kernel="5", params=P5)
    a, b = rand(rng, 20, 10), rand(rng, 30, 10)
    out = plan(a, b)
    assert isinstance(out, np.ndarray)
    assert verify.rel_error(out, verify.reference(a, b.T)) <= verify.tolerance(10)
    with pytest.raises(ValueError, match=r"b has shape \(10, 30\); this plan multiplies"):
        plan(a, b.T.copy())
    with pytest.raises(ValueError, match="c has shape"):
        plan(a, b, np.zeros((30, 20), np.float32))
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        clgemm.Plan(queue, 20, 30, 0)
    with pytest.raises(TypeError, match="allocator must be callable"):
        clgemm.Plan(queue, 20, 30, 10, allocator=5)


def test_in_steady_state_the_pool_hands_back_the_same_buffers(queue, rng):
    """Each result comes from the pool; once dropped it goes back, and the next call takes
    the same memory: the pool grows no more after the first calls."""
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    a, b = cla.to_device(queue, rand(rng, 40, 30)), cla.to_device(queue, rand(rng, 30, 50))
    for _ in range(3):
        clgemm.gemm(queue, a, b, kernel="5", params=P5, allocator=pool)
    queue.finish()
    held, ptrs = pool.managed_bytes, set()
    for _ in range(10):
        out = clgemm.gemm(queue, a, b, kernel="5", params=P5, allocator=pool)
        ptrs.add(out.base_data.int_ptr)
        assert out.allocator is pool
        del out
    assert pool.managed_bytes == held and len(ptrs) == 1


def test_a_plan_keeps_no_caller_buffer_alive(queue, rng):
    """A cached layout points its kernels at each call's buffers without holding them: a
    result the caller dropped goes back to the pool at once."""
    import gc
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    plan = clgemm.Plan(queue, 21, 19, 7, kernel="5", params=P5, allocator=pool)
    a, b = cla.to_device(queue, rand(rng, 21, 7)), cla.to_device(queue, rand(rng, 7, 19))
    out = plan(a, b)
    queue.finish()
    active = pool.active_blocks
    del out
    gc.collect()
    assert pool.active_blocks == active - 1



def test_every_result_is_an_array_of_its_own(queue, rng):
    """After the first, a plan's results are made by copying the first one's attributes
    (arrays.Results): each must still be a whole Array of its own (its buffer, event,
    order, allocator) that pyopencl's operations take, and the copying holds none alive:
    once all are dropped the pool hands their very buffers out again."""
    import gc
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    for order in "CF":        # both operands Fortran-ordered: C is written transposed
        plan = clgemm.Plan(queue, 21, 19, 7, kernel="5", params=P5, allocator=pool)
        ha, hb = rand(rng, 21, 7, order=order), rand(rng, 7, 19, order=order)
        a, b = cla.to_device(queue, ha), cla.to_device(queue, hb)
        ref = verify.reference(ha, hb)
        outs = [plan(a, b) for _ in range(4)]      # the first by pyopencl's constructor
        ptrs = {o.base_data.int_ptr for o in outs}
        assert len(ptrs) == 4
        for o in outs:
            assert type(o) is cla.Array and o.shape == (21, 19) and o.dtype == np.float32
            assert o.flags.c_contiguous if order == "C" else o.flags.f_contiguous
            assert o.allocator is pool and o.queue is queue and len(o.events) == 1
            assert verify.rel_error(o.get(), ref) <= verify.tolerance(7)
        assert outs[1].events[0] is not outs[2].events[0]
        twice = (outs[3] * 2).get()         # a pyopencl operation on a copied Array
        assert verify.rel_error(twice, 2 * ref) <= verify.tolerance(7)
        del outs, o
        gc.collect()
        again = [pool(4 * 21 * 19) for _ in range(4)]
        assert {x.int_ptr for x in again} == ptrs, f"{order}: a result's buffer was kept alive"
        del again


def test_results_of_an_array_with_more_state_are_constructed_each_time(queue, rng,
                                                                         monkeypatch):
    """A pyopencl whose Array keeps more than values fixed by the plan (here a list, which
    copies would share, or the buffer under another name) must get its constructor on every
    call: a copied Array would share that state or point at the first call's buffer."""
    from clgemm import arrays
    made = []

    def constructor(queue, shape, strides, buf, allocator, ev):
        arr = cla.Array(queue, shape, np.float32, allocator=allocator, data=buf,
                        strides=strides, events=[ev])
        arr.extra = [buf] if len(made) % 2 else buf     # both kinds of state, by turns
        made.append(arr)
        return arr
    monkeypatch.setattr(arrays, "new_array", constructor)
    for _ in range(2):
        res = arrays.Results(queue, (3, 4), (16, 4), None)
        for _ in range(3):
            buf = cla.empty(queue, (3, 4), np.float32).base_data
            out = res(buf, cl.enqueue_marker(queue))
            assert out.base_data is buf and out.extra is not None
    assert len(made) == 6


def test_the_same_operands_again_and_others_in_their_place(queue, rng):
    """A call with the previous call's Arrays skips their checks, holding them only by weak
    references: the plan keeps no operand alive, and Arrays made after them (which may
    take their ids), in another order or over another buffer, are laid out as they are."""
    import gc
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    plan = clgemm.Plan(queue, 33, 21, 17, kernel="5", params=P5)
    for order in ("CC", "FC", "CC", "CF", "FF", "CC"):
        x, y = rand(rng, 33, 17, order=order[0]), rand(rng, 17, 21, order=order[1])
        a = cla.to_device(queue, x, allocator=pool)
        b = cla.to_device(queue, y, allocator=pool)
        for _ in range(3):
            out = plan(a, b)
            assert verify.rel_error(out.get(), verify.reference(x, y)) <= verify.tolerance(17)
        del out
        queue.finish()
        active = pool.active_blocks
        del a, b
        gc.collect()
        assert pool.active_blocks == active - 2, f"{order}: the plan kept an operand alive"
    pairs = []                                      # live pairs in other orders, in turn
    for order in ("CF", "FC", "CC"):
        x, y = rand(rng, 33, 17, order=order[0]), rand(rng, 17, 21, order=order[1])
        pairs.append((cla.to_device(queue, x), cla.to_device(queue, y), verify.reference(x, y)))
    for a, b, ref in pairs * 3:
        assert verify.rel_error(plan(a, b).get(), ref) <= verify.tolerance(17)
    # with c: the same c again at beta zero and not, and another c (other order) in turn
    a, b, ref = pairs[0]
    cs = [cla.to_device(queue, rand(rng, 33, 21, order=o), allocator=pool) for o in "CF"]
    for i, (c, beta) in enumerate([(cs[0], 0.0), (cs[0], 0.5), (cs[0], 0.0), (cs[1], 1.0),
                                   (cs[0], -2.0), (cs[1], 0.0), (cs[1], 0.5)]):
        before = c.get()
        assert plan(a, b, c, alpha=1.5, beta=beta) is c
        want = verify.reference(a.get(), b.get(), 1.5, beta, before)
        assert verify.rel_error(c.get(), want) <= verify.tolerance(17), f"call {i}"
    queue.finish()
    active = pool.active_blocks
    del c, cs
    gc.collect()
    assert pool.active_blocks == active - 2, "the plan kept a c alive"

def test_gemm_records_the_shapes_it_plans_when_asked(queue, rng, monkeypatch, tmp_path):
    """CLGEMM_RECORD_SHAPES=1: each shape gemm() plans is written once, with the kernel
    that ran it, for `clgemm tune --recorded`; cached calls write nothing more."""
    from clgemm import record
    monkeypatch.setattr(record, "_enabled", None)
    monkeypatch.setattr(record, "_noted", set())
    monkeypatch.setenv(record.ENV, "1")
    a, b = cla.to_device(queue, rand(rng, 7, 5)), cla.to_device(queue, rand(rng, 5, 3))
    for _ in range(3):
        clgemm.gemm(queue, a, b, kernel="5", params=P5)
    clgemm.gemm(queue, b.T.copy(), a.T.copy(), kernel="3")
    assert record.recorded(queue.device) == [("5", 7, 3, 5), ("3", 3, 7, 5)]


@pytest.mark.parametrize("line", ['"kernel": "5", "m": 2.7, "n": 3, "k": 4',
                                  '"kernel": "5", "m": true, "n": 3, "k": 4',
                                  '"kernel": "5", "m": 2, "n": 3, "k": Infinity',
                                  '"kernel": "99", "m": 2, "n": 3, "k": 4',
                                  '"kernel": ["5"], "m": 2, "n": 3, "k": 4',
                                  # a form at a shape it does not take stopped the whole tune
                                  '"kernel": "matvec-dot", "m": 1, "n": 5, "k": 4'])
def test_a_recorded_line_that_is_no_shape_of_a_tunable_kernel_is_skipped(queue, line):
    """`clgemm tune --recorded` reads the shapes gemm() wrote; a line edited into something
    else is skipped with a warning, the others still read: no traceback, no 2.7 read as 2."""
    import json
    from clgemm import record
    dev = db.device_key(queue.device)
    good = json.dumps({"device": dev, "kernel": "5", "m": 7, "n": 3, "k": 5})
    record.path().parent.mkdir(parents=True, exist_ok=True)
    record.path().write_text(f'{{"device": {json.dumps(dev)}, {line}}}\n{good}\n')
    with pytest.warns(db.DataWarning, match="line 1 ignored"):
        assert record.recorded(queue.device) == [("5", 7, 3, 5)]


def test_a_device_database_carries_its_heuristics_thresholds(queue):
    """Thresholds measured on a device live in its database ("thresholds"), over the
    generic defaults in clgemm/thresholds.py; a bad value is skipped with a warning."""
    import json
    from clgemm import thresholds
    from clgemm.gemm import GemmPlan
    dev = queue.device
    assert not GemmPlan(queue, "5", P5).kmajor_a(64, 64, 64)       # the defaults: 4096, 2^38
    db.record_best(dev, "5", 64, 64, 64, P5, 1.0)
    doc = json.loads(db.db_path(dev).read_text())
    doc["thresholds"] = {"kmajor_min_n": 64, "kmajor_min_volume": 64**3, "tile_waste": -1}
    store.write_atomic(db.db_path(dev), doc)
    with pytest.warns(db.DataWarning, match="threshold 'tile_waste' = -1 ignored"):
        plan = GemmPlan(queue, "5", P5)
    assert plan.kmajor_a(64, 64, 64) and not plan.kmajor_a(64, 32, 64)
    assert plan.facts["tile_waste"] == thresholds.DEFAULTS["tile_waste"]
    db.record_best(dev, "5", 32, 32, 32, P5, 1.0)        # a new entry keeps the thresholds
    assert json.loads(db.db_path(dev).read_text())["thresholds"] == doc["thresholds"]


@pytest.mark.parametrize("name,value", [("matvec_max", 3.7), ("matvec_max", 1e300),
                                        ("matvec_min_depth", 0.5), ("split_thinner", 0.5),
                                        ("tail_min_gain", 2), ("columns_max_aspect", -1),
                                        ("pad_waste", float("nan"))])
def test_a_threshold_out_of_its_range_is_ignored(queue, rng, name, value):
    """A database threshold outside thresholds.LIMITS is skipped with a warning naming the
    file: matvec_max above 1 sent products of several rows to the one-row kernels (wrong
    results), matvec_min_depth below 1 divided by zero."""
    import json
    from clgemm import thresholds
    dev = queue.device
    db.record_best(dev, "5", 64, 64, 64, P5, 1.0)
    doc = json.loads(db.db_path(dev).read_text())
    doc["thresholds"] = {name: value}
    db.db_path(dev).write_text(json.dumps(doc))         # NaN as JSON's NaN, as Python writes it
    with pytest.warns(db.DataWarning, match=f"{db.db_path(dev)}: threshold '{name}' .* ignored"):
        facts = clgemm.Plan(queue, 3, 40, 600).launch.facts
    assert facts[name] == thresholds.DEFAULTS[name]
    for m, n, k in ((2, 3, 5), (3, 40, 600), (1, 300, 257)):
        a, b = rand(rng, m, k), rand(rng, k, n)
        assert verify.passes(clgemm.gemm(queue, a, b), verify.reference(a, b), k, a, b)


def test_every_threshold_has_a_range_that_holds_its_default():
    from clgemm import thresholds
    assert set(thresholds.LIMITS) == set(thresholds.DEFAULTS)
    for name, (lo, hi) in thresholds.LIMITS.items():
        assert lo <= thresholds.DEFAULTS[name] <= hi, name


def test_c_over_an_input_is_refused_on_every_call(queue, rng):
    """The check that c does not share a buffer with a or b is not skipped once a layout
    is cached: a later call with c = a would silently compute over its own input."""
    plan = clgemm.Plan(queue, 16, 16, 16, kernel="5", params=P5)
    a, b = cla.to_device(queue, rand(rng, 16, 16)), cla.to_device(queue, rand(rng, 16, 16))
    plan(a, b, cla.to_device(queue, rand(rng, 16, 16)), beta=1.0)      # laid out and cached
    with pytest.raises(ValueError, match="c overlaps a or b"):
        plan(a, b, a, beta=1.0)
    with pytest.raises(ValueError, match="c overlaps a or b"):
        clgemm.gemm(queue, a, b, b, beta=1.0, kernel="5", params=P5)


@pytest.mark.parametrize("module,above", [("cache", "gemm"), ("degenerate", "gemm"),
                                          ("events", "gemm"), ("arrays", "gemm"),
                                          ("store", "db"), ("kernel_spec", "kernels"),
                                          ("thresholds", "heuristics")])
def test_modules_split_out_do_not_import_back(module, above):
    """Data flows one way, call -> plan -> launch: the modules split out of clgemm.gemm
    (the plan cache and pools, products with a zero dimension, a call's events, its result
    Arrays), of clgemm.db (its files on disk), of the registry (what an entry is) and of
    the heuristics (their thresholds) lie below it and import nothing of it, not even inside
    a function, where a cycle would not show at import time."""
    import ast
    import importlib
    import inspect
    tree = ast.parse(inspect.getsource(importlib.import_module(f"clgemm.{module}")))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = ([node.module] if node.module else [a.name for a in node.names])
            names = [n.split(".")[0] for n in names] if node.level else [
                n.split(".")[1] for n in names if n.startswith("clgemm.")]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1] for a in node.names if a.name.startswith("clgemm.")]
        else:
            continue
        assert above not in names, f"clgemm.{module} imports clgemm.{above} (line {node.lineno})"


def test_a_dropped_plans_scratch_waits_for_its_last_launch(queue, rng):
    """A plan dropped while its launch is pending (here behind a user event on its queue)
    keeps its scratch buffers until that launch is done: handed out again at once, one was
    written by the pending launch under another queue's product, which then changed."""
    import gc

    import pyopencl as cl
    ctx = queue.context
    q1, q2 = cl.CommandQueue(ctx), cl.CommandQueue(ctx)
    a, b = rand(rng, 97, 103), rand(rng, 103, 101)        # 101 wide: an aligned scratch
    da, db_ = cla.to_device(q1, a), cla.to_device(q1, b)
    q1.finish()
    gate = cl.UserEvent(ctx)
    da.add_event(gate)
    r1 = clgemm.gemm(q1, da, db_)                          # enqueued, waiting on the gate
    clgemm.clear_cache()
    gc.collect()
    x, y = rand(rng, 97, 101), rand(rng, 101, 101)
    out = clgemm.gemm(q2, cla.to_device(q2, x), cla.to_device(q2, y))
    q2.finish()
    before = out.get()
    gate.set_status(cl.command_execution_status.COMPLETE)
    q1.finish()
    assert np.array_equal(out.get(), before)
    assert verify.passes(before, verify.reference(x, y), 101, x, y)
    assert verify.passes(r1.get(), verify.reference(a, b), 103, a, b)


def test_a_kernel_object_given_back_during_binding_does_not_deadlock():
    """The garbage collector may free a bound kernel while its thread binds another (which
    allocates): giving its kernel object back re-enters the kernel pool's lock."""
    import threading

    from clgemm import build
    done = threading.Event()

    def bind_while_collecting():
        with build._lock:                   # as bind() holds it
            build._give_back(("no such program", "gemm"), object())
        done.set()
    t = threading.Thread(target=bind_while_collecting, daemon=True)
    t.start()
    assert done.wait(10), "deadlock"
    assert ("no such program", "gemm") not in build._idle   # of no live program: dropped


def test_an_allocators_buffers_are_checked(queue, rng):
    """A buffer too small would be overrun by the kernels (heap corruption on pocl); one of
    another context failed deep inside OpenCL."""
    import pyopencl as cl
    a, b = cla.to_device(queue, rand(rng, 64, 64)), cla.to_device(queue, rand(rng, 64, 64))
    small = lambda nbytes: cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, max(4, nbytes // 4))
    with pytest.raises(ValueError, match=r"the allocator returned \d+ bytes where 16384 were asked"):
        clgemm.gemm(queue, a, b, allocator=small)
    other = cl.Context(queue.context.devices)
    elsewhere = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(cl.CommandQueue(other)))
    with pytest.raises(ValueError, match="a buffer of another context"):
        clgemm.gemm(queue, a, b, allocator=elsewhere)
    with pytest.raises(ValueError, match="a buffer of another context"):
        clgemm.Plan(queue, 64, 64, 64, allocator=elsewhere)(rand(rng, 64, 64), rand(rng, 64, 64))
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    c = clgemm.gemm(queue, a, b, allocator=pool)
    ha, hb = a.get(), b.get()
    assert verify.passes(c.get(), verify.reference(ha, hb), 64, ha, hb)
    # k = 0, where no plan is made: the same checks (the zeros were written past the end of
    # the small buffer, and the process aborted at free())
    empty_a, empty_b = cla.zeros(queue, (64, 0), np.float32), cla.zeros(queue, (0, 64), np.float32)
    with pytest.raises(ValueError, match=r"the allocator returned \d+ bytes where 16384 were asked"):
        clgemm.gemm(queue, empty_a, empty_b, allocator=small)
    with pytest.raises(ValueError, match="a buffer of another context"):
        clgemm.gemm(queue, empty_a, empty_b, allocator=elsewhere)
    big = cla.to_device(queue, np.full((80, 80), np.nan, np.float32))
    with pytest.raises(ValueError, match="the allocator returned"):   # a block of c, scaled
        clgemm.gemm(queue, empty_a, empty_b, big[1:65, 2:66], beta=0.5, allocator=small)
    assert not clgemm.gemm(queue, empty_a, empty_b, allocator=pool).get().any()


def test_a_plan_made_by_hand_records_its_shape_too(queue, rng, monkeypatch):
    """CLGEMM_RECORD_SHAPES=1: a Plan made for a hot loop records its shape as gemm()'s do,
    so that `clgemm tune --recorded` tunes the hottest shapes too."""
    from clgemm import record
    monkeypatch.setattr(record, "_enabled", None)
    monkeypatch.setattr(record, "_noted", set())
    monkeypatch.setenv(record.ENV, "1")
    clgemm.Plan(queue, 23, 45, 67, kernel="5", params=P5)
    assert record.recorded(queue.device) == [("5", 23, 45, 67)]


def test_release_lets_go_of_a_context(queue, rng):
    """Contexts made one after another: after release(), nothing of theirs is kept (plans,
    pools, programs, idle kernel objects), so memory stays flat."""
    import gc

    import pyopencl as cl
    from clgemm import build, cache
    with pytest.raises(TypeError, match="release takes a pyopencl Context"):
        clgemm.release(queue)
    sizes = None
    for _ in range(3):
        ctx = cl.Context(queue.context.devices)
        q = cl.CommandQueue(ctx)
        a = rand(rng, 9, 7)
        clgemm.gemm(q, cla.to_device(q, a), cla.to_device(q, a.T.copy()), kernel="5", params=P5)
        clgemm.transpose(q, a)
        q.finish()
        assert any(k[0] == ctx.int_ptr for k in cache._pools)
        clgemm.release(ctx)
        gc.collect()
        now = (len(cache.plans), len(cache._pools), len(build._cache), len(build._idle))
        assert sizes is None or now == sizes, (now, sizes)
        sizes = now
        assert not any(k[0] == ctx.int_ptr for k in cache._pools)
        assert not any(k[0] == ctx.int_ptr for k in build._cache)


def test_release_before_a_plan_is_dropped_keeps_none_of_its_kernels(queue, rng):
    """A Plan that outlives release(): its kernel objects, given back when it went, joined
    the idle ones for good, each holding its program and context (1.8 MB a context, the
    count one higher with each context). Those of a released context are dropped."""
    import gc

    from clgemm import build
    a = rand(rng, 16, 16)
    for _ in range(3):
        ctx = cl.Context(queue.context.devices)
        q = cl.CommandQueue(ctx)
        plan = clgemm.Plan(q, 16, 16, 16, kernel="5", params=P5)
        plan(cla.to_device(q, a), cla.to_device(q, a)).get()
        clgemm.release(ctx)
        del plan
        gc.collect()
        assert all(key[0] in build._live for key in build._idle), build._idle


def test_release_while_another_thread_calls_gemm(queue, rng):
    """release() of one context while another thread's gemm() calls move their plans in
    the cache: release iterated the cache itself and raised RuntimeError (OrderedDict
    mutated during iteration)."""
    import threading
    stop, failed = threading.Event(), []
    ops = [(cla.to_device(queue, rand(rng, n, 8)), cla.to_device(queue, rand(rng, 8, n)))
           for n in range(8, 24)]

    def calls():
        try:
            while not stop.is_set():
                for x, y in ops:
                    clgemm.gemm(queue, x, y, alpha=2.0)
                queue.finish()
        except Exception as e:      # noqa: BLE001 (reported by the test)
            failed.append(e)

    t = threading.Thread(target=calls)
    t.start()
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and not failed:
            clgemm.release(cl.Context(queue.context.devices))
    finally:
        stop.set()
        t.join()
    assert not failed, failed


def test_calls_rotating_over_five_queues_keep_their_pools(queue, rng):
    """Each queue's pool lives while its plans use it, and memory_pool(queue) finds it: a
    table of the last 4 queues' pools per thread made a new pool, and allocated, on every
    call rotating over 5 queues, and memory_pool(q).free_held() missed the pool that q's
    results came from."""
    qs = [cl.CommandQueue(queue.context, queue.device) for _ in range(5)]
    x = rand(rng, 64, 64)
    ops = [(cla.to_device(q, x), cla.to_device(q, x)) for q in qs]
    for q, (a, b) in zip(qs, ops):
        clgemm.gemm(q, a, b).finish()
    managed = [clgemm.memory_pool(q).managed_bytes for q in qs]
    for _ in range(3):
        for q, (a, b) in zip(qs, ops):
            r = clgemm.gemm(q, a, b)
            assert r.allocator is clgemm.memory_pool(q)
            q.finish()
            del r
    assert [clgemm.memory_pool(q).managed_bytes for q in qs] == managed
    pool = clgemm.memory_pool(qs[0])
    pool.free_held()
    assert pool.held_blocks == 0 and pool.managed_bytes == pool.active_bytes


def test_the_databases_look_survives_a_device_watched_meanwhile(queue, monkeypatch):
    """Another thread's first gemm() on a device adds it to the watched ones while
    generation() looks at their files: the look iterated the live table (RuntimeError:
    dictionary changed size during iteration, out of gemm())."""
    real = db.version
    looked = []

    def meanwhile(dev):
        db._watched.setdefault(-1, queue.device)     # a device watched from now on
        looked.append(dev)
        return real(dev)

    db.watch(queue.device)
    monkeypatch.setattr(db, "version", meanwhile)
    monkeypatch.setattr(db, "_restat_at", [0.0])
    try:
        assert isinstance(db.generation(), int)
    finally:
        db._watched.pop(-1, None)
    assert looked, "generation() looked at no watched device's files: the race was not run"


def test_a_write_landing_during_the_databases_look_is_seen_at_once(queue, monkeypatch):
    """This process's tune writes while generation() looks at the files (another thread):
    the look set its next time after the write had asked for one at once, and the write
    went unseen for a second."""
    real = db.version
    wrote = []

    def meanwhile(dev):
        seen = real(dev)
        if not wrote:
            wrote.append(db.record_best(queue.device, "2", 16, 16, 16, {"TS": 4}, 1.0))
        return seen

    db.watch(queue.device)
    monkeypatch.setattr(db, "_restat_at", [0.0])
    with monkeypatch.context() as m:
        m.setattr(db, "version", meanwhile)
        before = db.generation()
    assert db.generation() != before


@pytest.mark.parametrize("flag", [1, np.True_])
def test_transposes_given_as_one_or_numpys_bool_take_the_cached_plan(queue, rng, flag):
    """The plan was kept under the flags as bools but looked up as given: every call with
    trans_a=1 (or numpy's True) made a plan of its own and pushed others out of the cache."""
    a, b = cla.to_device(queue, rand(rng, 29, 37)), cla.to_device(queue, rand(rng, 29, 41))
    clgemm.gemm(queue, a, b, trans_a=flag)
    misses = clgemm.cache_info()["misses"]
    for _ in range(3):
        clgemm.gemm(queue, a, b, trans_a=flag)
    assert clgemm.cache_info()["misses"] == misses


def test_an_unhashable_allocator_is_not_kept_and_raises_nothing(queue, rng):
    """An allocator that cannot be hashed made its key fail only when kept, after the
    product had been written: a TypeError out of a call that had done its work."""
    class Unhashable:
        __hash__ = None

        def __call__(self, nbytes):
            return cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)

    a, b = rand(rng, 9, 6), rand(rng, 6, 11)
    got = clgemm.gemm(queue, cla.to_device(queue, a), cla.to_device(queue, b),
                      allocator=Unhashable())
    assert verify.passes(got.get(), verify.reference(a, b), 6, a, b)


def test_a_configuration_works_each_launch_question_out_once(queue, monkeypatch):
    """A new shape's layout asked heuristics.splits about ten times of the same product
    (decide, tail, groups): GemmPlan keeps each answer, for as long as what it depends on
    holds. Set afterwards, the resident groups, the slices asked for or the facts are
    questions of their own again."""
    from clgemm import heuristics, launch
    asked = []
    real = heuristics.splits
    monkeypatch.setattr(heuristics, "splits", lambda *a, **k: asked.append(a[2]) or real(*a, **k))
    plan = launch.GemmPlan(queue, "5", dict(P5), shape=(300, 200, 1000))
    first = plan.describe(300, 200, 1000, False)
    n = len(asked)
    assert n
    assert plan.describe(300, 200, 1000, False) == first and len(asked) == n
    plan.split_k = 2                     # what the answers depend on changed: asked again
    assert plan.splits(300, 200, 1000) == 2 and len(asked) == n + 1
    plan.split_k = "auto"
    assert plan.describe(300, 200, 1000, False) == first and len(asked) > n + 1
    before = len(asked)
    plan.facts = type(plan.facts)(plan.facts.compute_units, plan.facts.max_alloc,
                                  dict(plan.facts.thresholds))
    plan.splits(300, 200, 1000)
    assert len(asked) == before + 1
