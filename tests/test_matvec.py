"""Products with one row or one column of C run as matrix-vector products (clgemm.matvec,
kernels/matvec.cl) when no kernel is named: every order and transpose of the matrix and
the vector, blocks of larger matrices at any offset and leading dimension, alpha/beta, c
given or not, sliced depths, against float64 on fresh random data, with every float around
a block holding NaN (a read of one spreads it, a write of one is caught)."""


import re

import numpy as np
import pyopencl.array as cla
import pytest

import clgemm
from clgemm import db, heuristics, kernels, matvec, thresholds, verify

from .conftest import P5, rand
from .test_submatrix import Block, aligned, block_cases

pytestmark = pytest.mark.usefixtures("home")   # conftest: no tuned entries

# m = 1 and n = 1 at ones, primes, widths that are and are not multiples of 4


def close(got, a, b, k, alpha=1.0, beta=0.0, c0=None) -> bool:
    """Each element within verify.tolerance(k) of the sum of its terms' magnitudes of the
    float64 result: a one-element C of a cancelling sum has no norm to be relative to."""
    got = np.asarray(got, np.float64)
    mag = abs(alpha) * (np.abs(a.astype(np.float64)) @ np.abs(b))
    if beta:
        mag = mag + abs(beta) * np.abs(c0)
    ref = verify.reference(a, b, alpha, beta, c0)
    return bool(np.all(np.isfinite(got))
                and np.all(np.abs(got - ref) <= verify.tolerance(k) * mag + 1e-30))


SHAPES = [(1, 1, 1), (1, 7, 3), (1, 64, 97), (1, 129, 256), (1, 1, 300),
          (5, 1, 1), (31, 1, 64), (257, 1, 130), (64, 1, 7), (1, 130, 1)]


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("layouts", ["RRR", "CCC", "RCR", "CRC"])
@pytest.mark.parametrize("sliced", [False, True])
def test_matvec_blocks(queue, thresholds, ta, tb, layouts, sliced):
    """Each shape and alpha/beta, leading dimensions and offsets cycling out of phase; with
    `sliced`, every depth of 2 or more cut into slices."""
    if sliced:
        thresholds(matvec_groups=64, matvec_min_depth=1)
    for case in block_cases(queue, SHAPES, (0, 1, 4), ta, tb, layouts):
        m, n, k = *case.c0.shape, case.k
        (alpha, beta), (ba, bb, bc) = case.ab, case.blocks
        plan = clgemm.Plan(queue, m, n, k, trans_a=ta, trans_b=tb)
        assert plan.kernel in kernels.MATVEC
        assert (plan.describe()["splits"] > 1) == (sliced and k > 1)
        assert plan(ba.view, bb.view, bc.view, alpha=alpha, beta=beta) is bc.view
        got = case.check_untouched()
        a, b = case.a.T if ta else case.a, case.b.T if tb else case.b
        assert close(got, a, b, k, alpha, beta, case.c0), case.where


@pytest.mark.parametrize("layout", "RC")
def test_matvec_ragged_rows(queue, layout):
    """Rows read as float4s whose width is not a multiple of 4 (an aligned leading dimension
    and start): the last L % 4 floats of each row come by floats, in both forms."""
    rng = np.random.default_rng()
    for width in (5, 7, 130, 259):
        for offset in (0, aligned(queue)):
            for m, n, k in [(1, width, 37), (1, 33, width), (width, 1, 37), (33, 1, width)]:
                a, b = rand(rng, m, k), rand(rng, k, n)
                mat, vec = (b, a) if m == 1 else (a, b)
                cols = (mat if layout == "R" else mat.T).shape[1]    # as it lies in memory
                bm = Block(queue, mat, layout, -cols % 4 + 4, offset)
                assert bm.ld % 4 == 0
                bv = cla.to_device(queue, vec)
                ops = (bv, bm.view) if m == 1 else (bm.view, bv)
                got = clgemm.gemm(queue, *ops).get()
                assert close(got, a, b, k), f"{m}x{n}x{k} {layout} offset {offset}"


