"""How gemm() lays a product out for its kernel: padding to whole tiles, split-K, a
K-major A, the smallest tiles, the shared split-K workspace, bound launches and the
copies between them; each rule, and the same product whichever way it runs."""

import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import kernels, verify
from clgemm.gemm import GemmPlan
from clgemm.operands import is_transposed

from .conftest import P5, close, rand


@pytest.mark.parametrize("rows,cols,src_ld,dst_ld", [
    (37, 53, 53, 53),       # dense both sides: one flat copy
    (29, 40, 40, 64),       # widths of 4: the float4 copy_rows build
    (29, 40, 44, 40),
    (5, 37, 37, 40),        # odd width: the scalar build
    (1, 3, 3, 8),
    (130, 70, 71, 73),
    (7, 601, 603, 604),     # scalar, several groups along a row and rows not in fours
])
def test_copy_rect_copies_the_block_and_nothing_else(queue, rng, rows, cols, src_ld, dst_ld):
    """Every path of operands.copy_rect: the block arrives, and the destination's columns
    beyond it (and its rows beyond it) keep what they held."""
    from clgemm import operands
    src = rand(rng, rows, src_ld)
    dst0 = rand(rng, rows + 2, dst_ld)
    sbuf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=src)
    dbuf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=dst0)
    operands.copy_rect(queue, sbuf, src_ld, dbuf, dst_ld, rows, cols).wait()
    got = np.empty_like(dst0)
    cl.enqueue_copy(queue, got, dbuf)
    want = dst0.copy()
    want[:rows, :cols] = src[:, :cols]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("first,second", [
    ((5, 37, 37, 40, 0, 0), (130, 7, 9, 12, 0, 0)),       # scalar, one wide and one tall
    ((29, 40, 44, 48, 0, 0), (3, 8, 8, 12, 0, 0)),        # float4 both
    ((7, 301, 303, 304, 5, 3), (66, 1, 3, 2, 1, 0)),      # scalar, offsets into both sides
])
def test_copy_pair_copies_both_blocks_in_one_launch(queue, rng, first, second):
    """operands.bind_copy_pair: two blocks of one copy_rows build and of other shapes (rows,
    cols, src_ld, dst_ld, src_off, dst_off) arrive by one launch, and every other element
    of the destinations keeps what it held."""
    from clgemm import operands
    blocks, wants, dsts = [], [], []
    for rows, cols, src_ld, dst_ld, so, do in (first, second):
        src = rand(rng, rows * src_ld + so, 1).ravel()
        dst0 = rand(rng, rows * dst_ld + do + 5, 1).ravel()
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        sbuf, dbuf = cl.Buffer(queue.context, flags, hostbuf=src), cl.Buffer(queue.context, flags, hostbuf=dst0)
        want = dst0.copy()
        for r in range(rows):
            want[do + r * dst_ld:do + r * dst_ld + cols] = src[so + r * src_ld:so + r * src_ld + cols]
        blocks.append((sbuf, src_ld, dbuf, dst_ld, rows, cols, so, do))
        wants.append(want)
        dsts.append((dbuf, dst0))
    step = operands.bind_copy_pair(queue, *blocks)
    assert step.knl.function_name == "copy_pair"
    step().wait()
    for (dbuf, dst0), want in zip(dsts, wants):
        got = np.empty_like(dst0)
        cl.enqueue_copy(queue, got, dbuf)
        assert np.array_equal(got, want)
    # a float4 block and a scalar one, or a flat copy, take launches of their own (none
    # of these is launched)
    sbuf, dbuf = blocks[0][0], blocks[0][2]
    vector, scalar = (sbuf, 8, dbuf, 12, 1, 8, 0, 0), (sbuf, 9, dbuf, 12, 1, 7, 0, 0)
    dense = (sbuf, 3, dbuf, 3, 1, 3, 0, 0)
    assert [operands.block_width(b) for b in (vector, scalar, dense)] == [4, 1, 0]
    for pair in ((vector, scalar), (scalar, vector), (dense, scalar), (vector, dense)):
        assert operands.bind_copy_pair(queue, *pair) is None


def test_copy_rows_groups_fit_the_device(queue, monkeypatch):
    """The scalar copy's groups of 64 x 4 work-items become rows of 64 on a device that
    takes fewer than 256 a group (the launch would fail there)."""
    from types import SimpleNamespace
    from clgemm import build, operands
    seen = []
    monkeypatch.setattr(build, "helper", lambda ctx, name, defines: defines)
    monkeypatch.setattr(build, "bind", lambda q, prg, name, gsize, lsize, args:
                        seen.append((prg, gsize, lsize)))
    for most in (1024, 128):
        fake = SimpleNamespace(context=queue.context,
                               device=SimpleNamespace(max_work_group_size=most))
        operands.bind_copy(fake, None, 37, None, 40, 7, 37)
    assert seen == [({"VW": 1, "PER": 4}, (64, 8), (64, 4)), ({"VW": 1, "PER": 4}, (64, 7), (64, 1))]


