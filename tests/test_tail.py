"""The spread last wave (heuristics.tail_split, kernel 8's TAIL build): a launch whose last
wave of tiles is part-full runs those tiles as pieces of k, summed by tail_reduce. The
decision is checked at the H200's shapes; the product on the CPU device, where kernel 8's
MMAs are emulated, with the device's compute units set to 2 so that small shapes have a
last wave to spread."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import db, heuristics, kernels, launch, operands, thresholds, verify
from clgemm.launch import GemmPlan
from clgemm.layout import prepare

from .conftest import SMALL

pytestmark = pytest.mark.usefixtures("home")   # conftest: no tuned entries
P8 = SMALL["8"][0]                              # 64 x 64 tiles
RESIDENT = {"checked": 1, "exact": 1}


def test_the_last_wave_is_spread_where_it_is_part_full():
    """One 128 x 128 group a compute unit, 132 units (kernel 8 on the H200): 8192^3's 32nd
    wave of 4 tiles becomes 128 pieces 256 deep, 4096^3's 8th of 100 tiles 500 pieces of
    26 tile steps; full waves, a single wave short of full, and untuned launches stay."""
    k8, p = kernels.get("8"), kernels.get("8").defaults
    f = thresholds.Facts(compute_units=132)
    assert heuristics.tail_split(k8, p, (8192, 8192, 8192), f, 1) == (4092, 32)
    assert heuristics.tail_split(k8, p, (4096, 4096, 4096), f, 1) == (924, 5)
    assert heuristics.tail_split(k8, p, (4096, 32, 4096), f, 1) == (0, 4)   # 32 tiles
    assert heuristics.tail_split(k8, p, (2048, 2048, 2048), f, 1) is None   # 2 waves of 64
    assert heuristics.tail_split(k8, p, (128 * 132, 128, 4096), f, 1) is None   # one whole wave
    assert heuristics.tail_split(k8, p, (8192, 8192, 8192), f, None) is None
    assert heuristics.tail_split(k8, p, (8192, 8192, 256), f, 1) is None     # tail_min_k
    small = thresholds.Facts(132, max_alloc=2**20)       # 128 pieces' sums: 8 MiB
    assert heuristics.tail_split(k8, p, (8192, 8192, 8192), small, 1) is None
    assert heuristics.tail_split(kernels.get("5"), kernels.get("5").defaults,
                                 (8192, 8192, 8192), f, 2) is None      # no TAIL build
    assert heuristics.tail_split(k8, p, (1024, 1024, 4096), f, 1) == (0, 2)
    # the gain must reach tail_min_gain: 16384^3's 16 tiles left over save 0.7%
    assert heuristics.tail_split(k8, p, (16384, 16384, 16384), f, 1) is None
    loose = thresholds.Facts(132, thresholds=dict(thresholds.DEFAULTS, tail_min_gain=0.005))
    assert heuristics.tail_split(k8, p, (16384, 16384, 16384), loose, 1) == (16368, 8)


@pytest.fixture
def two_units(monkeypatch):
    """The device's facts with 2 compute units (a wave: 2 groups of one a unit), and any
    depth spread (tail_min_k), so that products small enough for the CPU have a tail."""
    f = thresholds.Facts(2, thresholds=dict(thresholds.DEFAULTS, tail_min_k=1))
    monkeypatch.setattr(launch, "facts", lambda dev: f)


# (m, n, k) in tiles of 64 x 64 x 32, each with an odd count of tiles and a remainder (+ d)
# where the build needs one
SHAPES = [((2, 1, 6), (5, -14, 5), "checked"), ((2, 1, 7), (22, 0, 0), "clamp"),
          ((3, 1, 8), (0, 0, 0), "exact"), ((2, 1, 31), (1, 0, 5), "checked"),
          ((1, 3, 9), (0, -20, 3), "checked")]


@pytest.mark.parametrize("tiles,d,build", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_a_spread_last_wave_gives_the_product(queue, rng, two_units, tiles, d, build, beta):
    """Whole tiles, then the last wave's tiles each in pieces of k: the product against
    float64, C over NaN where beta = 0 (not read), and C's own values where it is."""
    plan = GemmPlan(queue, "8", P8)
    plan.resident = RESIDENT
    tm, tn, tk = heuristics.tile_of(plan.kernel, plan.params)
    m, n, k = (t * size + e for t, size, e in zip(tiles, (tm, tn, tk), d))
    assert plan.loads(m, n, k) == build
    spread = plan.tail(m, n, k)
    assert spread is not None
    groups = plan.tiles(m, n, k)[0]
    assert spread[0] == groups // 2 * 2 and spread[1] >= 2
    a, b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
    c0 = verify.random_matrix(rng, m, n) if beta else np.full((m, n), np.nan, np.float32)
    a_dev = cla.to_device(queue, a)
    prep = prepare(plan, a_dev, cla.to_device(queue, b), cla.to_device(queue, c0), 1.5, beta)
    assert prep.tail == spread
    events = prep.launch()
    cl.wait_for_events(events)
    got = operands.to_host(queue, prep.out)
    ref = 1.5 * verify.reference(a, b) + (beta * c0.astype(np.float64) if beta else 0.0)
    assert verify.rel_error(got, ref) <= verify.tolerance(k)
    # the same product launched whole, tile by tile: the same sums up to rounding
    plan.resident = None
    whole = prepare(plan, a_dev, cla.to_device(queue, b), cla.to_device(queue, c0), 1.5, beta)
    assert whole.tail is None and len(whole.steps) < len(prep.steps)
    cl.wait_for_events(whole.launch())
    assert np.allclose(operands.to_host(queue, whole.out), got, rtol=1e-4, atol=1e-4 * np.abs(got).max())


@pytest.mark.parametrize("case", ["inf in A", "none"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_gemm_spreads_a_tuned_last_wave_under_the_guard(queue, rng, two_units, case, beta):
    """gemm() with kernel 8's tuned entry (resident groups recorded) at a shape with a
    part-full last wave spreads it; the guard still hands a flagged product to kernel 5,
    whose answer comes back bit for bit, C as it was where it is read (both TAIL launches
    return on a flagged call, GUARD=1)."""
    m, n, k = 133, 50, 200
    db.record_best(queue.device, "8", m, n, k, P8, 1.0, {"resident": RESIDENT})
    plan = clgemm.Plan(queue, m, n, k, kernel="8")
    assert plan.describe()["tail"] == (2, 2)
    a, b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
    if case == "inf in A":
        a[130, 3] = np.inf                   # in the spread wave's tile (rows 128-132)
    c0 = verify.random_matrix(rng, m, n)
    got = plan(a, b, c0.copy(), alpha=2.0, beta=beta)
    if case == "none":
        ref = 2.0 * verify.reference(a, b) + beta * c0.astype(np.float64)
        assert verify.rel_error(got, ref) <= verify.tolerance(k)
    else:
        want = clgemm.gemm(queue, a, b, c0.copy(), alpha=2.0, beta=beta, kernel="5", split_k=1)
        assert np.array_equal(got, want, equal_nan=True)
    assert plan(a, b, c0.copy(), alpha=2.0, beta=beta).tobytes() == got.tobytes()
    assert plan.reused == 1