@pytest.mark.parametrize("order_a,order_b", [("C", "C"), ("F", "F"), ("C", "F"), ("F", "C")])
def test_matvec_new_results(queue, order_a, order_b):
    """gemm() without c, numpy and Array operands of either order: a new result, the same
    from a repeated (cached) call bit for bit, the second call a reuse of the first's plan."""
    rng = np.random.default_rng()
    for m, n, k in [(1, 37, 41), (43, 1, 39), (1, 256, 1024), (200, 1, 513)]:
        a, b = rand(rng, m, k, order=order_a), rand(rng, k, n, order=order_b)
        host = clgemm.gemm(queue, a, b)
        assert isinstance(host, np.ndarray) and close(host, a, b, k)
        da, db = cla.to_device(queue, a), cla.to_device(queue, b)
        first = clgemm.gemm(queue, da, db).get()
        hits = clgemm.cache_info()["hits"]
        second = clgemm.gemm(queue, da, db).get()
        assert clgemm.cache_info()["hits"] == hits + 1
        assert np.array_equal(first, second) and close(first, a, b, k)


def test_matvec_sliced_depth(queue, thresholds):
    """Depths cut into slices (the last work-group of each group of outputs adds them in
    order), in both forms and with an odd last slice, equal to the unsliced result within
    rounding."""
    rng = np.random.default_rng()
    for m, n, k, ta in [(1, 9, 1000, False), (1, 9, 1003, True), (11, 1, 2050, False),
                        (7, 1, 999, True)]:
        a = rand(rng, *((k, m) if ta else (m, k)))
        b, c0 = rand(rng, k, n), rand(rng, m, n)
        thresholds(matvec_groups=64, matvec_min_depth=8)
        sliced = clgemm.Plan(queue, m, n, k, trans_a=ta)
        assert sliced.describe()["splits"] > 1
        got = clgemm.gemm(queue, a, b, c0.copy(), alpha=0.5, beta=2.0, trans_a=ta)
        assert close(got, a.T if ta else a, b, k, 0.5, 2.0, c0)


def test_matvec_sliced_depth_again(queue, thresholds):
    """Each launch's last work-group of a group of outputs adds the slices and sets that
    group's count back to zero: launch after launch of one plan into a c poisoned with NaN
    writes every element, with the same bits each time (a count left over would leave
    the NaN)."""
    rng = np.random.default_rng()
    thresholds(matvec_groups=64, matvec_min_depth=8)
    for m, n, k in [(1, 37, 1000), (45, 1, 999)]:
        a, b = rand(rng, m, k), rand(rng, k, n)
        plan = clgemm.Plan(queue, m, n, k)
        assert plan.describe()["splits"] > 1
        da, db_ = cla.to_device(queue, a), cla.to_device(queue, b)
        dc = cla.empty(queue, (m, n), np.float32)
        got = []
        for _ in range(3):
            dc.fill(np.float32(np.nan))
            got.append(plan(da, db_, dc).get())
        assert close(got[0], a, b, k)
        assert all(np.array_equal(got[0], g) for g in got[1:])


def test_a_sliced_plans_counts_are_out_of_its_allocators_reach(queue, thresholds):
    """The slices' counts stay zero between launches in a buffer of the plan's own: its
    allocator's memory (a pool's, which a result dropped while another queue still writes
    it can be handed to) may be overwritten between calls, and each later call still writes
    the right product (with the counts there, one stray write stopped every later launch
    from writing c)."""
    import pyopencl as cl
    rng = np.random.default_rng()
    thresholds(matvec_groups=64, matvec_min_depth=8)
    handed = []

    def alloc(nbytes):
        handed.append(cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes))
        return handed[-1]
    for m, n, k in [(1, 37, 1000), (45, 1, 999)]:
        a, b = rand(rng, m, k), rand(rng, k, n)
        plan = clgemm.Plan(queue, m, n, k, allocator=alloc)
        assert plan.describe()["splits"] > 1
        da, db_ = cla.to_device(queue, a), cla.to_device(queue, b)
        dc = cla.empty(queue, (m, n), np.float32)
        for i in range(3):
            dc.fill(np.float32(np.nan))
            got = plan(da, db_, dc).get()
            assert close(got, a, b, k), i
            assert handed
            for buf in handed:          # what another queue's late write would do
                cl.enqueue_fill_buffer(queue, buf, np.int32(7), 0, buf.size)


