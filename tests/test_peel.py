"""C's rows and columns past whole tiles computed apart (heuristics.peel, layout's peeled):
the rule, and the products it lays out against float64, with every operand order, c read
and not, cached layouts called with other buffers, and padded copies or aligned ones."""

import numpy as np
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import db, heuristics, kernels, verify
from clgemm.thresholds import DEFAULTS, Facts

from .conftest import P5

pytestmark = pytest.mark.usefixtures("home")

H200_POINT = dict(TSM=128, TSN=128, TSK=8, WPTM=16, WPTN=8, WIDTH=4, PAD=1)
TWO = {"checked": 2, "exact": 2}


def test_peel_rule():
    """4097^3's 33 x 33 tiles of 128 take 5 waves of 264 groups on 132 units, its 32 x 32
    whole tiles 4: peeled. Not where no wave is saved, the rows past the tiles are too many,
    a launch is cut into slices of k (unless peel_split allows it and one row and column
    at most are left), thin products in a product under peel_min_volume, k is under
    peel_min_k, or the tuner recorded no resident groups."""
    k5, f = kernels.get("5"), Facts(132)

    def peel(shape, residents=TWO, facts=f, kern=k5, tuned=None):
        return heuristics.peel(kern, H200_POINT, shape, facts, residents, tuned)
    assert peel((4097, 4097, 4097)) == (4096, 4096)
    assert peel((4097, 2049, 2049)) == (4096, 2048)
    assert peel((4096 + 16, 4096 + 16, 4096)) == (4096, 4096)       # peel_max_share: 16 of 128
    assert peel((4096 + 17, 4096 + 17, 4096)) is None
    assert peel((4096, 4096, 4097)) is None                         # whole tiles already
    assert peel((4096, 4097, 4096)) is None      # 32 x 33 = 1056 tiles: 4 waves either way
    assert peel((4097, 4097, 1024)) == (4096, 4096)
    assert peel((4097, 4097, 1023)) is None                         # peel_min_k
    assert peel((4097, 4097, 4097), residents=None) is None
    assert peel((4097, 4097, 4097), facts=Facts(132, thresholds=dict(DEFAULTS,
                                                                     peel_min_gain=0.3))) is None
    assert peel((4097, 4097, 4097), facts=Facts(132, thresholds=dict(DEFAULTS,
                                                                     peel_max_share=0))) is None
    assert peel((129, 129, 8192)) is None               # 4 groups for 132 units: split-K
    # 1025^3 at 1024^3's entry: 17 x 9 tiles of 64 x 128 run in 4 slices of k; its 16 x 8
    # whole tiles run unsplit in one wave, and the one row and column past them are
    # matrix-vector launches: peeled (peel_split), though 1.1e9 multiply-adds is under
    # peel_min_volume; not with three rows past the tiles, nor with peel_split 0
    p84, three = dict(H200_POINT, TSM=64, TSK=16, WPTM=8, WPTN=4), {"checked": 2, "exact": 3}
    entry = ((1024,) * 3, 1)
    assert heuristics.splits(k5, p84, (1025,) * 3, f) == 4
    assert heuristics.peel(k5, p84, (1025,) * 3, f, three, entry) == (1024, 1024)
    unsplit = Facts(132, thresholds=dict(DEFAULTS, peel_split=0))
    assert heuristics.peel(k5, p84, (1025,) * 3, unsplit, three, entry) is None
    assert heuristics.splits(k5, p84, (1027, 1025, 1025), f) > 1
    assert heuristics.peel(k5, p84, (1027, 1025, 1025), f, three, entry) is None
    # 1411 x 776 x 1160 at 1152^3's entry (32 x 128 x 32 tiles): 3 rows and 8 columns past
    # the tiles are thin products, and 1.27e9 multiply-adds are under peel_min_volume
    p1152 = dict(TSM=32, TSN=128, TSK=32, WPTM=8, WPTN=4, WIDTH=4, PAD=0)
    four = {"checked": 3, "exact": 4}
    assert heuristics.peel(k5, p1152, (1411, 776, 1160), f, four) is None
    anyvolume = Facts(132, thresholds=dict(DEFAULTS, peel_min_volume=0))
    assert heuristics.peel(k5, p1152, (1411, 776, 1160), anyvolume, four) == (1408, 768)
    assert peel((4097, 4097, 4097), tuned=((4096, 4096, 4096), 2)) is None   # a tuned count
    assert heuristics.peel(kernels.get("8"), dict(kernels.get("8").defaults), (4097, 4097, 4097),
                           f, TWO) is None              # a kernel with its own last-wave spread



