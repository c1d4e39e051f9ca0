"""Copies padded along k alone (heuristics.pads_depth): where both operands are copied into
aligned buffers anyway and the launch would check bounds, the copies hold k in whole tiles
(zeros past k) and the CLAMP build runs, with the same product."""

import numpy as np
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import heuristics, kernels, verify
from clgemm.launch import GemmPlan
from clgemm.thresholds import DEFAULTS, Facts

P5 = dict(TSM=32, TSN=32, TSK=8, WPTM=8, WPTN=4, WIDTH=4, PAD=1)
K5 = kernels.get("5")


def test_pads_depth_rule():
    """Only with both operands copied, a checked build otherwise, no padding to whole tiles
    (its copies pad k too), the rule on, and the kernel with a CLAMP build."""
    on = Facts(132, thresholds=dict(DEFAULTS, pad_depth=1))
    off = Facts(132, thresholds=dict(DEFAULTS, pad_depth=0))
    both = (True, True)
    s = (37, 53, 29)                                   # m, n and k not whole tiles
    assert heuristics.loads(K5, P5, s) == "checked"
    assert heuristics.pads_depth(K5, P5, s, on, copied=both)
    assert heuristics.launched(K5, P5, s, on, copied=both) == (37, 53, 32)
    assert heuristics.loads(K5, P5, (37, 53, 32)) == "clamp"
    assert heuristics.launched(K5, P5, s, off, copied=both) == s
    assert not heuristics.pads_depth(K5, P5, s, on, copied=(True, False))  # B read as it lies
    assert not heuristics.pads_depth(K5, P5, s, on, copied=(False, True))
    assert not heuristics.pads_depth(K5, P5, s, on, floats=True, copied=both)
    assert not heuristics.pads_depth(K5, P5, s, on, mode="no", copied=both)
    assert not heuristics.pads_depth(K5, P5, (37, 53, 32), on, copied=both)    # clamp already
    assert not heuristics.pads_depth(K5, P5, s, on, copied=both, slices=2)
    assert not heuristics.pads_depth(kernels.get("4"), P5, s, on, copied=both)  # no CLAMP build
    big = (4001, 4001, 4001)                           # padded to whole tiles: k is too
    assert heuristics.pads(K5, P5, big, on)
    assert not heuristics.pads_depth(K5, P5, big, on, copied=both)
    assert heuristics.launched(K5, P5, big, on, copied=both) == (4032, 4032, 4008)


NO_FLOATS = dict(unaligned_max_volume=0, unaligned_light_volume=0, unaligned_heavy_volume=0,
                 unaligned_share=0)


def test_decide_pads_depth_only_where_both_are_copied(queue, thresholds):
    thresholds(pad_depth=1, **NO_FLOATS)
    plan = GemmPlan(queue, "5", P5)
    d = plan.decide(37, 53, 29, (True, True))
    assert d.padded and d.launched == (37, 53, 32) and d.main == (37, 53, 32)
    assert plan.loads(*d.main) == "clamp"
    d = plan.decide(37, 53, 29, (False, True))
    assert not d.padded and d.launched == (37, 53, 29)
    d = GemmPlan(queue, "5", P5, split_k=2).decide(37, 53, 29, (True, True))
    assert not d.padded and d.launched == (37, 53, 29) and d.splits == 2    # sliced: unpadded


@pytest.mark.parametrize("ta,tb,beta,split", [(False, False, 0.0, 1), (True, False, -0.5, 1),
                                              (False, True, 0.0, 1), (True, True, 0.5, 1),
                                              (False, False, 0.5, 3)])
def test_depth_padded_copies_give_the_product(queue, rng, thresholds, ta, tb, beta, split):
    """Device operands whose rows are not whole vectors (k = 29, n = 53, m = 37 as they lie)
    and copied: with the rule on, an unsplit launch covers k in whole tiles by the CLAMP
    build; the result is bit for bit the checked build's over the unpadded copies (the
    zeros add nothing) and matches float64, with C poisoned (beta 0) or read, operands as
    given or transposed; a second call reuses the layout. A launch in slices of k stays
    unpadded, checked."""
    thresholds(group_slices_max=1, **NO_FLOATS)
    m, n, k = 37, 53, 29
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    da, db_ = cla.to_device(queue, a), cla.to_device(queue, b)
    opa, opb = a.T if ta else a, b.T if tb else b
    out = {}
    for on in (0, 1):
        thresholds(pad_depth=on)
        plan = clgemm.Plan(queue, m, n, k, trans_a=ta, trans_b=tb, kernel="5", params=P5,
                           split_k=split, transposed_by="kernel")
        d = plan.describe()
        padded = bool(on) and split == 1
        assert d["padded"] is padded and not d["floats"] and (d["splits"] > 1) == (split > 1)
        for _ in range(2):
            dc = cla.to_device(queue, np.full((m, n), np.nan, np.float32) if beta == 0 else c0)
            plan(da, db_, dc, beta=beta)
            out[on] = dc.get()
            assert verify.passes(out[on], verify.reference(opa, opb, 1.0, beta, c0), k, opa,
                                 opb, 1.0, beta, c0)
        assert plan.reused == 1
        builds = {key[0] for key in plan.launch._programs}
        assert builds == ({"clamp"} if padded else {"checked"}), builds
    assert np.array_equal(out[0], out[1])