def test_matvec_only_without_a_named_kernel(queue, thresholds):
    """A named kernel, parameters or split count runs that kernel at m = 1 as asked; the
    threshold at 0 turns the path off."""
    assert clgemm.Plan(queue, 1, 64, 64).kernel == "matvec-sweep"
    assert clgemm.Plan(queue, 64, 1, 64).describe()["kernel"] == "matvec-dot"
    assert clgemm.Plan(queue, 2, 64, 64).kernel not in kernels.MATVEC
    assert clgemm.Plan(queue, 1, 64, 64, kernel="5").kernel == "5"
    assert clgemm.Plan(queue, 1, 64, 64, params=P5).kernel not in kernels.MATVEC
    assert clgemm.Plan(queue, 1, 64, 64, split_k=2).kernel not in kernels.MATVEC
    thresholds(matvec_max=0)
    assert clgemm.Plan(queue, 1, 64, 64).kernel not in kernels.MATVEC


def test_matvec_slices_rule():
    """Enough slices to reach matvec_groups a compute unit, none thinner than the minimum
    depth, at most 64, at least 1."""
    f = thresholds.Facts(132, thresholds={**thresholds.DEFAULTS, "matvec_groups": 4,
                                          "matvec_min_depth": 256})
    assert heuristics.matvec_slices(16, 4096, f) == 16          # 4096 / 256 deep
    assert heuristics.matvec_slices(16, 1 << 20, f) == 33       # 528 groups / 16
    assert heuristics.matvec_slices(1, 1 << 30, f) == 64
    assert heuristics.matvec_slices(1000, 4096, f) == 1
    assert heuristics.matvec_slices(16, 100, f) == 1
    assert heuristics.matvec((1, 5, 5), f) and heuristics.matvec((5, 1, 5), f)
    assert not heuristics.matvec((2, 2, 5), f)
    assert not heuristics.matvec((1, 1, 2**30), f)


