"""What the tuner's evaluator measures is what gemm() will launch: the one build compiled
ahead for a target (whole tiles, CLAMP, tiles along rows, split-K, a K-major A, padded
operands) is the one checked and timed; a slow configuration is timed once."""

import pytest


pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


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
                                                 ((37, 45, 32), "clamp", (69, 109, 40))])
def test_target_compiles_and_checks_only_its_own_build(queue, target, build, check):
    """A whole-tile target is checked with the EXACT build alone; one with k in whole tiles
    and m, n not at a shape with the same remainders, so the CLAMP build timed is the one
    checked (and in either case the only one compiled)."""
    from clgemm.evaluate import Evaluator
    ev = Evaluator(queue, "5", *target, repeat=2)
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    # (tile loads build, A_KMAJOR, B_NMAJOR, SPLIT_K, C_UNALIGNED, COLUMNS_FIRST: not 4 tiles)
    only = {(build, False, False, False, False, False)}
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
    for shape, builds in (((64, 64, 64), {("exact", True, False, False, False, False)}),
                          ((37, 45, 29), {("checked", True, False, False, False, False)})):
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
    ev = Evaluator(queue, "5", 62, 63, 30, repeat=2)     # 64 x 64 x 32 once padded
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    assert plan.pads(62, 63, 30) and ev.layout(plan) == ((64, 64, 32), False)
    assert set(plan._programs) == {("exact", False, False, False, False, False)}
    r = ev.measure(plan)
    assert r["status"] == "ok", r
    assert set(plan._programs) == {("exact", False, False, False, False, False)}