def test_pad_rule(queue):
    """Auto-padding only where it wastes little and the launch is large; never for kernels
    without an EXACT build, nor for shapes that are whole tiles already."""
    from clgemm.thresholds import DEFAULTS
    PAD_MIN_VOLUME = DEFAULTS["pad_min_volume"]
    plan = GemmPlan(queue, "5", P5)                    # "auto" is the default
    assert plan.pad == "auto"
    assert plan.pads(4001, 4001, 4001)                 # 4032^3: 2% more work
    assert not plan.pads(4000, 4000, 4000)             # whole 32x32x8 tiles already
    assert not plan.pads(37, 53, 29)                   # too small to pay for the copies
    side = round(PAD_MIN_VOLUME ** (1 / 3)) - 9        # just below the volume threshold
    assert side**3 < PAD_MIN_VOLUME < (side + 32) ** 3 and side % 32
    assert not plan.pads(side, side, side) and plan.pads(side + 32, side + 32, side + 32)
    assert not plan.pads(1, 4096, 4096)                # 32x the work
    assert not plan.pads(4001, 4001, 135)              # too shallow to repay the copies
    assert not plan.pads(1001, 1001, 2150)             # too narrow
    assert plan.pads(4001, 4001, 1001)
    assert not plan.pads(4001, 4001, 4000) and plan.loads(4001, 4001, 4000) == "clamp"   # CLAMP, no copies
    assert GemmPlan(queue, "5", P5, pad="yes").pads(4001, 4001, 4000)
    assert not GemmPlan(queue, "5", P5, pad="no").pads(4001, 4001, 4001)
    assert GemmPlan(queue, "5", P5, pad="yes").pads(37, 53, 29)
    assert not GemmPlan(queue, "4", dict(P5, PAD=1), pad="auto").pads(37, 53, 29)
    with pytest.raises(ValueError, match="kernel 4 has no padded launch"):   # ran unpadded
        GemmPlan(queue, "4", dict(P5, PAD=1), pad="yes")
    with pytest.raises(ValueError, match="pad must be one of"):
        GemmPlan(queue, "5", P5, pad="always")


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("by", ["transpose", "kernel"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("kernel,params,split", [("5", P5, 1), ("6", dict(P5, WIDTH=1), 1),
                                                 ("5", P5, 3)])
def test_padded_copies_give_the_same_product(queue, rng, where, by, ta, tb, kernel, params, split):
    """pad="yes": operands put into zero-padded whole tiles, the EXACT build launched
    over them, and C (read for beta) written in place by the kernel's bounds-checked
    stores; odd shapes, both operand layouts, host and device operands, beta != 0,
    split-K, and beta = 0 over NaN."""
    from clgemm.gemm import prepare
    m, n, k = 37, 53, 29
    a = rand(rng, *((k, m) if ta else (m, k)))
    b = rand(rng, *((n, k) if tb else (k, n)))
    c0 = rand(rng, m, n)
    opa, opb = (a.T if ta else a), (b.T if tb else b)
    ha, hb = opa, opb
    if where == "device":
        opa, opb = cla.to_device(queue, opa), cla.to_device(queue, opb)
    plan = GemmPlan(queue, kernel, params, transposed_by=by, pad="yes", split_k=split)
    for alpha, beta, fill in ((1.5, -0.5, None), (1.0, 0.0, np.nan)):
        c = c0.copy()
        if fill is not None:
            c[...] = fill
        prep = prepare(plan, opa, opb, c, alpha, beta)
        assert prep.padded
        assert (prep.out.rows, prep.out.cols) == ((n, m) if prep.swap else (m, n))   # not padded
        # A device operand goes into its padded buffer by a step (a copy, or a transpose
        # that writes straight there); a host one is uploaded there, and takes a step only
        # for a device transpose (laid out transposed, and not read as it lies). Two copies
        # (both of odd width: copy_rows' scalar build) are one launch of copy_pair.
        x, y = (hb.T, ha.T) if prep.swap else (ha, hb)
        turned = sum(is_transposed(v) and not r for v, r in zip((x, y), plan.reads))
        copied = 2 - turned if where == "device" else 0
        moved = turned + min(copied, 1)
        names = [s.knl.function_name for s in prep.steps if hasattr(s, "knl")]
        assert names.count("copy_pair") == (copied == 2) and names.count("copy_rows") == (copied == 1)
        # then C's transpose in when it is read and stored transposed, the product (and its sum)
        assert len(prep.launch()) == moved + (prep.swap and beta != 0) + 1 + (prep.splits > 1)
        assert (prep.splits > 1) == (split > 1)
        c[...] = host_result(queue, prep)
        assert close(c, verify.reference(ha, hb, alpha, beta, c0), k)
    assert set(key[0] for key in plan._programs) == {"exact"}    # only the EXACT build ran


@pytest.mark.parametrize("by,pad,built", [
    # (tile loads build, A_KMAJOR, B_NMAJOR, SPLIT_K, C_UNALIGNED, COLUMNS_FIRST): C is 37 x 53,
    # in place, in 4 tiles
    ("kernel", "no", {("checked", True, False, False, True, False)}),   # A read as K x M, partial tiles
    ("transpose", "yes", {("exact", False, False, False, True, False)}),   # padded to whole tiles: EXACT
])
def test_prepare_builds_only_the_variant_it_launches(queue, rng, by, pad, built):
    from clgemm.gemm import prepare
    a, b = rand(rng, 29, 37), rand(rng, 29, 53)      # op(A) = a.T is 37 x 29
    plan = GemmPlan(queue, "5", P5, transposed_by=by, pad=pad)
    assert plan._programs == {}                        # nothing built before it is needed
    prep = prepare(plan, a.T, b, None, 1.0, 0.0)
    assert set(plan._programs) == built
    prep.launch()
    assert set(plan._programs) == built
    assert close(host_result(queue, prep), verify.reference(a.T, b), 29)


def host_result(queue, prep):
    from clgemm import operands
    out = operands.to_host(queue, prep.out)
    return out.T if prep.swap else out


def test_untuned_split_leaves_the_fewest_waves():
    """Without a tuned count, a split is taken only where it cuts the waves of work on the
    device: the H200's 132 units (2026-12-04) ran 80-128 groups of 64x128 at k = 1024 13-18%
    slower in the two slices that doubling to a full wave gave (half a wave's groups more
    cannot finish sooner), and 64 groups faster in two (twice the units busy); at k = 4096,
    104-128 groups of 128x128 ran 18-23% faster in two slices (more groups a unit)."""
    from clgemm.heuristics.slices import _fill_splits
    from clgemm.thresholds import DEFAULTS, Facts
    f = Facts(compute_units=132)
    assert _fill_splits(128, 1024, f) == 1
    assert _fill_splits(112, 2048, f) == 1       # 2 or 4 slices: a whole wave of work
    assert _fill_splits(80, 1024, f) == 1        # 160 groups: 2 waves of half the work
    assert _fill_splits(64, 1024, f) == 2        # one wave of half the work
    assert _fill_splits(56, 2048, f) == 4        # 2 and 4 tie at half a wave: the larger
    assert _fill_splits(64, 512, f) == 1         # slices would be under split_min_k
    assert _fill_splits(1, 2**20, f) == 256      # one tile of C: past a wave, as before
    assert _fill_splits(96, 4096, f) == 4        # 3 waves of a quarter: 33% faster measured
    assert _fill_splits(80, 4096, f) == 4
    assert _fill_splits(64, 4096, f) == 4        # 8 saves nothing more than 4
    assert _fill_splits(48, 4096, f) == 8        # 3 waves of an eighth against 2 of a quarter
    assert _fill_splits(132, 2**20, f) == 1
    assert _fill_splits(128, 4096, f) == 2       # no wave saved, but slices 2048 deep
    assert _fill_splits(128, 4095, f) == 1
    f2 = Facts(compute_units=132, thresholds=dict(DEFAULTS, split_fill=2))
    assert _fill_splits(128, 1024, f2) == 2      # two groups a unit make the wave 264


def test_split_rules_speak_of_the_deepest_slice():
    """split_min_k bounds the deepest slice, ceil(k / s): k = 1023 in 2 slices is 512 and
    511 deep, as k = 1024 is 512 and 512. On an H100 (2026-12-06), 2047x1023x1023 (128
    groups of 128x128, the 2048^3 entry's count 1 scaled by its tiles) ran 1.20x as fast in
    2 slices, 1000x1000x2047 1.30x in 4 (results/h100/raw/split-depth-2026-12-06-b7ddf37.txt)."""
    from clgemm import kernels
    from clgemm.heuristics.slices import _fill_splits, _wave_splits, splits
    from clgemm.thresholds import Facts
    f = Facts(compute_units=132)
    assert _fill_splits(64, 1023, f) == 2 == _fill_splits(64, 1024, f)
    assert _fill_splits(64, 1022, f) == 1        # 511 and 511
    assert _wave_splits(190, 1023, f, 128) == 2 == _wave_splits(190, 1024, f, 128)
    p = dict(TSM=128, TSN=128, TSK=8, WPTM=16, WPTN=8, WIDTH=4, PAD=1)
    tuned = ((2048, 2048, 2048), 1)
    assert splits(kernels.get("5"), p, (2047, 1023, 1023), f, "auto", tuned) == 2
    assert splits(kernels.get("5"), p, (2047, 1023, 1022), f, "auto", tuned) == 1


def test_split_few_groups_thinner_slices():
    """split_few_min_k (0: never; 256 by default) lets a grid of fewer work-groups than a
    wave take the slices _fill_splits would with that bound in place of split_min_k, tuned
    count or not, except at the shape the tune measured its count at; grids of a wave or
    more keep their count."""
    from clgemm import kernels
    from clgemm.heuristics import splits
    from clgemm.thresholds import DEFAULTS, Facts
    k5 = kernels.get("5")
    p32 = dict(TSM=32, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=1)
    p88 = dict(TSM=128, TSN=128, TSK=8, WPTM=8, WPTN=8, WIDTH=4, PAD=0)
    tuned = ((256, 8192, 8192), 2)
    off = Facts(compute_units=132, thresholds=dict(DEFAULTS, split_few_min_k=0))
    on = Facts(compute_units=132, thresholds=dict(DEFAULTS, split_few_min_k=128))
    assert DEFAULTS["split_few_min_k"] == 256
    at256 = Facts(compute_units=132)
    # 4 groups of 128x128 at k = 6509: 16 slices of 407 at the default (32 would be 204 deep)
    assert splits(k5, p88, (250, 165, 6509), at256, tuned=tuned) == 16
    # 16 groups of 32x128 at k = 6509: 8 slices of 814 (split_min_k 512), 16 of 407 with
    # the bound at 128 (32 would be 4 waves of a 32nd: no fewer waves than 2 of a 16th)
    assert splits(k5, p32, (250, 165, 6509), off) == 8
    assert splits(k5, p32, (250, 165, 6509), on) == 16
    # 4 groups of 128x128 with a tuned count: 8 slices by the tuned count's rule, 32 (128
    # groups, 204 deep) with the bound
    assert splits(k5, p88, (250, 165, 6509), off, tuned=tuned) == 8
    assert splits(k5, p88, (250, 165, 6509), on, tuned=tuned) == 32
    assert splits(k5, p88, (256, 8192, 8192), on, tuned=tuned) == 2     # the tune's own
    assert splits(k5, p88, (4096, 4096, 4096), on, tuned=tuned) == 1    # 1024 groups
    assert splits(k5, p32, (2000, 2000, 6509), on) == splits(k5, p32, (2000, 2000, 6509), off)
    assert splits(k5, p32, (250, 165, 200), on) == 1                    # too shallow


def test_split_sparse_grids_thin_slices():
    """split_sparse_fill (0: never, the default) lets a grid of at most that many work-groups
    a unit, with k at least split_few_min_k, take the slices _fill_splits would with
    split_sparse_min_k as the bound: a few groups over k = 256-511 that no other rule
    splits; denser grids, shallower products and the tune's own shape keep their count."""
    from clgemm import kernels
    from clgemm.heuristics import splits
    from clgemm.thresholds import DEFAULTS, Facts
    k5 = kernels.get("5")
    p16 = dict(TSM=16, TSN=64, TSK=32, WPTM=4, WPTN=4, WIDTH=4, PAD=1)
    p84 = dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=1)
    assert DEFAULTS["split_sparse_fill"] == 0
    off = Facts(compute_units=132)
    on = Facts(compute_units=132, thresholds=dict(DEFAULTS, split_sparse_fill=0.5))
    # 24 groups of 16x64 at k = 361: 4 slices of 91 (8 would be 46 deep, under 64)
    assert splits(k5, p16, (34, 508, 361), off) == 1
    assert splits(k5, p16, (34, 508, 361), on) == 4
    # the same grid deeper: the few rule's 4 slices of 436 give way to 16 of 109, as whole
    # tiles: 14 slices of 4 of k's 55 tiles of 32
    assert splits(k5, p16, (34, 508, 1744), off) == 4
    assert splits(k5, p16, (34, 508, 1744), on) == 14
    assert splits(k5, p16, (142, 125, 220), on) == 1                    # k under 256
    assert splits(k5, p84, (1808, 324, 349), on) == 1                   # 87 groups > 66
    tuned = ((34, 508, 361), 1)
    assert splits(k5, p16, (34, 508, 361), on, tuned=tuned) == 1        # the tune's own


def test_sparse_slices_give_the_product(queue, rng, thresholds):
    """With split_sparse_fill on, a grid of one work-group over k = 300 is cut into slices
    of 64 or more as the rule says, and the product still passes against float64."""
    from clgemm.heuristics.slices import _fill_splits
    thresholds(split_sparse_fill=1.0, split_count_gain=0)    # the latter over a database's
    m, n, k = 20, 30, 300
    plan = clgemm.Plan(queue, m, n, k, kernel="5", params=P5)
    f = plan.launch.facts
    want = _fill_splits(1, k, f, f["split_sparse_min_k"])
    assert plan.describe()["splits"] == want
    if queue.device.max_compute_units >= 2:            # a wave of 2 groups or more: sliced
        assert want > 1
    a, b = rand(rng, m, k), rand(rng, k, n)
    out = plan(a, b)
    ref = verify.reference(a, b)
    assert verify.passes(out, ref, k, a, b)


def test_sparse_slices_do_not_sway_the_entry_choice():
    """choose_entry compares the H200's entries without split_sparse_fill, as without
    split_count_gain: with it, the 128x128 tiles of 2048x2048x768 (45 groups at
    1808x324x349, so sliced) were predicted faster than the 64x128 tiles that ran there
    unsplit, a choice no measurement backed."""
    import json
    from importlib import resources
    from clgemm import db
    from clgemm.heuristics import choose_entry
    from clgemm.thresholds import DEFAULTS, Facts
    doc = json.loads(resources.files("clgemm").joinpath("tuned/nvidia-h200.json").read_text())
    assert doc["thresholds"]["split_sparse_fill"] == 0.5
    every = [("5", dict(e, shape=tuple(map(int, key.split("x")))))
             for key, e in doc["entries"]["5"].items()]
    on = Facts(132, thresholds={**DEFAULTS, **doc["thresholds"]})
    off = Facts(132, thresholds={**DEFAULTS, **doc["thresholds"], "split_sparse_fill": 0})
    for shape in ((1808, 324, 349), (282, 2363, 611), (356, 2208, 756)):
        ranked = sorted(every, key=lambda ke: (round(db.distance(ke[1]["shape"], shape), 6),
                                               -ke[1]["gflops"]))
        assert choose_entry(ranked, "5", shape, on)[1]["shape"] == \
            choose_entry(ranked, "5", shape, off)[1]["shape"]


def test_split_counts_fill_the_resident_waves():
    """With the groups a unit holds known, a launch of fewer tiles than a wave of them, cut
    into slices, takes the count of 2-16 whose waves take the fewest slice depths, where
    that saves split_count_gain (0: never): 3552x275x4481 at the 128 x 128 point, 84 tiles
    on 264 places, in 8 slices (the tuned count's rule) runs 3 waves of an eighth, in 3
    one of a third. Not where that saves less (6589x282x4689: 5 slices 4% fewer depths than
    8), on a wave of tiles or more, where no count keeps slices split_few_min_k deep, at the
    tune's own shape, in the float-at-a-time build, nor without the resident groups."""
    from clgemm import kernels
    from clgemm.heuristics import splits
    from clgemm.heuristics.slices import _wave_count
    from clgemm.thresholds import DEFAULTS, Facts
    k5 = kernels.get("5")
    p = dict(TSM=128, TSN=128, TSK=8, WPTM=16, WPTN=8, WIDTH=4, PAD=1)
    two = {"checked": 2, "exact": 2}
    on = Facts(132, thresholds=dict(DEFAULTS, split_count_gain=0.05))
    tuned = ((4000, 4000, 4000), 1)
    assert splits(k5, p, (3552, 275, 4481), on, tuned=tuned) == 8
    assert splits(k5, p, (3552, 275, 4481), on, tuned=tuned, residents=two) == 3
    assert splits(k5, p, (3552, 275, 4481), Facts(132), tuned=tuned, residents=two) == 8
    assert splits(k5, p, (3552, 275, 4481), on, tuned=tuned, residents=two, floats=True) == 8
    assert splits(k5, p, (6589, 282, 4689), on, tuned=tuned, residents=two) == 8
    assert splits(k5, p, (4000, 4000, 4000), on, tuned=tuned, residents=two) == 1
    own = ((3552, 275, 4481), 8)                        # a tune timed 8 slices there
    assert splits(k5, p, (3552, 275, 4481), on, tuned=own, residents=two) == 8
    assert splits(k5, p, (3552, 276, 4481), on, tuned=own, residents=two) == 3
    assert _wave_count(84, 4481, 8, 264, on) == 3
    assert _wave_count(300, 4481, 2, 264, on) == 2      # a wave of tiles or more
    assert _wave_count(84, 600, 4, 264, on) == 4        # 2 slices (3 are 200 deep) save none
    assert _wave_count(84, 500, 2, 264, on) == 2        # none of 256 but 2 slices


def test_split_evens_out_each_units_steps():
    """Where the other rules take no slices, a count is taken where it cuts the busiest
    unit's k steps (its share of the groups, rounded up, times the deepest slice) by
    split_wave_gain. Measured on an H100 (2026-12-06): 288 groups of 64x128 (16x4 sums a
    work-item) at k = 7008 and 16384 ran 1.22x and 1.28x as fast in 4 slices, 190 at k =
    1200 1.09x in 2, 162 at k = 1151 1.09x in 4 rather than 2; 72 groups of 8x4 blocks at
    k = 767 1.25x in 3 and 98 at k = 896 1.12x in 4, where 128 at k = 999 ran slower in
    every count; 861 groups of 16x8 at k = 2608 0.95x in 4 and 144 at k = 1000 0.97x in 4:
    blocks over split_wave_max_block sums keep the rule for grids of a group a unit or
    more, 2, 4, 8 or 16 slices split_min_k deep."""
    from clgemm import kernels
    from clgemm.heuristics.slices import _wave_splits, splits
    from clgemm.thresholds import DEFAULTS, Facts
    f = Facts(compute_units=132)
    light, heavy = 64, 128
    assert _wave_splits(288, 7008, f, light) == 4      # 3 a unit -> 9 quarter-deep
    assert _wave_splits(288, 16384, f, light) == 4     # 16 would save 3% more: not enough
    assert _wave_splits(190, 1200, f, light) == 2
    assert _wave_splits(162, 1151, f, light) == 4      # 5 a unit of 288 deep: 1440 < 1728
    assert _wave_splits(72, 767, f, 32) == 3           # 2 a unit of 256 deep: a third less
    assert _wave_splits(98, 896, f, 32) == 4           # 3 a unit of 224 (3 slices: 3 of 299)
    assert _wave_splits(128, 999, f, 32) == 1          # every count: as many steps or more
    assert _wave_splits(72, 300, f, 32) == 1           # slices under split_wave_min_k
    assert _wave_splits(65, 767, f, 32) == 1           # under half a group a unit: _fill_splits'
    assert _wave_splits(861, 2608, f, heavy) == 1      # 7 a unit -> 27 quarters: 3.6% less
    assert _wave_splits(144, 1000, f, heavy) == 1      # slices under split_min_k
    assert _wave_splits(144, 1000, f, light) == 4
    assert _wave_splits(72, 767, f, heavy) == 1        # under a group a unit
    assert _wave_splits(288, 7008, f, heavy) == 4
    assert _wave_splits(1024, 4096, f, heavy) == 1     # 4096^3: 8 a unit, split or not
    assert _wave_splits(4096, 8192, f, heavy) == 1     # 8192^3
    assert _wave_splits(256, 2048, f, heavy) == 1      # 2048^3
    assert _wave_splits(1089, 4104, f, heavy) == 1     # 4097^3: 8.3% less at best
    off = Facts(compute_units=132, thresholds=dict(DEFAULTS, split_wave_gain=0))
    assert _wave_splits(288, 7008, off, light) == 1
    k5 = kernels.get("5")
    p = dict(TSM=64, TSN=128, TSK=16, WPTM=16, WPTN=4, WIDTH=4, PAD=0)
    assert splits(k5, p, (1536, 1536, 7008), f) == 4
    assert splits(k5, p, (1536, 1536, 7008), off) == 1
    assert splits(k5, p, (1536, 1536, 7008), f, tuned=((1536, 1536, 7008), 1)) == 1
    # away from a tuned count's own shape, where its scaled count is 1 (767^3 with the
    # 1024^3 entry's count 1: two slices of 384 are under split_min_k)
    p8 = dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=1)
    assert splits(k5, p8, (767, 767, 767), f, tuned=((1024, 1024, 1024), 1)) == 3
    assert splits(k5, p8, (1023, 1023, 1023), f, tuned=((1024, 1024, 1024), 1)) == 1
    p16 = dict(TSM=128, TSN=128, TSK=8, WPTM=16, WPTN=8, WIDTH=4, PAD=1)
    assert splits(k5, p16, (1500, 1500, 1000), f, tuned=((1850, 1850, 1850), 1)) == 1


