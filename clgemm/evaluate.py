"""What the tuner's worker processes run: compile a configuration, check it against
float64 on fresh data, time it at the target shape as gemm() would launch it on dense
device operands (rows of k and n floats, as `clgemm bench` makes them) into a fresh
output, and the
finalists' interleaved re-measure and split-K stage. Tests substitute subclasses to plant
crashes, hangs and timings."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import entries, matvec, operands, timing, verify
from .build import BuildError

CHECK_SHAPE = (133, 261, 67)   # odd: partial tiles of every size and vector width
# the split stage times each finalist with slices of k up to this many work-groups per
# compute unit (and at most SPLIT_STAGE_MAX slices)
SPLIT_STAGE_FILL = 16
SPLIT_STAGE_MAX = entries.MAX_SPLITS


class Evaluator:
    """Compiles, verifies and times configurations of one kernel at one shape. Lives in a
    worker process; tests substitute a subclass to plant crashes and hangs."""

    def __init__(self, queue: cl.CommandQueue, kernel: str, m: int, n: int, k: int, repeat: int):
        self.queue, self.kernel, self.shape, self.repeat = queue, kernel, (m, n, k), repeat
        rng = np.random.default_rng()
        self.a = verify.random_matrix(rng, m, k)
        self.b = verify.random_matrix(rng, k, n)
        # the timed output is checked too, on rows that cross the first and last tiles
        self.rows = verify.sample_rows(rng, m, 14)
        self.a_rows = self.a[self.rows]
        self.ref = verify.reference(self.a_rows, self.b)
        self.bound = verify.allowed(k, self.a_rows, self.b)   # once, for every configuration
        self._mats: dict[tuple, tuple] = {}
        # one split-K workspace for every plan: the split stage holds dozens at once, and
        # their launches on this queue never overlap
        from .gemm import Workspace
        self._work = Workspace(queue.context)

    def compile(self, params: Mapping[str, int], split_k: int | str = "auto"):
        """The plan with the program that the target shape launches, built now: this is
        the phase the worker pool runs in parallel, ahead of the device."""
        from .gemm import GemmPlan
        plan = GemmPlan(self.queue, self.kernel, params, split_k=split_k, workspace=self._work)
        launched, kmajor, floats = self.target_launch(plan)
        plan.compiled(*launched, kmajor, floats=floats,
                      c_unaligned=self.c_unaligned(plan, launched, floats))
        return plan

    def split_counts(self, params: Mapping[str, int]) -> list[int]:
        """The slices of k the split stage times: 1, the count gemm() picks unaided, and
        powers of two while the work-groups number at most SPLIT_STAGE_FILL per compute unit
        and the partial sums fit on the device; each as launched (every slice holds a tile
        of k), without repeats. One count for a kernel without split-K."""
        plan, launched, floats = self._unaided(params)
        groups, _ = plan.tiles(*launched)
        cap = SPLIT_STAGE_FILL * self.queue.device.max_compute_units
        counts = {1, plan.splits(*launched, floats=floats)}
        s = 2
        while s <= SPLIT_STAGE_MAX and groups * s <= cap:
            counts.add(plan.splits(*launched, s))
            s *= 2
        m, n, _ = self.shape
        return [s for s in sorted(counts) if plan.workspace_fits(s, m, n)]

    def _unaided(self, params: Mapping[str, int]):
        """(plan, launched shape, floats) of the target with `params` and no tuned count
        (nothing built)."""
        from .gemm import GemmPlan
        plan = GemmPlan(self.queue, self.kernel, params)
        launched, _, floats = self.target_launch(plan)
        return plan, launched, floats

    def unaided_count(self, params: Mapping[str, int]) -> int:
        """The slices of k gemm() cuts the target into with `params` and no tuned count."""
        plan, launched, floats = self._unaided(params)
        return plan.splits(*launched, floats=floats)

    def split_stage(self, finalists: list[Mapping[str, int]],
                    alive: Callable[[], None] = lambda: None) -> dict:
        """Each configuration with each of its `split_counts`, checked (`measure`), then all
        the correct pairs timed in the same interleaved rounds, so that the margin compares
        timings taken side by side. A configuration with one count is timed with the rest
        (marked `only_count`); no records where none has two; the count gemm() takes
        unaided is marked `unaided` (the tuner's references launch so). A pair that raises is
        recorded as failed and the others go on. `alive` is called after each step, so
        that the parent's deadline counts from the last one."""
        counts = [self.split_counts(p) for p in finalists]
        if all(len(c) < 2 for c in counts):
            return {"records": []}
        plans, records = [], []
        for params, cs in zip(finalists, counts):
            unaided = self.unaided_count(params)
            for s in cs:
                try:
                    plan = self.compile(params, split_k=s)
                    rec = self.measure(plan)
                except Exception as e:    # noqa: BLE001 - one pair's failure, recorded
                    plan, rec = None, {"status": "failed", "error": short(e)}
                rec.pop("ms", None)
                records.append({"params": dict(params), "splits": s, **rec,
                                **({"only_count": True} if len(cs) == 1 else {}),
                                **({"unaided": True} if s == unaided else {})})
                if rec["status"] == "ok":
                    plans.append((len(records) - 1, plan))
                alive()
        ms = self.interleaved([p for _, p in plans], alive=alive)
        for (i, _), times in zip(plans, ms):
            records[i]["ms"] = times
        return {"records": records}

    def remeasure(self, finalists: list[Mapping[str, int]],
                  alive: Callable[[], None] = lambda: None) -> dict:
        """The finalists compiled again, each checked on fresh data, and the correct ones
        timed in the same interleaved rounds; `alive` is called after each compile and
        each round, as in `split_stage`. The check is what stands between a log and the
        database: a finalist may be a record of a log that another build wrote (resumed
        "ok", never compiled by this one), which this build may compute wrong or not
        build at all; such a finalist is left out, and the others are timed.
        {"ms": a list of timings per finalist (None for one left out), "wrong": [[index,
        relative error], ...], "failed": [[index, status, error], ...]}."""
        plans, wrong, failed = [], [], []
        for i, params in enumerate(finalists):
            try:
                plan = self.compile(params)
                err, ok, _ = self.fresh_check(plan)
            except Exception as e:    # noqa: BLE001 - this finalist's failure, recorded
                failed.append([i, "compile_error" if isinstance(e, BuildError) else
                               "launch_error", short(e)])
            else:
                if ok:
                    plans.append((i, plan))
                else:
                    wrong.append([i, verify.json_safe(err)])
            alive()
        ms: list = [None] * len(finalists)
        for (i, _), times in zip(plans, self.interleaved([p for _, p in plans], alive=alive)):
            ms[i] = times
        return {"ms": ms, "wrong": wrong, "failed": failed}

    def interleaved(self, plans: list, rounds: int = 5,
                    alive: Callable[[], None] = lambda: None) -> list[list[float]]:
        """Timings of each plan over `rounds` rounds that take them in turn: near-ties
        reorder under noise, and drift hits them alike."""
        ms: list[list[float]] = [[] for _ in plans]
        for _ in range(rounds):
            for i, plan in enumerate(plans):
                ms[i].extend(self.time(plan, max(2, self.repeat // 2)).ms)
            alive()
        return ms

    def layout(self, plan) -> tuple[tuple[int, int, int], bool]:
        """How gemm() launches the target with this plan: the shape the launch covers
        (`GemmPlan.launched`) and whether A is read K-major (`kmajor_a`)."""
        return self.target_launch(plan)[:2]

    def target_launch(self, plan) -> tuple[tuple[int, int, int], bool, bool]:
        """layout() and floats() together, each decided once: the methods that need both
        ask this."""
        floats = self.floats(plan)
        return plan.launched(*self.shape, floats), plan.kmajor_a(*self.shape), floats

    def floats(self, plan) -> bool:
        """Whether gemm() reads the target's dense device operands where they lie, a float
        at a time (the AB_UNALIGNED build, heuristics.reads_floats): where their rows are
        not whole vectors (GemmPlan.dense_copied) and the product is one that build takes.
        Then that build is the one checked and timed, on operands with rows of k and n
        floats, not the aligned copies' build, which such a caller never runs. (Host
        operands gemm() lays out aligned: at such a shape their launch differs from the
        one tuned.)"""
        copied = plan.dense_copied(*self.shape)
        return any(copied) and plan.reads_floats(*self.shape, copied)

    def c_unaligned(self, plan, launched: tuple[int, int, int], floats: bool) -> bool:
        """Whether the launch writes C with rows not whole vectors apart (the C_UNALIGNED
        build): gemm()'s fresh output has rows of n floats, as `clgemm bench` times it."""
        return plan.c_unaligned(plan.splits(*launched, floats=floats), self.shape[1])

    def check_shape(self, plan) -> tuple[int, int, int]:
        """Odd, so that every partial-tile path runs; but when the target shape takes a
        build without bounds checks (EXACT, CLAMP), a shape that takes the same build (whole
        tiles; k whole tiles with the target's remainders of m and n, and of k where it is
        whole vectors only), so that build is the one checked and no second compile is
        needed."""
        launched, _, floats = self.target_launch(plan)
        if plan.loads(*launched, floats) in ("checked", "floats"):
            return CHECK_SHAPE
        tm, tn = plan.kernel.geometry.tile(plan.params)
        tk = plan.kernel.geometry.depth(plan.params)
        m, n, k = launched
        return (2 * tm + m % tm, 3 * tn + n % tn, 5 * tk + k % tk)

    def measure(self, plan, cutoff_ms: float | None = None) -> dict:
        """Check on fresh random data at an odd shape, then time at the target shape and
        check that output too (both poisoned with NaN first). A configuration whose first
        timed run is slower than `cutoff_ms` is not timed again: it cannot be a finalist,
        and at large shapes the slow ones would otherwise hold the device most of the time."""
        err, ok, shape = self.fresh_check(plan)
        if not ok:
            return {"status": "wrong", "rel_error": verify.json_safe(err),
                    "checked": "fresh data at {}x{}x{}".format(*shape)}
        cm = self._operands(plan)[2]
        operands.poison(self.queue, cm)
        t = self.time(plan, cutoff_ms=cutoff_ms)
        out = operands.rows_to_host(self.queue, cm, self.rows)
        err_t = verify.rel_error(out, self.ref)
        if not verify.passes(out, self.ref, self.shape[2], self.a_rows, self.b,
                             bound=self.bound):
            return {"status": "wrong", "rel_error": verify.json_safe(err_t), "checked": "target shape"}
        return _ok(self.shape, max(err, err_t), t)

    def fresh_check(self, plan) -> tuple[float, bool, tuple[int, int, int]]:
        """(relative error, whether it passes: verify.passes, the shape) on fresh random
        data at `check_shape`, launched as the target is (_check_fresh)."""
        shape = self.check_shape(plan)
        launched, kmajor, floats = self.target_launch(plan)
        splits = plan.splits(*launched, floats=floats)
        stages = plan.stages_c(*launched)
        return (*self._check_fresh(plan, shape, splits, kmajor, plan.columns_first(*launched),
                                   plan.groups(*launched, splits, floats), floats,
                                   self.c_unaligned(plan, launched, floats), stages), shape)

    def _check_fresh(self, plan, shape: tuple[int, int, int], splits: int, kmajor: bool,
                     columns_first: bool, groups: int = 1, floats: bool = False,
                     c_unaligned: bool = False,
                     stages: bool | None = None) -> tuple[float, bool]:
        """The error at `shape`, and whether it passes (verify.passes), cut into as many
        slices of k as the target is (at most one per tile of k), with A laid out as the
        target's is, its tiles in the target's order and its slices within each group, with
        `floats` A and B read a float at a time from rows of k and n floats, and with
        `c_unaligned` C's rows not whole vectors apart (n floats, or n + 1 where n is whole
        vectors), staged as the target's are (`stages`), so that the build checked is the
        one timed (SPLIT_K, A_KMAJOR, COLUMNS_FIRST, KG, AB_UNALIGNED, C_UNALIGNED, C_ROWS)."""
        m, n, k = shape
        rng = np.random.default_rng()
        a, b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
        q, al = self.queue, plan.align
        ldc = (n + (n % al == 0)) if c_unaligned else operands.rounded(n, al)
        cm = operands.poison(q, operands.empty(q, m, n, ldc))
        am = operands.raw(q, np.ascontiguousarray(a.T) if kmajor else a,
                          1 if floats and not kmajor else al)
        bm = operands.raw(q, b, 1 if floats else al)
        cl.wait_for_events(plan.bind(am, bm, cm, a_kmajor=kmajor, split_k=splits,
                                     columns_first=columns_first, groups=groups,
                                     floats=floats, stages=stages)())
        out, ref = operands.to_host(q, cm), verify.reference(a, b)
        return verify.rel_error(out, ref), verify.passes(out, ref, k, a, b)

    def _operands(self, plan):
        """A, B and C on the device as the target's launch takes them: A and B zero-padded
        to whole tiles when gemm() pads (the copies that pad them are not timed), A K x M
        when it is read K-major (`kmajor_a`), and that flag; kept per layout. Their rows are
        whole vectors, as the copies gemm() makes of unaligned operands have them, except
        where gemm() reads the operands where they lie a float at a time (`floats`): then
        rows of k and n floats, as a caller's dense device matrices. C has rows of n floats,
        as gemm()'s fresh output (C_UNALIGNED where n is not whole vectors)."""
        (mp, np_, kp), kmajor, floats = self.target_launch(plan)
        key = (plan.align, kmajor, mp, np_, kp, floats)
        if key not in self._mats:
            m, n, _ = self.shape
            q, al = self.queue, plan.align
            a, ashape = (np.ascontiguousarray(self.a.T), (kp, mp)) if kmajor else (self.a, (mp, kp))
            self._mats[key] = (operands.raw(q, a, 1 if floats and not kmajor else al, ashape),
                               operands.raw(q, self.b, 1 if floats else al, (kp, np_)),
                               operands.empty(q, m, n, n), kmajor, floats)
        return self._mats[key]

    def time(self, plan, repeat: int | None = None, cutoff_ms: float | None = None) -> timing.Timing:
        am, bm, cm, kmajor, floats = self._operands(plan)
        return _profile(plan.bind(am, bm, cm, a_kmajor=kmajor, floats=floats),
                        repeat or self.repeat, cutoff_ms)


def _ok(shape: tuple[int, int, int], err: float, t: timing.Timing) -> dict:
    return {"status": "ok", "rel_error": err, "ms_median": t.median, "ms_min": t.min,
            "ms_max": t.max, "runs": len(t.ms), "ms": list(t.ms),
            "gflops": timing.gflops(*shape, t.median)}


def _profile(launch, repeat: int, cutoff_ms: float | None) -> timing.Timing:
    """`repeat` timed launches, or one where that one is slower than `cutoff_ms`."""
    if cutoff_ms is None or repeat == 1:
        return timing.profile(launch, repeat=repeat, warmup=1)
    first = timing.profile(launch, repeat=1, warmup=1)
    if first.median > cutoff_ms:
        return first
    return timing.Timing(first.ms + timing.profile(launch, repeat=repeat - 1, warmup=0).ms)


class MatvecEvaluator(Evaluator):
    """A matrix-vector kernel (kernels.MATVEC) at a shape of its form with row-major
    operands, laid out as gemm() lays the product out (matvec.prepare: the work-group fitted
    to narrow rows, the depth sliced by heuristics.matvec_slices), checked in full against
    float64 at an odd shape of its form and at the target, and timed from its first
    launch's start to its last one's end. The search runs each with the slices of the
    depth gemm() would take; the split stage times the finalists at other counts too."""

    def __init__(self, queue: cl.CommandQueue, kernel: str, m: int, n: int, k: int, repeat: int):
        matvec.check_form(kernel, m, n)
        self.queue, self.kernel, self.shape, self.repeat = queue, kernel, (m, n, k), repeat
        self.target = self._operands_at(self.shape)

    def _operands_at(self, shape: tuple[int, int, int]) -> tuple:
        """(A, B, C on the device, float64 reference, A and B on the host) on fresh random
        data."""
        m, n, k = shape
        rng = np.random.default_rng()
        a, b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
        q = self.queue
        return (cla.to_device(q, a), cla.to_device(q, b), cla.empty(q, (m, n), np.float32),
                verify.reference(a, b), (a, b))

    def compile(self, params: Mapping[str, int], split_k: int | str = "auto") -> _MatvecRun:
        """The target's launches (matvec.prepare, which builds the program) on its operands,
        the depth in `split_k` slices, or as many as gemm() would cut it into ("auto")."""
        slices = None if split_k == "auto" else int(split_k)
        return _MatvecRun(dict(params), slices, self._prepared(params, self.target, slices))

    def _prepared(self, params: Mapping[str, int], ops: tuple, slices: int | None):
        from .choice import facts
        a, b, c = ops[:3]
        return matvec.prepare(self.queue, a, b, c, 1.0, 0.0, facts(self.queue.device),
                              bases={matvec.form_of(self.kernel): matvec.Base(dict(params))},
                              slices=slices)

    def _own(self, params: Mapping[str, int]) -> matvec.Launch:
        """The target's launch as gemm() plans it with `params` and no tuned count (nothing
        built)."""
        from .choice import facts
        dev = self.queue.device
        return matvec.planned(dev, self.shape, facts(dev),
                              {matvec.form_of(self.kernel): matvec.Base(dict(params))})[0]

    def unaided_count(self, params: Mapping[str, int]) -> int:
        """The slices of the depth gemm() takes with `params` and no tuned count."""
        return self._own(params).slices

    def split_counts(self, params: Mapping[str, int]) -> list[int]:
        """1, gemm()'s own count, and powers of two up to entries.MAX_SPLITS whose slices are
        at least 16 rows (sweep) or vectors (dot) deep, from the target's planned launch."""
        own = self._own(params)
        counts = {1, own.slices}
        s = 2
        while s <= SPLIT_STAGE_MAX and own.depth // s >= 16:
            counts.add(s)
            s *= 2
        return sorted(counts)

    def check_shape(self, plan) -> tuple[int, int, int]:
        """An odd shape of the kernel's form whose rows are as wide modulo 4 as the
        target's, so that the same float4 or float build is checked."""
        m, n, k = self.shape
        return (1, 260 + n % 4, 67) if m == 1 else (133, 1, 260 + k % 4)

    def fresh_check(self, plan) -> tuple[float, bool, tuple[int, int, int]]:
        """(relative error, whether it passes, the shape) at `check_shape` on fresh random
        data, over an output poisoned with NaN, with the plan's slices of the depth."""
        shape = self.check_shape(plan)
        ops = self._operands_at(shape)
        ops[2].fill(np.float32(np.nan))
        cl.wait_for_events(self._prepared(plan.params, ops, plan.slices).launch())
        return (*self._judged(ops, shape[2]), shape)

    def measure(self, plan, cutoff_ms: float | None = None) -> dict:
        """As Evaluator.measure: checked at an odd shape on fresh data, then timed at the
        target with its output poisoned first and checked in full (verify.passes: a
        target of one row and one column is a single sum, which may cancel)."""
        err, ok, shape = self.fresh_check(plan)
        if not ok:
            return {"status": "wrong", "rel_error": verify.json_safe(err),
                    "checked": "fresh data at {}x{}x{}".format(*shape)}
        self.target[2].fill(np.float32(np.nan))
        t = self.time(plan, cutoff_ms=cutoff_ms)
        err_t, ok = self._judged(self.target, self.shape[2])
        if not ok:
            return {"status": "wrong", "rel_error": verify.json_safe(err_t), "checked": "target shape"}
        return _ok(self.shape, max(err, err_t), t)

    @staticmethod
    def _judged(ops: tuple, k: int) -> tuple[float, bool]:
        out, ref, (a, b) = ops[2].get(), ops[3], ops[4]
        return verify.rel_error(out, ref), verify.passes(out, ref, k, a, b)

    def time(self, plan, repeat: int | None = None, cutoff_ms: float | None = None) -> timing.Timing:
        return _profile(plan.launch, repeat or self.repeat, cutoff_ms)


@dataclass(frozen=True)
class _MatvecRun:
    """A matrix-vector configuration laid out on the target's operands."""
    params: dict
    slices: int | None     # the depth's slices, named by the split stage
    prep: object           # layout.Prepared

    def launch(self) -> list:
        return self.prep.launch()


def short(e: BaseException) -> str:
    """An exception as one line for a record (its type and message, at most 2000 chars)."""
    return (f"{type(e).__name__}: {e}" or traceback.format_exc())[-2000:]