def test_matvec_fits_narrow_rows(queue):
    """Rows narrower than a work-group's span take fewer work-items across them and more
    rows (or lanes down them), the group no larger than the device allows; describe()
    reports the parameters built."""
    limit = queue.device.max_work_group_size
    dot, sweep = (kernels.MATVEC[matvec.FORMS[f]].defaults for f in ("dot", "sweep"))
    p = clgemm.Plan(queue, 100000, 1, 8).describe()["params"]      # dot: 2 float4s a row
    assert p["LW"] == 2 and p["RW"] == min(dot["RW"] * dot["LW"] // 2, limit // 2)
    p = clgemm.Plan(queue, 1, 1, 100000).describe()["params"]      # sweep: one column
    assert p["CV"] == 1 and p["LANES"] == min(sweep["LANES"] * sweep["CV"], limit)
    plan = clgemm.Plan(queue, 1, 4096, 64)
    p = plan.describe()["params"]                                   # wide: as the defaults
    assert p == sweep
    p["CV"], plan.describe()["splits"] = -1, -1      # the caller's copy, not the plan's
    assert plan.describe()["params"] == sweep == plan.params and plan.describe()["splits"] != -1


def test_matvec_forms():
    """Which way the vector runs through the matrix's memory, for each case of gemm()."""
    assert matvec.form(1, False) == "sweep" and matvec.form(1, True) == "dot"
    assert matvec.form(5, False) == "dot" and matvec.form(5, True) == "sweep"


# ---------------------------------------------------------------- tuning the two forms

def test_a_tuned_matvec_entry_is_what_gemm_launches(queue, rng):
    """`tune` of a matrix-vector kernel records its winner under the form's registry key;
    gemm() then builds the product of that form from it (the other form keeps its
    defaults), and GEMM shapes plan as before with such entries in the database."""
    from clgemm.tune import tune
    res = tune("matvec-sweep", 1, 300, 700, strategy="random", budget=3, workers=1, seed=0)
    assert res.best is not None and res.kernel == "matvec-sweep"
    assert res.references["defaults"]["params"] == kernels.MATVEC["matvec-sweep"].defaults
    entry = db.entries_for(queue.device)["matvec-sweep"]["1x300x700"]
    assert entry["params"] == res.best["params"]
    d = clgemm.Plan(queue, 1, 300, 700).describe()
    assert (d["params_source"], d["tuned_at"], d["tuned_kernel"]) == ("tuned", "1x300x700", "matvec-sweep")
    assert d["params"] == res.best["params"]
    assert clgemm.Plan(queue, 300, 1, 700).describe()["params_source"] == "defaults"
    a, b = rand(rng, 1, 700), rand(rng, 700, 300)
    assert close(clgemm.gemm(queue, a, b), a, b, 700)
    a, b = rand(rng, 33, 20), rand(rng, 20, 17)
    assert close(clgemm.gemm(queue, a, b), a, b, 20)


def test_a_new_matvec_entry_takes_effect_in_a_cached_gemm(queue, rng):
    """gemm()'s cached plan of a matrix-vector product gives way to one built from a new
    tuning database entry, as a GEMM plan does."""
    a, b = rand(rng, 1, 64), rand(rng, 64, 96)
    clgemm.gemm(queue, a, b)
    clgemm.gemm(queue, a, b)
    assert clgemm.cache_info()["hits"] == 1
    held = clgemm.Plan(queue, 1, 96, 64)
    tuned = dict(CV=8, LANES=4, UNROLL=2)
    db.record_best(queue.device, "matvec-sweep", 1, 96, 64, tuned, 1.0)
    got = clgemm.gemm(queue, a, b)
    assert clgemm.cache_info()["misses"] == 2 and close(got, a, b, 64)
    from clgemm.cache import plans
    assert [p.describe()["params"] for p in plans.values()][-1] == tuned
    # a Plan's parameters are fixed when it is made, the matrix-vector ones too
    assert held.describe()["params_source"] == "defaults" and close(held(a, b), a, b, 64)
    # B stored N x K (trans_b) runs the dot over it, found by the dot's own shape (n, 1, k)
    db.record_best(queue.device, "matvec-dot", 96, 1, 64, dict(LW=4, RW=2, UNROLL=1), 1.0)
    assert matvec.bases(queue.device, (1, 96, 64))["dot"] == \
        matvec.Base(dict(LW=4, RW=2, UNROLL=1), "tuned", (96, 1, 64), None)
    assert matvec.bases(queue.device, (1, 96, 64))["sweep"].params == tuned
    bt = np.ascontiguousarray(b.T)
    assert close(clgemm.gemm(queue, a, bt, trans_b=True), a, b, 64)


def test_a_matvec_entry_beyond_the_device_is_passed_over(queue, rng):
    """An entry whose work-group the device cannot run (a hand-edited database, another
    device's) leaves the product on the form's defaults."""
    big = dict(CV=256, LANES=32, UNROLL=8)
    assert kernels.MATVEC["matvec-sweep"].violations(big, queue.device)
    db.record_best(queue.device, "matvec-sweep", 1, 96, 64, big, 1.0)
    d = clgemm.Plan(queue, 1, 96, 64).describe()
    assert d["params_source"] == "defaults"
    a, b = rand(rng, 1, 64), rand(rng, 64, 96)
    assert close(clgemm.gemm(queue, a, b), a, b, 64)


def test_matvec_kernels_are_tuned_only_at_their_form(queue):
    """The sweep is tuned where m = 1, the dot where n = 1; elsewhere the tune stops before
    any worker starts, with an error naming the form, and the command line says so."""
    from click.testing import CliRunner

    from clgemm.cli import main
    from clgemm.tune import tune
    with pytest.raises(ValueError, match="matvec-dot.*n = 1.*m = 1, n = 5"):
        tune("matvec-dot", 1, 5, 7, budget=1, workers=1)
    r = CliRunner().invoke(main, ["tune", "--kernel", "matvec-sweep", "--m", "3", "--n", "5",
                                  "--k", "7"])
    assert r.exit_code == 2 and "where m = 1" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["tune", "--kernel", "matvec", "--m", "1"])
    assert r.exit_code == 2 and "warpgroup-mma), matvec-sweep, matvec-dot" in r.output
    r = CliRunner().invoke(main, ["run", "--kernel", "matvec-dot", "--m", "3", "--n", "2"])
    assert r.exit_code == 2 and "where n = 1 and m > 1" in r.output and "m = 3, n = 2" in r.output
    # m = n = 1 takes the sweep: a tune of the dot there is refused before it starts, as
    # the run is, instead of recording every configuration as a compile error
    with pytest.raises(ValueError, match="matvec-dot.*m = 1 takes the sweep.*m = 1, n = 1"):
        tune("matvec-dot", 1, 1, 97, budget=1, workers=1)
    tune("matvec-sweep", 1, 1, 97, budget=1, workers=1)