def test_an_entry_is_predicted_at_its_peeled_launch():
    """At 2049^3 the 2048^3 entry (128 x 128 tiles, two groups a unit), the nearest, runs
    17 x 17 = 289 groups, two waves of 264, where its 16 x 16 whole tiles take one; the
    2240^3 entry (64 x 128 tiles, three a unit) takes two waves of 396 either way. Predicted
    unpeeled (0.709 ms against 0.502), the farther entry wins; predicted at the launch the
    call makes, its whole tiles apart (0.355 ms), the nearest stays. Ranked the other way
    round, the 2240^3 entry first, it stays: a farther entry's peel is not counted."""
    near = dict(shape=(2048,) * 3, params=H200_POINT, gflops=48537.3, resident=TWO, splits=1)
    far = dict(shape=(2240,) * 3, gflops=41259.5, resident={"checked": 3, "exact": 3},
               params=dict(TSM=64, TSN=128, TSK=16, WPTM=16, WPTN=4, WIDTH=4, PAD=0))
    ranked = [("5", near), ("5", far)]
    shape = (2049, 2049, 2049)
    assert heuristics.choose_entry(ranked, "5", shape, Facts(132))[1] is near
    unpeeled = Facts(132, thresholds=dict(DEFAULTS, peel_max_share=0))
    assert heuristics.choose_entry(ranked, "5", shape, unpeeled)[1] is far
    # where neither peels (k under peel_min_k), the farther entry as before
    assert heuristics.choose_entry(ranked, "5", (2049, 2049, 1000), Facts(132))[1] is far
    # only the nearest is predicted peeled: an entry farther away is not taken for its peel
    assert heuristics.choose_entry(ranked[::-1], "5", shape, Facts(132))[1] is far

def _shape(queue, rest=1):
    """A product whose whole 32 x 32 tiles are 4 waves of one group a compute unit (U x 4
    tiles) and whose `rest` rows and columns more take it to 5U + 5: (32U + rest) x (128 +
    rest), its strips at multiples of 128 floats (NVIDIA's sub-buffer origins)."""
    units = queue.device.max_compute_units
    return 32 * units + rest, 128 + rest, 40


def _tuned(queue, shape, params=P5):
    db.record_best(queue.device, "5", *shape, params, 100.0,
                   {"resident": {"checked": 1, "exact": 1}})