def test_split_k_rule(queue, thresholds):
    """Auto splits only when C has too few tiles for the device, into slices >= 192 deep,
    and every slice keeps at least one tile of k; kernels without split-K never split, and
    refuse a count asked of them."""
    from clgemm.thresholds import DEFAULTS
    thresholds(split_few_min_k=256)     # the default, over a database's own
    SPLIT_FILL, SPLIT_MIN_K = DEFAULTS["split_fill"], DEFAULTS["split_min_k"]
    cus = queue.device.max_compute_units
    plan = GemmPlan(queue, "5", P5)                    # 32 x 32 tiles, TSK=8
    want = SPLIT_FILL * cus
    long = 2 * SPLIT_MIN_K * want                      # deep enough for `want` slices on any device
    s = plan.splits(1, 32, long)                       # one tile of C, a long k
    assert s >= want and s // 2 < want                 # the fewest doublings that fill it
    # too short to split: slices under split_wave_min_k (on a device of few units, where
    # one tile of C is a group a unit or more, _wave_splits would cut a longer k)
    assert plan.splits(1, 32, 2 * DEFAULTS["split_wave_min_k"] - 8) == 1
    # a shorter k stops the doubling where slices would fall under split_few_min_k (one
    # tile of C is a grid under a wave), and without that rule under SPLIT_MIN_K; on a
    # device of 132 units 8 and 4 slices, on one of 2 units 2 either way
    fill = 1 << (want - 1).bit_length()
    assert plan.splits(1, 32, 4 * SPLIT_MIN_K) == min(4 * SPLIT_MIN_K // 256, fill)
    thresholds(split_few_min_k=0)
    plan = GemmPlan(queue, "5", P5)
    assert plan.splits(1, 32, 4 * SPLIT_MIN_K) == min(4, fill)
    big = -(-want // 1) * 32                            # enough tiles of C already
    assert plan.splits(32, big, long) == 1
    fixed = GemmPlan(queue, "5", P5, split_k=7)
    assert fixed.splits(5, 5, 24) == 3                 # 3 tiles of k: 3 slices at most
    assert fixed.splits(5, 5, 8 * 20) == 7             # 20 tiles: 3,3,3,3,3,3,2
    assert fixed.splits(5, 5, 8 * 13) == 7             # 13 tiles: ceil(13/7)=2 each -> 7
    assert GemmPlan(queue, "5", P5, split_k=8).splits(5, 5, 8 * 13) == 7   # 2 each -> 7 slices
    assert GemmPlan(queue, "4", dict(P5, PAD=1), split_k=1).splits(5, 5, 1000) == 1
    # a count of slices asked of a kernel that cannot split is refused, not ignored
    with pytest.raises(ValueError, match=r"kernel 4 \(vectorized\) cannot cut k.*can: 5, 6"):
        GemmPlan(queue, "4", dict(P5, PAD=1), split_k=8)
    with pytest.raises(ValueError, match="kernel 3 .*cannot cut k"):
        clgemm.gemm(queue, np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), kernel=3,
                    split_k=2)
    for bad in (0, -2, "3", 1.5, True):
        with pytest.raises(ValueError, match="split_k must be"):
            GemmPlan(queue, "5", P5, split_k=bad)


@pytest.mark.parametrize("kernel,params", [("5", P5), ("6", dict(P5, WIDTH=1)),
                                           ("5", dict(P5, WIDTH=2, PAD=1))])
@pytest.mark.parametrize("m,n,k", [(1, 67, 300), (37, 53, 129), (64, 64, 256), (5, 3, 9)])
@pytest.mark.parametrize("split", [2, 5, 64])
def test_split_k_gives_the_same_product(queue, rng, kernel, params, m, n, k, split):
    """Slices summed by splitk_reduce, with alpha and beta applied once: odd shapes, whole
    tiles (the EXACT build), more slices asked than tiles of k, a Fortran-ordered C."""
    a, b = rand(rng, m, k), rand(rng, k, n)
    c0 = rand(rng, m, n, order="F")
    c = c0.copy(order="F")
    out = clgemm.gemm(queue, a, b, c, alpha=-1.5, beta=0.5, kernel=kernel, params=params,
                      split_k=split)
    assert out is c
    assert close(c, verify.reference(a, b, -1.5, 0.5, c0), k)
    # beta = 0 must not read C, here all NaN
    c[...] = np.nan
    clgemm.gemm(queue, a, b, c, kernel=kernel, params=params, split_k=split)
    assert close(c, verify.reference(a, b), k)


# tiles of 4 and 8 rows or columns (the smallest in the space): a whole row of work-items
# (RTSM = 1), a work-group of one vector per item, WIDTH 2 and 4, with and without PAD
SMALL_TILES = [dict(TSM=4, TSN=128, TSK=32, WPTM=4, WPTN=4, WIDTH=4, PAD=1),
               dict(TSM=8, TSN=64, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=0),
               dict(TSM=64, TSN=4, TSK=16, WPTM=4, WPTN=4, WIDTH=4, PAD=0),
               dict(TSM=8, TSN=8, TSK=4, WPTM=2, WPTN=2, WIDTH=2, PAD=1)]


@pytest.mark.parametrize("kernel,params", [(k, p) for k in ("4", "5", "6") for p in SMALL_TILES
                                           if not kernels.get(k).violations(p)] + [
    ("3", dict(TSM=4, TSN=32, TSK=8, WPTM=4, WPTN=4)), ("3", dict(TSM=32, TSN=4, TSK=8, WPTM=4, WPTN=4))])
@pytest.mark.parametrize("m,n,k", [(1, 300, 517), (301, 1, 33), (13, 9, 77), (64, 64, 64)])
def test_small_tiles(queue, rng, kernel, params, m, n, k):
    """m = 1 and n = 1 products (what the small tiles are for), odd shapes and whole tiles
    (the EXACT build), split-K included."""
    a, b = rand(rng, m, k), rand(rng, k, n)
    for split in ((1, 3) if kernels.get(kernel).split_k else (1,)):
        extra = {"split_k": split} if kernels.get(kernel).split_k else {}
        out = clgemm.gemm(queue, a, b, kernel=kernel, params=params, **extra)
        assert close(out, verify.reference(a, b), k)


def test_shared_workspace(queue, rng):
    """Plans given one Workspace put their partial sums in one buffer, grown to the largest
    launch; anything else as a workspace is refused by name."""
    from clgemm import operands
    from clgemm.gemm import Workspace
    work = Workspace(queue.context)
    bufs = []
    for s, (m, k) in ((5, (37, 600)), (2, (3, 300))):     # the larger first, then reused
        plan = GemmPlan(queue, "5", P5, split_k=s, workspace=work)
        a, b = rand(rng, m, k), rand(rng, k, 40)
        out = operands.poison(queue, operands.empty(queue, m, 40, 40))
        cl.wait_for_events(plan.bind(operands.raw(queue, a, 4), operands.raw(queue, b, 4), out)())
        assert close(operands.to_host(queue, out), verify.reference(a, b), k)
        bufs.append(work.buf)
    assert bufs[0] is bufs[1] and bufs[0].size >= 4 * 5 * 37 * 40
    with pytest.raises(TypeError, match="workspace must be a clgemm.gemm.Workspace, not str"):
        GemmPlan(queue, "5", P5, workspace="x")
    other = cl.Context([queue.device])
    with pytest.raises(ValueError, match="another OpenCL context"):
        GemmPlan(queue, "5", P5, workspace=Workspace(other))


@pytest.mark.parametrize("kernel,params", [("5", P5), ("6", dict(P5, WIDTH=2))])
def test_split_k_writes_an_unaligned_c_where_it_lies(queue, rng, kernel, params):
    """The slices' workspace has aligned rows of its own and splitk_reduce writes C at any
    leading dimension, so a C whose rows are not whole vectors (a fresh 37 x 53 output, or
    a device Array of 53 columns read for beta) takes no copy: the product and its sum."""
    from clgemm.gemm import prepare
    m, n, k = 37, 53, 300
    a, b = rand(rng, m, k), rand(rng, k, n)
    da, db = cla.to_device(queue, a), cla.to_device(queue, b)
    plan = GemmPlan(queue, kernel, params, split_k=3)
    prep = prepare(plan, da, db, None, 1.0, 0.0)
    assert prep.splits == 3 and len(prep.steps) == 2 and prep.out.ld == n
    cl.wait_for_events(prep.launch())
    from clgemm import operands
    assert close(operands.to_host(queue, prep.out), verify.reference(a, b), k)
    c0 = rand(rng, m, n)
    c = cla.to_device(queue, c0)
    prep = prepare(plan, da, db, c, -1.5, 0.5)
    assert prep.splits == 3 and len(prep.steps) == 2 and prep.out.buf is c.base_data
    cl.wait_for_events(prep.launch())
    assert close(c.get(), verify.reference(a, b, -1.5, 0.5, c0), k)


def test_bound_launch_holds_its_buffers(queue, rng):
    """A bound launch keeps the operands it was given alive (kernel arguments do not), so
    it can run after the caller's references are gone; every call recomputes the product."""
    import gc
    from clgemm import operands
    plan = GemmPlan(queue, "5", P5)
    a, b = rand(rng, 37, 300), rand(rng, 300, 29)
    out = operands.empty(queue, 37, 29, 32)
    calls = [plan.bind(operands.raw(queue, a, 4), operands.raw(queue, b, 4), out),
             GemmPlan(queue, "5", P5, split_k=3).bind(operands.raw(queue, a, 4),
                                                      operands.raw(queue, b, 4), out)]
    gc.collect()
    for call in calls:
        operands.poison(queue, out)
        cl.wait_for_events(call())
        assert close(operands.to_host(queue, out), verify.reference(a, b), 300)


def test_kmajor_rule(queue):
    """transposed_by="auto" turns a row-major A K-major only for kernels that read it so,
    and only for products large enough (N and M*N*K) to repay the transpose."""
    from clgemm.thresholds import DEFAULTS
    KMAJOR_MIN_N, KMAJOR_MIN_VOLUME = DEFAULTS["kmajor_min_n"], DEFAULTS["kmajor_min_volume"]
    plan = GemmPlan(queue, "5", P5)
    big = KMAJOR_MIN_VOLUME // KMAJOR_MIN_N
    assert plan.kmajor_a(big, KMAJOR_MIN_N, 1)
    assert not plan.kmajor_a(big, KMAJOR_MIN_N // 2, 2)         # A reused too few times
    assert not plan.kmajor_a(big // 2, KMAJOR_MIN_N, 1)         # too small a product
    assert not GemmPlan(queue, "5", P5, transposed_by="transpose").kmajor_a(big, KMAJOR_MIN_N, 1)
    assert not GemmPlan(queue, "5", P5, transposed_by="kernel").kmajor_a(big, KMAJOR_MIN_N, 1)
    assert not GemmPlan(queue, "4", dict(P5, PAD=1)).kmajor_a(big, KMAJOR_MIN_N, 1)


@pytest.mark.parametrize("kernel,params", [("5", P5), ("6", dict(P5, WIDTH=1)),
                                           ("5", dict(P5, WIDTH=2, PAD=1))])
@pytest.mark.parametrize("m,n,k,ta,tb", [(37, 53, 29, False, False), (64, 96, 48, False, False),
                                         (45, 7, 300, False, True), (33, 64, 20, True, False)])
def test_kmajor_a_gives_the_same_product(queue, rng, thresholds, kernel, params, m, n, k, ta, tb):
    """With the thresholds at zero every row-major A goes through the device transpose to
    K x M and the A_KMAJOR build: odd shapes, whole tiles (EXACT), a transposed B, a
    transposed A (read as it lies, no extra transpose), C with beta, and beta = 0 over NaN."""
    gemm_mod = sys.modules["clgemm.gemm"]    # the module; clgemm.gemm is the function
    thresholds(kmajor_min_n=0, kmajor_min_volume=0)
    a = rand(rng, k, m) if ta else rand(rng, m, k)
    b = rand(rng, n, k) if tb else rand(rng, k, n)
    opa, opb = (a.T if ta else a), (b.T if tb else b)
    plan = GemmPlan(queue, kernel, params)
    prep = gemm_mod.prepare(plan, opa, opb, None, 1.0, 0.0)
    assert prep.kmajor == (not ta) and not prep.swap
    assert all(key[1] for key in plan._programs)     # only A_KMAJOR builds
    prep.launch()
    assert close(host_result(queue, prep), verify.reference(opa, opb), k)
    c0 = rand(rng, m, n)
    c = c0.copy()
    clgemm.gemm(queue, a, b, c, alpha=0.5, beta=-2.0, trans_a=ta, trans_b=tb, kernel=kernel,
                params=params)
    assert close(c, verify.reference(opa, opb, 0.5, -2.0, c0), k)
    c[...] = np.nan
    clgemm.gemm(queue, a, b, c, trans_a=ta, trans_b=tb, kernel=kernel, params=params)
    assert close(c, verify.reference(opa, opb), k)


@pytest.mark.parametrize("where", ["host", "device"])
def test_kmajor_a_transposes_straight_into_the_padded_buffer(queue, rng, thresholds, where):
    """Padding and the K-major A together: the transpose writes A into the zero-padded K x M
    buffer itself (no second copy); B is uploaded straight into its padded buffer from the
    host, or copied there by a step from the device (not read where it lies a float at a
    time, which would pad nothing); then the product."""
    gemm_mod = sys.modules["clgemm.gemm"]
    thresholds(kmajor_min_n=0, kmajor_min_volume=0, pad_min_volume=0, pad_min_k=0, pad_min_mn=0,
               unaligned_max_volume=0, unaligned_light_volume=0, unaligned_share=0)
    m, n, k = 62, 63, 30                               # 64 x 64 x 32 in whole tiles
    a, b = rand(rng, m, k), rand(rng, k, n)
    plan = GemmPlan(queue, "5", P5)
    da, db_ = (a, b) if where == "host" else (cla.to_device(queue, a), cla.to_device(queue, b))
    prep = gemm_mod.prepare(plan, da, db_, None, 1.0, 0.0)
    assert prep.kmajor and prep.padded
    assert len(prep.launch()) == (2 if where == "host" else 3)
    assert set(plan._programs) == {("exact", True, False, False, True, False)}  # EXACT, A_KMAJOR, n = 63
    assert close(host_result(queue, prep), verify.reference(a, b), k)


# odd shapes, whole tiles of k with m and n not (the CLAMP build's case), k = 1, two tiles
# of k, and 17 tiles of k in 3 slices
FLOAT_SHAPES = [(37, 53, 29), (37, 53, 48), (5, 3, 1), (64, 64, 13), (3, 70, 129)]


# register blocks of at most 32 sums in groups of 256 work-items take B's floats 32
# vectors apart (its tile rows hold 32 vectors: TSN = 128), other points as the vector
# builds do (5_double_buffered.cl)
FLOAT_POINTS = [dict(TSM=16, TSN=16, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=1),
                dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=0),
                dict(TSM=32, TSN=32, TSK=8, WPTM=8, WPTN=8, WIDTH=4, PAD=1)]


# kernel 6 is kernel 5's file with another write-back (WRITE_C): its loads are kernel 5's,
# so it is checked at one point, where its epilogue meets every shape's edges
@pytest.mark.parametrize("kernel,point", [("5", p) for p in range(len(FLOAT_POINTS))] + [("6", 0)])
@pytest.mark.parametrize("m,n,k", FLOAT_SHAPES)
def test_unaligned_operands_are_read_where_they_lie(queue, rng, thresholds, kernel, m, n, k,
                                                    point):
    """Device operands whose rows are not whole vectors (leading dimensions 29, 53, 13...)
    are read where they lie by the AB_UNALIGNED build: the kernel reads the caller's
    buffers, nothing is padded, and its result is bit for bit that of the aligned copies
    the layout makes with unaligned_max_volume 0, for each of A and B read as given or
    transposed, with split-K, and with beta; for small and large register blocks (which
    take the floats in different orders). k is not cut within work-groups: the float build
    takes slices there in groups that the vector build keeps whole (group_slices_items),
    which sums in another order."""
    gemm_mod = sys.modules["clgemm.gemm"]
    params = FLOAT_POINTS[point]
    thresholds(pad_min_volume=0, pad_min_k=0, pad_min_mn=0,    # padding would copy otherwise
               group_slices_max=1)
    c0 = rand(rng, m, n)
    for ta, tb, split, beta in ((False, False, 1, 0.0), (True, True, 1, 0.5),
                                (False, True, 3, 0.0), (True, False, 3, 0.5)):
        a, b = rand(rng, *((k, m) if ta else (m, k))), rand(rng, *((n, k) if tb else (k, n)))
        da, db_ = cla.to_device(queue, a), cla.to_device(queue, b)
        out = []
        for on in (1, 0):
            thresholds(unaligned_max_volume=10**18 if on else 0,
                       unaligned_light_volume=10**18 if on else 0, unaligned_share=0)
            plan = GemmPlan(queue, kernel, params, transposed_by="kernel", split_k=split)
            dc = cla.to_device(queue, c0)
            prep = gemm_mod.prepare(plan, da.T if ta else da, db_.T if tb else db_, dc, 1.5, beta)
            unaligned = a.shape[1] % 4 != 0 or b.shape[1] % 4 != 0    # rows in memory
            assert prep.floats == (on and unaligned)
            if prep.floats:
                assert not prep.padded
                gemm_step = next(s for s in prep.steps if s.knl.function_name == "gemm")
                assert {gemm_step.args[4].int_ptr, gemm_step.args[6].int_ptr} == \
                    {da.data.int_ptr, db_.data.int_ptr}
            prep.launch()
            out.append(dc.get())
        assert np.array_equal(out[0], out[1]), (ta, tb, split, beta)
        opa, opb = (a.T if ta else a), (b.T if tb else b)
        assert close(out[0], verify.reference(opa, opb, 1.5, beta, c0), k)


def test_aligned_and_host_operands_take_the_vector_loads(queue, rng, thresholds):
    """The float-at-a-time build is for rows that are not whole vectors only: aligned device
    operands and host ones (uploaded into aligned buffers) keep the vector loads, whatever
    the threshold allows."""
    thresholds(unaligned_max_volume=10**18)
    gemm_mod = sys.modules["clgemm.gemm"]
    plan = GemmPlan(queue, "5", dict(TSM=16, TSN=16, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=1))
    a, b = rand(rng, 37, 28), rand(rng, 28, 52)
    for da, db_ in ((cla.to_device(queue, a), cla.to_device(queue, b)), (a, rand(rng, 28, 53))):
        prep = gemm_mod.prepare(plan, da, db_, None, 1.0, 0.0)
        assert not prep.floats
    assert all(key[0] != "floats" for key in plan._programs)


def test_describe_says_which_rows_are_read_a_float_at_a_time(queue, thresholds):
    """Plan.describe (the bench's and `clgemm run`'s account of a launch) reports the
    float-at-a-time build for dense operands whose k or n is not a multiple of 4, of at most
    unaligned_max_volume multiply-adds, and no padding there."""
    thresholds(unaligned_max_volume=36 * 53 * 28, unaligned_light_block=0)
    params = dict(TSM=16, TSN=16, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=1)
    for (m, n, k), floats in (((37, 53, 27), True), ((36, 52, 28), False), ((36, 53, 28), True),
                              ((36, 52, 27), True), ((36, 53, 29), False), ((36, 53, 32), False)):
        d = clgemm.Plan(queue, m, n, k, kernel="5", params=params).describe()
        assert d["floats"] is floats and not (floats and d["padded"]), (m, n, k)


def test_only_small_products_read_unaligned_rows_by_default(queue):
    """The default thresholds: the float-at-a-time build's loads slowed a large register
    block's loop by 12-20% on an H100, so a large product keeps the aligned copies and the
    vector loads, while one of at most 2^29 multiply-adds (4096 x 4096 x 32, where the copy
    was still the larger cost) reads its rows where they lie; so does one of at most 2^30
    where a work-item holds at most 32 sums in a group of 256 or more (8 x 4 was x1.11 as
    fast as the copies at 1023^3, x0.73-0.97 from 1.5e9 multiply-adds, in groups of 128
    x0.87 at 1151^3); and one of at most 2^31
    where a work-item holds 128 sums or more and the copies' share of the work is large.
    (Plans only: nothing this large is launched here.)"""
    large = dict(TSM=32, TSN=32, TSK=8, WPTM=8, WPTN=8, WIDTH=4, PAD=1)
    for (m, n, k), floats in (((4096, 4096, 1), True), ((4096, 4096, 31), True),
                              ((4096, 4096, 33), False), ((4096, 4095, 32), True),
                              ((4096, 4097, 32), False), ((8192, 8192, 9), False),
                              ((1501, 1501, 401), False), ((767, 767, 767), True),
                              ((1023, 1023, 1023), False), ((7919, 7919, 769), False),
                              ((37, 53, 29), True)):
        assert clgemm.Plan(queue, m, n, k, kernel="5", params=large).describe()["floats"] \
            is floats, (m, n, k)
    light = dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=1)    # 256 items
    for (m, n, k), floats in (((1023, 1023, 1023), True), ((1024, 1024, 1023), True),
                              ((1024, 1024, 1025), False), ((1999, 999, 999), False),
                              ((4096, 4096, 129), False),
                              ((4096, 4096, 63), True), ((4096, 4096, 127), False),
                              ((7919, 7919, 769), False)):
        assert clgemm.Plan(queue, m, n, k, kernel="5", params=light).describe()["floats"] \
            is floats, (m, n, k)
    few = dict(light, TSM=32, TSN=128, TSK=32)       # 8 x 4 too, in groups of 128 items
    assert not clgemm.Plan(queue, 1023, 1023, 1023, kernel="5", params=few).describe()["floats"]
    # 16 x 8 a work-item: up to 2^31 where the copies would move 1/2048 of a float a
    # multiply-add or more (A's 1/n where k is odd, B's 1/m where n is): x1.08 in place at
    # 2047 x 1023 x 1023 (copies of both), x0.94 at 4096 x 4096 x 127 (of A alone)
    heavy = dict(TSM=128, TSN=128, TSK=8, WPTM=16, WPTN=8, WIDTH=4, PAD=1)
    for (m, n, k), floats in (((2047, 1023, 1023), True), ((1000, 1000, 2047), True),
                              ((4096, 4096, 127), False), ((2048, 2047, 512), True),
                              ((2048, 2047, 513), False), ((1501, 1501, 401), True),
                              ((2047, 2047, 1023), False), ((4096, 2047, 255), True)):
        assert clgemm.Plan(queue, m, n, k, kernel="5", params=heavy).describe()["floats"] \
            is floats, (m, n, k)


def test_a_narrow_sides_copies_give_way_to_the_float_build_where_asked():
    """unaligned_share (0, off, by default; 1/64 in the H200's database): where the copies
    would move that many floats a multiply-add or more (B's k x n for m rows: 1/m; A's
    m x k: 1/n), the unaligned operands are read where they lie, for any block and volume:
    22x5570x5941 with the 32x128x32 8x4 point (groups of 128, too few for the light rule,
    7.3e8 multiply-adds, past unaligned_max_volume) copied B, 1/22 of a float a
    multiply-add; with nothing to copy, the rule has nothing to save."""
    from clgemm import heuristics, kernels
    from clgemm.thresholds import DEFAULTS, Facts
    k5 = kernels.get("5")
    p = dict(TSM=32, TSN=128, TSK=32, WPTM=8, WPTN=4, WIDTH=4, PAD=1)

    def floats(shape, copied, **given):
        f = Facts(132, thresholds=dict(DEFAULTS, **given))
        return heuristics.reads_floats(k5, p, shape, f, "auto", copied)
    assert DEFAULTS["unaligned_share"] == 0
    shape = (22, 5570, 5941)
    assert not floats(shape, (True, True))
    assert floats(shape, (True, True), unaligned_share=1 / 64)
    assert floats(shape, (False, True), unaligned_share=1 / 64)      # B's copy alone: 1/22
    assert not floats(shape, (True, False), unaligned_share=1 / 64)  # A's alone: 1/5570
    assert not floats((220, 5570, 5941), (True, True), unaligned_share=1 / 64)
    assert floats((5570, 22, 5941), (True, False), unaligned_share=1 / 64)
    assert not floats(shape, (False, False), unaligned_share=1 / 64)


@pytest.mark.parametrize("shape,items,taken", [
    ((37, 53, 27), {}, "floats"),                           # read a float at a time
    ((37, 53, 29), dict(unaligned_max_volume=0, unaligned_light_volume=0, unaligned_share=0,
                        unaligned_heavy_volume=0, pad_min_volume=0, pad_min_k=0,
                        pad_min_mn=0, pad_waste=8), "padded"),
    ((64, 64, 64), dict(kmajor_min_n=0, kmajor_min_volume=0), "a_kmajor"),
    ((2, 32, 4096), {}, "splits"),
    ((64, 256, 40), dict(columns_min_tiles=1), "columns_first"),
])
def test_describe_reports_the_launch_prepare_lays_out(queue, thresholds, shape, items, taken):
    """Plan.describe and layout.prepare take their decisions from one function
    (GemmPlan.decide): for dense row-major device operands, what describe() reports is
    what prepare lays out (the peeled case: tests/test_peel.py)."""
    thresholds(**items)
    m, n, k = shape
    plan = clgemm.Plan(queue, m, n, k, kernel="5", params=P5)
    ops = [cla.to_device(queue, np.zeros(s, np.float32)) for s in ((m, k), (k, n))]
    prep = sys.modules["clgemm.gemm"].prepare(plan.launch, *ops, None, 1.0, 0.0)
    d = plan.describe()
    assert (d["splits"], d["padded"], d["floats"], d["tail"], d["a_kmajor"],
            d["columns_first"], d["peel"]) == (prep.splits, prep.padded, prep.floats,
                                               prep.tail, prep.kmajor, prep.columns_first,
                                               prep.peel)
    assert (d["splits"] > 1 if taken == "splits" else d[taken]), d    # each case's decision