def test_the_matvec_evaluator_fails_what_is_wrong(queue):
    """The tuner's check of a matrix-vector configuration can fail: at the odd shape of its
    form, and at the target shape after the timed runs."""
    from clgemm.evaluate import MatvecEvaluator
    params = kernels.MATVEC["matvec-dot"].defaults
    ev = MatvecEvaluator(queue, "matvec-dot", 77, 1, 130, 2)
    run = ev.compile(params)
    assert ev.measure(run)["status"] == "ok"
    a, b, c, ref, host = ev.target
    ev.target = (a, b, c, ref * (1 + 1e-3), host)
    assert ev.measure(run) == {"status": "wrong", "rel_error": pytest.approx(1e-3, rel=0.01),
                               "checked": "target shape"}

    class OffByOne(MatvecEvaluator):
        def _operands_at(self, shape):
            a, b, c, ref, host = super()._operands_at(shape)
            return a, b, c, ref + (shape != self.shape), host
    ev = OffByOne(queue, "matvec-dot", 77, 1, 130, 2)
    assert ev.measure(ev.compile(params))["checked"] == "fresh data at 133x1x262"


@pytest.mark.parametrize("key", list(kernels.MATVEC))
def test_matvec_corners_of_the_tuned_space(queue, rng, key):
    """The tuner may pick any point of a form's space: each corner that the device can run
    (every parameter at the least or the most of its space) is correct at odd shapes of the
    form, rows as wide as a float4 multiple or not, depth sliced or not."""
    import itertools

    from clgemm.choice import facts
    kern, form = kernels.MATVEC[key], matvec.form_of(key)
    corners = [dict(zip([p.name for p in kern.params], values)) for values in
               itertools.product(*[(min(p.space), max(p.space)) for p in kern.params])]
    corners = [p for p in corners if not kern.violations(p, queue.device)]
    assert len(corners) >= 6
    shapes = [(1, 37, 300), (1, 64, 1000)] if form == "sweep" else [(37, 1, 300), (5, 1, 1003)]
    f = facts(queue.device)
    sliced = set()
    for p in corners:
        for m, n, k in shapes:
            a, b = rand(rng, m, k), rand(rng, k, n)
            c = cla.empty(queue, (m, n), np.float32)
            c.fill(np.float32(np.nan))
            prep = matvec.prepare(queue, cla.to_device(queue, a), cla.to_device(queue, b), c,
                                  1.0, 0.0, f, bases={form: matvec.Base(p)})
            prep.launch()
            assert close(c.get(), a, b, k), (p, (m, n, k), prep.splits)
            sliced.add(prep.splits > 1)
    assert sliced == {False, True}


