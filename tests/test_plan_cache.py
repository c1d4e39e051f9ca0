"""gemm()'s plan cache at many shapes: how many plans it keeps and the scratch they hold."""

import numpy as np
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import cache

from .conftest import P5, rand

pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


def _operands(queue, rng, shapes):
    return [(cla.to_device(queue, rand(rng, m, k)), cla.to_device(queue, rand(rng, k, n)))
            for m, n, k in shapes]


def test_a_loop_over_more_shapes_than_the_old_limit_takes_cached_plans(queue, rng):
    """40 shapes in turn: with 32 plans kept, each call of the second pass planned anew (340
    us of host time at 16^3 on the H200, where a cached call takes 12)."""
    shapes = [(5 + i, 7 + (i * 3) % 11, 3 + i % 9) for i in range(40)]
    ops = _operands(queue, rng, shapes)
    first = [clgemm.gemm(queue, a, b, kernel="5", params=P5).get() for a, b in ops]
    assert clgemm.cache_info()["misses"] == 40 and clgemm.cache_info()["size"] == 40
    again = [clgemm.gemm(queue, a, b, kernel="5", params=P5).get() for a, b in ops]
    assert clgemm.cache_info()["hits"] == 40 and clgemm.cache_info()["misses"] == 40
    for (a, b), x, y in zip(ops, first, again):
        assert np.array_equal(x, y)                       # the cached plan's, bit for bit
        ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
        assert np.allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_the_plans_kept_hold_at_most_the_scratch_bound(queue, rng, monkeypatch):
    """Shapes whose operands are copied into aligned scratch (k and n not whole float4s):
    the least recently used plans go once the kept ones' scratch passes the bound, the
    newest stays whatever it holds, and a dropped plan's shape is planned again, right."""
    shapes = [(9 + i, 13, 7 + 2 * i) for i in range(6)]
    ops = _operands(queue, rng, shapes)
    clgemm.gemm(queue, *ops[0], kernel="5", params=P5)
    (plan,) = cache.plans.values()
    one = plan.scratch_bytes
    assert one > 0                                       # the copies of a and b
    assert cache.scratch_bound(plan) == queue.device.global_mem_size // 16
    monkeypatch.setattr(cache, "scratch_bound", lambda plan: 3 * one)
    for a, b in ops[1:]:
        clgemm.gemm(queue, a, b, kernel="5", params=P5)
        held = [p.scratch_bytes for p in cache.plans.values()]
        assert sum(held[:-1]) <= 3 * one or len(held) == 1, held
    assert 1 <= clgemm.cache_info()["size"] < len(shapes)
    assert next(reversed(cache.plans.values())).shape == shapes[-1]
    monkeypatch.setattr(cache, "scratch_bound", lambda plan: 0)   # none: the newest stays
    a, b = ops[0]
    got = clgemm.gemm(queue, a, b, kernel="5", params=P5).get()
    assert clgemm.cache_info()["size"] == 1
    hits = clgemm.cache_info()["hits"]
    assert np.array_equal(clgemm.gemm(queue, a, b, kernel="5", params=P5).get(), got)
    assert clgemm.cache_info()["hits"] == hits + 1
    assert np.allclose(got, a.get().astype(np.float64) @ b.get().astype(np.float64),
                       rtol=1e-5, atol=1e-5)


def test_scratch_counts_the_plans_own_buffers_not_each_calls_uploads(queue, rng):
    """numpy operands are uploaded every call into buffers the call lets go: they are not
    the plan's, and counting them would drop kept plans for nothing."""
    plan = clgemm.Plan(queue, 11, 13, 7, kernel="5", params=P5)
    a, b = rand(rng, 11, 7), rand(rng, 7, 13)
    plan(a, b)
    taken = plan.scratch_bytes
    assert taken > 0                                     # k = 7 and n = 13: copies
    for _ in range(3):
        got = plan(a, b)
    assert plan.scratch_bytes == taken
    assert np.allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
