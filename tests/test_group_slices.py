"""k cut into slices within a work-group (kernel 5's KG build, heuristics.group_slices):
the rule, the launch it makes (KG sets of work-items along dimension 1), and products
against float64 on poisoned outputs with every build the rule can meet."""

import numpy as np
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import device as devmod
from clgemm import heuristics, kernels, launch, operands
from clgemm.thresholds import DEFAULTS, Facts

from .conftest import P5

pytestmark = pytest.mark.usefixtures("home")

P84 = dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=1)     # 256 work-items
P44 = dict(TSM=64, TSN=32, TSK=32, WPTM=4, WPTN=4, WIDTH=4, PAD=1)      # 128 work-items


def test_group_slices_rule():
    """Two slices where a launch has at most one group a compute unit, each slice keeps 8
    tile steps and the group stays within 256 work-items (512 for the float-at-a-time
    build of blocks of at most 32 sums), the groups of all slices of a split launch
    counted; none for a kernel without the build, or where the database says 1."""
    k5, f = kernels.get("5"), Facts(132)

    def kg(params, shape, slices=1, floats=False, facts=f, kern=k5):
        return heuristics.group_slices(kern, params, shape, facts, slices, floats)
    assert kg(P44, (512, 512, 512)) == 2              # 8 x 16 = 128 groups, 16 steps
    assert kg(P44, (512, 512, 511)) == 2
    assert kg(P44, (384, 384, 384)) == 1              # 12 steps: slices of 6
    assert kg(P44, (640, 640, 640)) == 1              # 200 groups on 132 units
    assert kg(P44, (512, 512, 512), slices=2) == 1    # 256 groups of two slices
    assert kg(P44, (256, 512, 1024), slices=2) == 2   # 128
    assert kg(P44, (256, 512, 1024), slices=2, facts=Facts(132, thresholds=dict(
        DEFAULTS, group_slices_split=0))) == 1
    assert kg(P84, (1024, 1024, 1024)) == 1           # 512 work-items, vector loads
    assert kg(P84, (1023, 1023, 1023), floats=True) == 2
    assert kg(dict(P84, WPTM=4), (1023, 1023, 1023), floats=True) == 1   # 1024 work-items
    wide = dict(P84, TSN=256, WPTM=16)               # 256 work-items of 64 sums
    assert kg(wide, (58, 2454, 262), floats=True) == 1
    assert kg(P44, (512, 512, 512), kern=kernels.get("6")) == 1
    assert kg(P44, (512, 512, 512), facts=Facts(132, thresholds=dict(DEFAULTS,
                                                                     group_slices_max=1))) == 1
    assert kg(P44, (512, 512, 1024), slices=2) == 1   # 256 groups
    assert kg(P44, (256, 512, 512), slices=2) == 1    # 8 steps a slice
    four = Facts(132, thresholds=dict(DEFAULTS, group_slices_max=4, group_slices_items=1024))
    assert kg(P44, (512, 512, 1024), facts=four) == 4
    assert kg(P44, (512, 512, 512), facts=four) == 2   # 16 steps: 4 slices would keep 4


def _force(thresholds, kg):
    thresholds(group_slices_max=kg, group_slices_fill=1e9, group_slices_min_steps=1,
               group_slices_items=1e9, group_slices_float_items=1e9)