def test_clgemm_run_runs_a_matrix_vector_kernel(queue):
    """`clgemm run --kernel matvec-sweep|matvec-dot` builds the form as gemm() would (from
    its tuned entry or defaults, --param over them), checks it against float64 and reports
    its bandwidth; a transposed operand, split-K or padding is refused by name."""
    import json as json_mod

    from click.testing import CliRunner

    from clgemm.cli import main
    db.record_best(queue.device, "matvec-sweep", 1, 300, 700, dict(CV=16, LANES=4, UNROLL=2), 1.0)
    runner = CliRunner()
    r = runner.invoke(main, ["run", "--kernel", "matvec-sweep", "--m", "1", "--n", "301", "--k",
                             "1100", "--beta", "0.5", "--json"])
    out = json_mod.loads(r.output)
    assert r.exit_code == 0 and out["verified"] and out["gbps"] > 0
    assert (out["params"], out["params_source"], out["tuned_at"]) == \
        (dict(CV=16, LANES=4, UNROLL=2), "tuned", "1x300x700")
    r = runner.invoke(main, ["run", "--kernel", "matvec-dot", "--m", "77", "--n", "1", "--k",
                             "1000", "--param", "LW=4"])
    assert r.exit_code == 0 and "check    PASS" in r.output and "GB/s" in r.output
    assert "LW=4 RW=8 UNROLL=8  [registry defaults, some as given]" in r.output
    for extra, named in ((["--trans-a"], "row-major operands"), (["--split-k", "2"], "split_k"),
                         (["--param", "CV=8"], "has no parameter 'CV'")):
        r = runner.invoke(main, ["run", "--kernel", "matvec-dot", "--n", "1", "--size", "64"] + extra)
        assert r.exit_code == 2 and named in r.output and "Traceback" not in r.output, extra


def test_recorded_matrix_vector_products_are_tuned_as_their_form(queue, rng, monkeypatch):
    """With CLGEMM_RECORD_SHAPES=1, gemm() records a product of one row or column as the
    form its matrix's order takes, at that form's shape, and `clgemm tune --recorded` tunes
    the form there; the entry is then the one that product is built from."""
    import json as json_mod

    from click.testing import CliRunner

    from clgemm import record
    from clgemm.cli import main
    monkeypatch.setattr(record, "_enabled", True)
    monkeypatch.setattr(record, "_noted", set())
    b = rand(rng, 300, 96)                                   # K x N
    clgemm.gemm(queue, rand(rng, 1, 300), b)                 # the vector down B's rows
    clgemm.gemm(queue, rand(rng, 1, 300), np.ascontiguousarray(b.T), trans_b=True)  # along them
    clgemm.gemm(queue, rand(rng, 300, 96), np.asfortranarray(rand(rng, 96, 1)))   # n = 1: dot
    clgemm.gemm(queue, np.asfortranarray(rand(rng, 300, 96)), rand(rng, 96, 1))   # A.T stored: sweep
    assert record.recorded(queue.device) == [("matvec-sweep", 1, 96, 300), ("matvec-dot", 96, 1, 300),
                                             ("matvec-dot", 300, 1, 96), ("matvec-sweep", 1, 300, 96)]
    r = CliRunner().invoke(main, ["tune", "--recorded", "--kernel", "matvec-dot", "--budget", "2",
                                  "--workers", "1", "--json"])
    assert r.exit_code == 0, r.output
    done = [(s["kernel"], s["m"], s["n"], s["k"]) for s in map(json_mod.loads, r.output.strip().splitlines())]
    assert done == [("matvec-dot", 96, 1, 300), ("matvec-dot", 300, 1, 96)]
    assert clgemm.Plan(queue, 300, 1, 96).describe()["tuned_at"] == "300x1x96"


