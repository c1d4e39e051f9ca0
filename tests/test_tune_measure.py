"""What the tuner's evaluator measures is what gemm() will launch on dense device operands
into a fresh output: the one build compiled ahead for a target (whole tiles, CLAMP, tiles
along rows, split-K, a K-major A, padded operands, operands whose rows are not whole vectors
read a float at a time, C's rows of n floats stored a float at a time) is the one checked
and timed; a slow configuration is timed once."""

import numpy as np
import pytest


pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own

P = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)


def copies_unaligned(thresholds):
    """gemm() copies operands whose rows are not whole vectors into aligned buffers at
    every shape (heuristics.reads_floats never holds), as at large products: the aligned
    builds are then the ones a small unaligned target launches."""
    thresholds(unaligned_max_volume=0, unaligned_light_volume=0, unaligned_heavy_volume=0,
               unaligned_share=0)


def test_slow_configuration_is_timed_once(queue):
    """A first timed run over the cutoff ends the timing; under it, all runs are taken."""
    from clgemm.evaluate import Evaluator
    ev = Evaluator(queue, "2", 40, 24, 16, repeat=4)
    plan = ev.compile({"TS": 8})
    slow = ev.measure(plan, cutoff_ms=0.0)
    assert slow["status"] == "ok" and slow["runs"] == 1
    full = ev.measure(plan, cutoff_ms=1e9)
    assert full["status"] == "ok" and full["runs"] == 4
    assert ev.measure(plan)["runs"] == 4


@pytest.mark.parametrize("target,build,check", [((64, 64, 64), "exact", (64, 96, 40)),
                                                 ((37, 45, 32), "clamp", (69, 109, 40)),
                                                 ((37, 44, 32), "clamp", (69, 108, 40))])
def test_target_compiles_and_checks_only_its_own_build(queue, thresholds, target, build, check):
    """A whole-tile target is checked with the EXACT build alone; one with k in whole tiles
    and m, n not (its B copied aligned) at a shape with the same remainders, so the CLAMP
    build timed is the one checked (and in either case the only one compiled)."""
    from clgemm.evaluate import Evaluator
    copies_unaligned(thresholds)
    ev = Evaluator(queue, "5", *target, repeat=2)
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    # (tile loads build, A_KMAJOR, B_NMAJOR, SPLIT_K, C_UNALIGNED: a fresh C of n floats a
    # row, COLUMNS_FIRST: not 4 tiles)
    only = {(build, False, False, False, target[1] % 4 != 0, False)}
    assert set(plan._programs) == only
    assert ev.check_shape(plan) == check
    assert ev.measure(plan)["status"] == "ok"
    assert set(plan._programs) == only


def test_target_taller_than_wide_is_checked_with_its_tiles_along_rows(queue, thresholds):
    """The check shape's grid is wider than tall; a target whose tiles go along rows
    (heuristics.columns_first) is checked in that order all the same, so the one build
    compiled ahead is the one checked and timed."""
    from clgemm.evaluate import Evaluator
    thresholds(columns_min_tiles=0)
    ev = Evaluator(queue, "5", 100, 32, 32, repeat=2)       # 4 x 1 tiles of 32 x 32
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    rows_only = {("clamp", False, False, False, False, False)}
    assert set(plan._programs) == rows_only
    assert plan.columns_first(*ev.check_shape(plan))        # alone, it would go down columns
    assert ev.measure(plan)["status"] == "ok"
    assert set(plan._programs) == rows_only


def test_split_target_checks_the_split_build(queue):
    """A target that auto-splits k is checked at the odd shape with the SPLIT_K build too,
    so the one program compiled ahead is the one checked and timed."""
    from clgemm.evaluate import Evaluator
    ev = Evaluator(queue, "5", 1, 32, 4096, repeat=2)
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    assert plan.splits(1, 32, 4096) > 1
    kg = plan.groups(1, 32, 4096)             # slices within the group too, where it takes them
    split_only = {("clamp", False, False, True, False, False)       # k whole tiles: CLAMP
                  + ((("kg", kg),) if kg > 1 else ())}
    assert set(plan._programs) == split_only
    assert ev.measure(plan)["status"] == "ok"
    assert set(plan._programs) == split_only


def test_kmajor_target_checks_and_times_the_kmajor_build(queue, thresholds):
    """A target whose row-major A gemm() turns K-major is checked and timed with the
    A_KMAJOR build and a K x M copy of A, so the tuner measures what will run."""
    from clgemm.evaluate import Evaluator
    thresholds(kmajor_min_n=0, kmajor_min_volume=0)
    copies_unaligned(thresholds)
    for shape, builds in (((64, 64, 64), {("exact", True, False, False, False, False)}),
                          ((37, 45, 29), {("checked", True, False, False, True, False)})):
        ev = Evaluator(queue, "5", *shape, repeat=2)
        plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
        assert set(plan._programs) == builds
        r = ev.measure(plan)
        assert r["status"] == "ok", r
        assert set(plan._programs) == builds


def test_padded_target_checks_and_times_the_exact_build(queue, thresholds):
    """A target that gemm() pads to whole tiles is checked and timed with the EXACT build
    over zero-padded operands, as it will run; the real C is written in place."""
    from clgemm.evaluate import Evaluator
    thresholds(pad_min_volume=0, pad_min_k=0, pad_min_mn=0)
    copies_unaligned(thresholds)
    ev = Evaluator(queue, "5", 62, 63, 30, repeat=2)     # 64 x 64 x 32 once padded
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    assert plan.pads(62, 63, 30) and ev.layout(plan) == ((64, 64, 32), False)
    only = {("exact", False, False, False, True, False)}     # C 62 x 63, rows of 63 floats
    assert set(plan._programs) == only
    r = ev.measure(plan)
    assert r["status"] == "ok", r
    assert set(plan._programs) == only