@pytest.mark.parametrize("kg", [2, 4])
@pytest.mark.parametrize("m,n,k,ta,tb", [
    (64, 64, 64, False, False),       # whole tiles: the EXACT build
    (37, 53, 48, False, False),       # k in whole tiles, m and n not: CLAMP
    (33, 36, 100, False, False),      # bounds checks, rows of whole vectors
    (37, 53, 29, False, False),       # rows not whole vectors: read a float at a time
    (37, 53, 29, True, True),         # ... transposed, read as they lie
    (40, 64, 96, True, False),        # A K-major, read as it lies
    (1, 1, 1, False, False),          # one tile step: every slice but the first empty
    (5, 3, 9, False, True),
])
def test_group_slices_compute_the_product(queue, rng, thresholds, kg, m, n, k, ta, tb):
    """The product with KG sets of work-items, each over its slice of k (some empty), their
    sums added in local memory: C = alpha * op(A) op(B) + beta * C against float64, on a
    c poisoned around the block written (a view into a larger matrix)."""
    _force(thresholds, kg)
    plan = clgemm.Plan(queue, m, n, k, trans_a=ta, trans_b=tb, kernel="5", params=P5,
                       transposed_by="kernel")
    expect = 1 if -(-k // P5["TSK"]) < 2 else min(kg, -(-k // P5["TSK"]))
    expect = 1 << (expect.bit_length() - 1)           # halved to a power of two
    assert plan.describe()["group_slices"] == expect
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np.float32)
    big = np.full((m + 3, n + 8), np.nan, np.float32)
    c0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    big[1:1 + m, 4:4 + n] = c0
    dbig = cla.to_device(queue, big)
    view = dbig[1:1 + m, 4:4 + n]
    plan(cla.to_device(queue, a), cla.to_device(queue, b), view, alpha=1.5, beta=-0.5)
    out = dbig.get()
    opa, opb = (a.T if ta else a).astype(np.float64), (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(out[1:1 + m, 4:4 + n], 1.5 * opa @ opb - 0.5 * c0,
                               rtol=1e-5, atol=1e-5)
    outside = np.ones_like(big, bool)
    outside[1:1 + m, 4:4 + n] = False
    assert np.isnan(out[outside]).all()              # nothing written past the block


@pytest.mark.parametrize("m,n,k", [(37, 53, 290), (64, 64, 256), (33, 36, 130)])
def test_group_slices_with_split_k(queue, rng, thresholds, m, n, k):
    """A launch in slices of k across work-groups takes slices within each group too:
    each group's slice cut again, the sums of both added."""
    _force(thresholds, 2)
    plan = clgemm.Plan(queue, m, n, k, kernel="5", params=P5, split_k=3)
    assert plan.describe()["splits"] == 3 and plan.describe()["group_slices"] == 2
    a, b = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = cla.to_device(queue, np.full((m, n), np.nan, np.float32))
    out = plan(cla.to_device(queue, a), cla.to_device(queue, b), c).get()
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_the_launch_has_kg_sets_of_work_items(queue, thresholds):
    """The bound kernel's work-group is the configuration's (lx, ly) with ly KG times, and
    the NDRange as many groups as tiles; its build is one of its own."""
    _force(thresholds, 2)
    plan = launch.GemmPlan(queue, "5", P5)
    m, n, k = 64, 96, 64
    a, b, c = (operands.Matrix(cla.zeros(queue, s, np.float32).base_data, *s, s[1])
               for s in ((m, k), (k, n), (m, n)))
    steps, _ = plan.bound(a, b, c)
    lx, ly = plan.local
    assert steps[0].local_size == (lx, 2 * ly, 1)
    assert steps[0].global_size == (n // P5["TSN"] * lx, m // P5["TSM"] * 2 * ly, 1)
    assert any(("kg", 2) in key for key in plan._programs)


def test_a_group_the_device_cannot_hold_is_halved(queue, thresholds, monkeypatch):
    """Where the device cannot hold the larger group (here: over 2 x the configuration's
    work-items, as a register file would refuse), the count is halved until it can."""
    _force(thresholds, 4)
    plan = launch.GemmPlan(queue, "5", P5)
    lx, ly = plan.local
    real = devmod.launch_violations
    monkeypatch.setattr(devmod, "launch_violations",
                        lambda dev, x, y, *rest: (["too many"] if x * y > 2 * lx * ly
                                                  else real(dev, x, y, *rest)))
    launch._group_fit.clear()
    assert plan.groups(64, 64, 256) == 2
    launch._group_fit.clear()