@pytest.mark.parametrize("rest", [1, 3])
def test_gemm_peels_where_the_rule_says(queue, rng, thresholds, rest):
    """gemm() with no kernel named, over a tuned entry that recorded its resident groups,
    launches the whole tiles alone and the rest apart; the result matches float64 where
    the output was poisoned first, and a second call on other Arrays reuses the layout."""
    thresholds(unaligned_max_volume=0, unaligned_light_volume=0, unaligned_heavy_volume=0,
               unaligned_share=0, peel_min_k=0, peel_min_volume=0)
    m, n, k = _shape(queue, rest)
    _tuned(queue, (m - rest, n - rest, k))
    assert clgemm.Plan(queue, m, n, k).describe()["peel"] == (m - rest, n - rest)
    from clgemm.layout import prepare
    ops = [cla.to_device(queue, np.zeros(s, np.float32)) for s in ((m, k), (k, n))]
    plan = clgemm.GemmPlan(queue, None, shape=(m, n, k))
    assert prepare(plan, *ops, None, 1.0, 0.0).peel == (m - rest, n - rest)
    pool = clgemm.memory_pool(queue)
    for _ in range(2):
        a, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
        junk = cla.empty(queue, (m, n), np.float32, allocator=pool)
        junk.fill(np.float32(np.nan))
        queue.finish()
        del junk                      # the pool hands this block to the next output
        out = clgemm.gemm(queue, cla.to_device(queue, a), cla.to_device(queue, b)).get()
        np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert clgemm.cache_info()["hits"] == 1 and clgemm.cache_info()["misses"] == 1


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("kernel,params", [("5", P5), ("6", dict(P5, WIDTH=2))])
@pytest.mark.parametrize("pad", ["yes", "auto"])
@pytest.mark.parametrize("rest", [1, 2])
def test_peeled_product_with_c_and_transposes(queue, rng, thresholds, ta, tb, kernel, params,
                                              pad, rest):
    """A peeled product with beta != 0 (C's one row and column past the tiles read and
    written where they lie by matrix-vector launches; two read into the thin products'
    scratch first), operands Fortran-ordered and read as they lie or transposed, A laid
    out K-major first, padded or aligned copies: each call's own c is written, and
    nothing past it."""
    thresholds(unaligned_max_volume=0, unaligned_light_volume=0, unaligned_heavy_volume=0,
               unaligned_share=0, kmajor_min_n=0, kmajor_min_volume=0, peel_min_k=0,
               peel_min_volume=0)
    m, n, k = _shape(queue, rest)
    db.record_best(queue.device, kernel, m - rest, n - rest, k, params, 100.0,
                   {"resident": {"checked": 1, "exact": 1}})
    plan = clgemm.Plan(queue, m, n, k, trans_a=ta, trans_b=tb, kernel=kernel, pad=pad,
                       transposed_by="kernel")
    assert plan.describe()["peel"] == (m - rest, n - rest)
    from clgemm.layout import prepare
    ops = [cla.to_device(queue, np.zeros(s, np.float32, order="F" if t else "C"))
           for s, t in (((m, k), ta), ((k, n), tb))]
    prep = prepare(plan.launch, *ops, None, 1.0, 0.0)
    assert prep.peel == (m - rest, n - rest)                                   # as laid out
    names = [s.knl.function_name for s in prep.steps if hasattr(s, "knl")]
    assert sum(name.startswith("matvec") for name in names) == (2 if rest == 1 else 0)
    for _ in range(2):
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        c0 = rng.standard_normal((m, n)).astype(np.float32)
        host = np.full((m + 3, n + 5), 7.0, np.float32)
        host[1:m + 1, 2:n + 2] = c0
        big = cla.to_device(queue, host)              # c a block of it, written through a copy
        dc = cla.to_device(queue, c0)                 # c a whole Array, written where it lies
        da, db_ = cla.to_device(queue, a), cla.to_device(queue, b)
        plan(da, db_, dc, alpha=1.5, beta=-0.5)
        plan(da, db_, big[1:m + 1, 2:n + 2], alpha=1.5, beta=-0.5)
        product = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
        want = 1.5 * product - 0.5 * c0
        np.testing.assert_allclose(dc.get(), want, rtol=1e-4, atol=1e-4)
        got = big.get()
        np.testing.assert_allclose(got[1:m + 1, 2:n + 2], want, rtol=1e-4, atol=1e-4)
        got[1:m + 1, 2:n + 2] = 7.0
        assert (got == 7.0).all()                     # c's neighbours untouched
        np.testing.assert_allclose(plan(a, b), product, rtol=1e-4, atol=1e-4)   # numpy in and out


@pytest.mark.parametrize("rows", [4, 1])
def test_peel_over_operands_read_where_they_lie(queue, rng, thresholds, rows):
    """Operands whose rows are whole vectors, not padded, are read in place: the thin
    products then read copies of their few rows and columns, and C's one row past the
    tiles a matrix-vector launch reads from A and B where they lie, which a cached layout
    takes from each call's own Arrays."""
    thresholds(pad_min_volume=2**62, peel_min_k=0, peel_min_volume=0)
    m, n, k = _shape(queue, 4)                            # rows of whole float4s
    m += rows - 4
    _tuned(queue, (m - rows, n - 4, k))
    plan = clgemm.Plan(queue, m, n, k)
    assert plan.describe()["peel"] == (m - rows, n - 4) and not plan.describe()["padded"]
    for _ in range(3):
        a, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
        out = plan(cla.to_device(queue, a), cla.to_device(queue, b)).get()
        np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert plan.reused == 2