@pytest.mark.parametrize("shape", [(37, 45, 29), (40, 45, 64), (37, 44, 29)])
def test_unaligned_target_checks_and_times_the_float_build_on_dense_operands(queue, shape):
    """Where gemm() reads a caller's dense device operands whose rows are not whole vectors
    a float at a time (heuristics.reads_floats: small products), the tuner checks and times
    that build (AB_UNALIGNED), on operands with rows of k and n floats, and nothing else is
    compiled: not the aligned copies' build, which such a caller never runs."""
    from clgemm.evaluate import Evaluator
    ev = Evaluator(queue, "5", *shape, repeat=2)
    plan = ev.compile(P)
    assert ev.floats(plan) and ev.layout(plan) == (shape, False)
    assert describe_floats(queue, shape)           # what gemm() reports for such operands
    only = {("floats", False, False, False, shape[1] % 4 != 0, False)}
    assert set(plan._programs) == only
    r = ev.measure(plan)
    assert r["status"] == "ok", r
    assert set(plan._programs) == only
    am, bm, cm, _, floats = ev._operands(plan)
    m, n, k = shape
    assert floats and (am.ld, bm.ld, cm.ld) == (k, n, n)   # dense rows, read where they lie


def test_unaligned_target_that_gemm_copies_is_timed_on_aligned_copies(queue, thresholds):
    """Where reads_floats declines (larger products), gemm() copies such operands into
    aligned buffers: the tuner times the aligned build on aligned rows, as before."""
    from clgemm.evaluate import Evaluator
    copies_unaligned(thresholds)
    ev = Evaluator(queue, "5", 37, 45, 29, repeat=2)
    plan = ev.compile(P)
    assert not ev.floats(plan) and not describe_floats(queue, (37, 45, 29))
    assert set(plan._programs) == {("checked", False, False, False, True, False)}
    assert ev.measure(plan)["status"] == "ok"
    am, bm, cm, _, floats = ev._operands(plan)
    assert not floats and (am.ld, bm.ld, cm.ld) == (32, 48, 45)


def test_tuned_float_build_reads_the_callers_operands_correctly(queue, rng):
    """The float build the tuner picks for such a target is the one a gemm() call on dense
    device operands of that shape runs, and its product matches float64."""
    import pyopencl.array as cla
    import clgemm
    from clgemm import verify
    from clgemm.evaluate import Evaluator
    m, n, k = 37, 45, 29
    ev = Evaluator(queue, "5", m, n, k, repeat=2)
    plan = ev.compile(P)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    p = clgemm.Plan(queue, m, n, k, kernel="5", params=P)
    assert p.describe()["floats"] == ev.floats(plan)
    c = p(cla.to_device(queue, a), cla.to_device(queue, b)).get()
    assert verify.passes(c, verify.reference(a, b), k, a, b)


def describe_floats(queue, shape) -> bool:
    """Whether gemm() reads dense device operands of `shape` a float at a time, as
    Plan.describe() reports it for kernel 5 at the tests' parameters."""
    import clgemm
    return clgemm.Plan(queue, *shape, kernel="5", params=P).describe()["floats"]


def test_split_target_with_ragged_output_times_the_aligned_workspace_build(queue, thresholds):
    """In slices of k, the partial products go to a workspace of aligned rows and only
    their sum writes C: a target whose C has rows of n floats (n not whole vectors) then
    compiles no C_UNALIGNED gemm build, at the target or at its check."""
    from clgemm.evaluate import Evaluator
    copies_unaligned(thresholds)          # B copied aligned: the vector build, in slices
    ev = Evaluator(queue, "5", 1, 30, 4096, repeat=2)
    plan = ev.compile(P)
    launched = ev.layout(plan)[0]
    assert plan.splits(*launched, floats=ev.floats(plan)) > 1
    assert not ev.c_unaligned(plan, launched, ev.floats(plan))
    before = set(plan._programs)
    assert all(not key[4] for key in before)
    assert ev.measure(plan)["status"] == "ok"
    assert set(plan._programs) == before


@pytest.mark.parametrize("k,rows", [(96, False), (32, True)])
def test_check_stages_c_as_the_target_does(queue, thresholds, monkeypatch, k, rows):
    """C_ROWS (C's rows staged, heuristics.stages_c) depends on k, and the check shape's k
    is small: the check takes the target's decision, so that the one build compiled ahead,
    with or without the staging, is the one checked and timed. (The staging needs the
    compiler's register count, which the CPU device does not give: assumed kept here.)"""
    from clgemm.evaluate import Evaluator
    from clgemm.launch import GemmPlan
    thresholds(c_rows_max_k=64)
    copies_unaligned(thresholds)
    monkeypatch.setattr(GemmPlan, "_rows_keep_residents", lambda self, opts: True)
    ev = Evaluator(queue, "5", 37, 45, k, repeat=2)
    plan = ev.compile(P)
    assert ev.check_shape(plan)[2] <= 64 < 96
    only = {("clamp", False, False, False, True, False) + ((("rows",)) if rows else ())}
    assert set(plan._programs) == only
    r = ev.measure(plan)
    assert r["status"] == "ok", r
    assert set(plan._programs) == only