def test_matvec_slices_from_a_tuned_count():
    """A tuned count of slices is taken at the launch it was timed at; elsewhere the power
    of two nearest the same total of work-groups, slices no thinner than the tuned ones or
    matvec_min_depth (256 by default)."""
    f = thresholds.Facts(100)
    tuned = (16, 4096, 8)                 # 16 groups a slice, 4096 deep, 8 slices
    assert heuristics.matvec_slices(16, 4096, f, tuned) == 8
    assert heuristics.matvec_slices(32, 4096, f, tuned) == 4       # same 128 groups
    assert heuristics.matvec_slices(4, 8192, f, tuned) == 32
    assert heuristics.matvec_slices(4, 1000, f, tuned) == 2        # 256 deep at the least
    assert heuristics.matvec_slices(1, 1 << 20, f, tuned) == 64    # at most 64
    assert heuristics.matvec_slices(256, 4096, f, tuned) == 1


def test_a_matvec_tune_times_slice_counts_and_gemm_takes_its_count(queue, rng):
    """The split stage times the finalists at several slice counts of the depth, each
    checked; the winner's count goes into the entry, and a product at the tuned shape is
    cut into that many slices (and still correct)."""
    from clgemm.tune import tune
    res = tune("matvec-dot", 40, 1, 4096, strategy="random", budget=3, workers=1, seed=0)
    counts = {r["splits"] for r in res.split_stage}
    assert {1, 2, 4, 8, 16, 32, 64} <= counts and all(r["status"] == "ok" for r in res.split_stage)
    entry = db.entries_for(queue.device)["matvec-dot"]["40x1x4096"]
    s = entry.get("splits", 1)
    assert s == res.best.get("splits", 1)
    assert clgemm.Plan(queue, 40, 1, 4096).describe()["splits"] == s
    a, b = rand(rng, 40, 4096), rand(rng, 4096, 1)
    assert close(clgemm.gemm(queue, a, b), a, b, 4096)


def test_a_matrix_vector_kernel_named_runs_as_asked(queue, rng):
    """gemm() and Plan take a matrix-vector kernel by name, with parameters and a count of
    slices, where operands of its form are given; elsewhere an error names what is wrong."""
    a, b = rand(rng, 1, 300), rand(rng, 300, 70)
    got = clgemm.gemm(queue, a, b, kernel="matvec-sweep", params={"CV": 8, "UNROLL": 2}, split_k=3)
    assert close(got, a, b, 300)
    p = clgemm.Plan(queue, 1, 70, 300, kernel="matvec-sweep", params={"CV": 8}, split_k=3)
    d = p.describe()
    assert (d["kernel"], d["params"]["CV"], d["params_source"], d["splits"]) == \
        ("matvec-sweep", 8, "defaults+given", 3)
    bt = np.ascontiguousarray(b.T)                 # B stored N x K: the dot runs along it
    got = clgemm.gemm(queue, a, bt, kernel="matvec-dot", params={"LW": 4}, trans_b=True)
    assert close(got, a, b, 300)
    assert clgemm.Plan(queue, 1, 70, 300, kernel="matvec-dot").describe()["kernel"] == "matvec-dot"
    with pytest.raises(ValueError, match="kernel matvec-dot was named, but these operands take "
                                         "matvec-sweep"):
        clgemm.gemm(queue, a, b, kernel="matvec-dot")
    with pytest.raises(ValueError, match="needs m = 1 or n = 1, not 2x70x300"):
        clgemm.gemm(queue, rand(rng, 2, 300), b, kernel="matvec-sweep")
    with pytest.raises(ValueError, match="has no parameter 'LW'"):
        clgemm.gemm(queue, a, b, kernel="matvec-sweep", params={"LW": 4})
    with pytest.raises(ValueError, match="CV=3 is outside"):
        clgemm.Plan(queue, 1, 70, 300, kernel="matvec-sweep", params={"CV": 3})
    for bad in ("x", None, float("nan"), 0, -5, 2.7, True, "3"):
        with pytest.raises(ValueError, match=f"split_k must be \"auto\" or an integer >= 1, "
                                             f"not {re.escape(repr(bad))}"):
            clgemm.gemm(queue, a, b, kernel="matvec-sweep", split_k=bad)
    with pytest.raises(ValueError, match="kernel matvec-sweep takes no pad"):
        clgemm.Plan(queue, 1, 70, 300, kernel="matvec-sweep", pad="yes")