def test_wave_cut_rule():
    """6910x561x5295 at the H200's 128 x 128 point: 54 x 5 tiles, two groups a unit, 264
    places. Its first 52 rows of tiles are one wave, run unsplit; the other 254 rows a
    product of their own. Across the columns for the transposed shape. Not where the
    tiles fill their waves, the gain is under cut_min_gain (0: never), k is under
    cut_min_k, the product is under peel_min_volume, no resident groups are known, or
    the kernel spreads its own last wave."""
    k5 = kernels.get("5")
    on = Facts(132, thresholds=dict(DEFAULTS, cut_min_gain=0.05))

    def cut(shape, residents=TWO, facts=on, kern=k5, params=H200_POINT):
        return heuristics.peel(kern, params, shape, facts, residents)
    assert cut((6910, 561, 5295)) == (6656, 561)
    assert cut((561, 6910, 5295)) == (561, 6656)
    assert heuristics.wave_cut(k5, H200_POINT, (6910, 561, 5295), on, TWO) == (6656, 561)
    # the two products' steps: one wave of the whole depth (662 steps of 8) and 10 tiles in
    # 16 slices, against 270 tiles in 4 slices of a launch cut in five waves
    whole = heuristics.wave_steps(k5, H200_POINT, (6656, 561, 5295), on, TWO, slices=1)
    rest = heuristics.wave_steps(k5, H200_POINT, (254, 561, 5295), on, TWO)
    assert whole + rest < 0.95 * heuristics.wave_steps(k5, H200_POINT, (6910, 561, 5295),
                                                       on, TWO)
    assert cut((6910, 561, 5295), facts=Facts(132)) is None                 # off by default
    assert cut((4096, 4096, 4096)) is None          # 3.9 waves: the rest is nearly a wave
    assert cut((2048, 2048, 2048)) is None          # one wave
    assert cut((6910, 561, 1023)) is None           # cut_min_k
    assert cut((6910, 561, 5295), residents=None) is None
    assert cut((6910, 561, 5295), facts=Facts(132, thresholds=dict(
        DEFAULTS, cut_min_gain=0.05, peel_min_volume=3e10))) is None
    assert cut((6910, 561, 5295), facts=Facts(132, thresholds=dict(
        DEFAULTS, cut_min_gain=0.5))) is None
    k8 = kernels.get("8")
    assert cut((6910, 561, 5295), kern=k8, params=dict(k8.defaults)) is None
    # 2624x2048x3072 at 2240^3's 64 x 128 point, three groups a unit: 41 x 16 tiles, of
    # which 24 rows make a wave of 396 places; the other 17 rows, 272 tiles, are over
    # cut_max_rest (half a wave) and would fill the units by themselves
    p64 = dict(TSM=64, TSN=128, TSK=16, WPTM=16, WPTN=4, WIDTH=4, PAD=0)
    three = {"checked": 3, "exact": 3}
    assert cut((2624, 2048, 3072), residents=three, params=p64) is None
    anyrest = Facts(132, thresholds=dict(DEFAULTS, cut_min_gain=0.05, cut_max_rest=1))
    assert cut((2624, 2048, 3072), residents=three, params=p64, facts=anyrest) == (1536, 2048)


@pytest.mark.parametrize("ta,tb,beta", [(False, False, 0.0), (True, True, -0.5)])
def test_gemm_cuts_its_last_wave(queue, rng, thresholds, ta, tb, beta):
    """A product of U + 1 tiles of 32 x 32, one group a unit: its first U rows of tiles are
    a wave, launched unsplit, and the last row of tiles a product of its own, in slices of
    k. The result matches float64 where C was poisoned first (beta 0) or read (beta != 0),
    with operands as they lie or transposed, and a second call reuses the layout."""
    thresholds(unaligned_max_volume=0, unaligned_light_volume=0, unaligned_heavy_volume=0,
               unaligned_share=0, peel_min_k=0, peel_min_volume=0, cut_min_gain=0.05,
               cut_min_k=0, split_wave_gain=0)
    units = queue.device.max_compute_units
    m, n, k = 32 * (units + 1) - 5, 29, 2048
    _tuned(queue, (m, n, k))
    plan = clgemm.Plan(queue, m, n, k, trans_a=ta, trans_b=tb)
    assert plan.describe()["peel"] == (32 * units, n)
    assert plan.describe()["splits"] == 1
    assert plan.launch.at((27, n, k)).splits(27, n, k) > 1       # the rest in slices
    for _ in range(2):
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        c0 = rng.standard_normal((m, n)).astype(np.float32)
        dc = cla.to_device(queue, np.full((m, n), np.nan, np.float32) if beta == 0 else c0)
        plan(cla.to_device(queue, a), cla.to_device(queue, b), dc, beta=beta)
        opa, opb = a.T if ta else a, b.T if tb else b
        # each element within the product's error bound for its terms' scale (sums of
        # 2048 terms in another order than numpy's: on an H100 one element of 123279 was
        # 1.3e-4 off, beyond an absolute 1e-4; a missing or doubled slice is off by ~10)
        assert verify.passes(dc.get(), verify.reference(opa, opb, 1.0, beta, c0), k, opa, opb,
                             1.0, beta, c0)
    assert plan.reused == 1