def test_a_gemm_kernel_tuned_where_gemm_runs_matvec_says_so(queue):
    """A tune of kernel 5 at m = 1 still runs (its entry serves calls naming kernel 5), and
    its note says that gemm() with no kernel named runs the matrix-vector form there."""
    from clgemm.tune import tune
    res = tune("5", 1, 64, 64, strategy="random", budget=1, workers=1, update_db=False)
    assert res.best is not None
    assert "gemm() with no kernel named runs matvec-sweep at 1x64x64" in res.note
    res = tune("5", 2, 64, 64, strategy="random", budget=1, workers=1, update_db=False)
    assert "matvec" not in res.note


def test_matvec_defaults_fit_a_device_with_small_work_groups(queue, rng):
    """On a device whose work-groups hold fewer work-items than a form's defaults (256
    against 512), a kernel named without parameters, like gemm()'s own choice, fits them to
    the limit; parameters named beyond it are refused."""

    class Small:
        """The test's device, with a work-group limit of 256."""
        max_work_group_size = 256
        max_work_item_sizes = [256, 256, 256]

        def __getattr__(self, name):
            return getattr(queue.device, name)
    dev = Small()
    assert kernels.MATVEC["matvec-sweep"].violations(kernels.MATVEC["matvec-sweep"].defaults, dev)
    base = matvec.bases(dev, (1, 4096, 300), "matvec-sweep")["sweep"]
    launch, _ = matvec.planned(dev, (1, 4096, 300), thresholds.Facts(2), {"sweep": base})
    assert launch.local_size[0] * launch.local_size[1] <= 256
    with pytest.raises(ValueError, match="exceeds the device maximum 256"):
        matvec.bases(dev, (1, 4096, 300), "matvec-sweep", {"CV": 128})


def test_one_dot_product_is_recorded_as_the_sweep_it_can_be_tuned_as(queue):
    """m = n = 1 with op(B) lying transposed runs the dot over one row, which no tune can
    measure (row-major 1 x 1 operands take the sweep): it is recorded as the sweep at
    1 x 1 x K, not as a dot shape that `tune --recorded` skips."""
    k = 16
    big = cla.to_device(queue, np.ones((3, k), np.float32))
    a = np.ones((1, k), np.float32)
    assert matvec.tuning_job(a, big[0:1, :].T) == ("matvec-sweep", (1, 1, k))
    assert matvec.tuning_job(a, np.ones((k, 1), np.float32)) == ("matvec-sweep", (1, 1, k))
    assert matvec.tuning_job(np.ones((5, k), np.float32), np.ones((k, 1), np.float32)) == \
        ("matvec-dot", (5, 1, k))


def test_a_matvec_tune_checks_its_finalists_and_a_resumed_one_records_its_winner(queue):
    """The finalists of a matrix-vector tune are checked again and re-measured, as a GEMM
    kernel's are: the check needs the evaluator's own fresh_check (without it every matvec
    re-measure failed and a tune whose records were all resumed recorded nothing)."""
    from clgemm.tune import tune
    opts = dict(strategy="random", budget=3, workers=1, seed=0)
    res = tune("matvec-sweep", 1, 300, 700, **opts)
    assert res.finalists and res.best is not None
    again = tune("matvec-sweep", 1, 300, 700, **opts)
    assert again.evaluated_now == 0 and again.finalists and again.best is not None
    assert db.lookup(queue.device, "matvec-sweep", 1, 300, 700)[1] == again.best["params"]
