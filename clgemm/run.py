"""Measured and verified runs: the GEMM that `clgemm run` measures (show.run_lines makes
its text) and the transpose that `clgemm transpose` measures, each returned as a dict."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import device as devmod
from . import build, db, kernels, matvec, operands, timing, verify
from .gemm import GemmPlan, prepare
from .layout import Prepared
from .transpose import TransposePlan

FULL_CHECK_FLOPS = 2 * 2048**3   # above this, the reference covers a sample of rows


def _silent(stage: str, done: int | None = None, total: int | None = None) -> None:
    """The progress report where nobody asked for one."""


def _repeat_for(event: cl.Event, repeat: int | None) -> int:
    """10 timed launches, or fewer (at least 3) when they would take over ~2 s."""
    if repeat is not None:
        return repeat
    one_ms = (event.profile.end - event.profile.start) * 1e-6
    return max(3, min(10, int(2000 / max(one_ms, 1e-3))))


def _device_fields(dev: cl.Device) -> dict:
    return {"device": dev.name.strip(), "platform": dev.platform.name.strip(),
            "driver": dev.driver_version.strip()}


def scalar(x: object, name: str) -> float:
    """alpha or beta for a measured run: the library's own check (operands.scalar, so that
    `clgemm run`, run_gemm() and gemm() refuse the same values with the same message), and
    a finite value, since the run checks its result against float64: gemm() propagates a
    NaN or infinite alpha or beta as BLAS does, but it makes every element of the result
    non-finite, and the check could not tell a right result from a wrong one."""
    v = operands.scalar(x, name)
    if not math.isfinite(v):
        raise ValueError(f"{name}={v!r} is not finite: clgemm run checks its result against "
                         f"float64, and a non-finite {name} makes every element non-finite "
                         f"(gemm() accepts it and propagates it, as BLAS does)")
    if v != 0.0 and abs(v) < F32_TINY:
        raise ValueError(f"{name}={v!r} is below float32's smallest normal number "
                         f"({F32_TINY:.3g}): the kernels would scale by 0 or a subnormal, and "
                         f"the check against float64 would fail a right float32 result")
    return v


F32_TINY = float(np.finfo(np.float32).tiny)


def run_gemm(queue: cl.CommandQueue, m: int, n: int, k: int, *, kernel: object = None,
             params: Mapping[str, object] | None = None, repeat: int | None = None,
             check: bool = True, alpha: float = 1.0, beta: float = 0.0,
             trans_a: bool = False, trans_b: bool = False, seed: int | None = None,
             plan: GemmPlan | None = None, transposed_by: str = "auto",
             pad: str = "auto", split_k: int | str = "auto",
             progress: Progress | None = None) -> dict:
    """Build, warm up, verify and time one GEMM on fresh random data, laid out as gemm()
    lays it out. The operands start on the device, so what is done to them there (device
    transposes, copies into zero-padded whole tiles) is inside the timed launches.

    The output is poisoned with NaN before the checked launch, so an unwritten element
    fails the check. After timing, the last output must equal the first bit for bit
    (the kernels are deterministic; a difference means a race).

    `progress(stage, done, total)` is told each stage as it starts (making the operands,
    compiling, the warm-up, verifying, timing, with done of total timed launches as they
    complete, and the check that the output did not change)."""
    alpha, beta = scalar(alpha, "alpha"), scalar(beta, "beta")
    report = progress or _silent
    if plan is None and kernel is not None and str(kernel).strip() in kernels.MATVEC:
        if split_k != "auto" or pad != "auto" or transposed_by != "auto":
            raise ValueError(f"kernel {kernel} takes neither split_k, pad nor transposed_by: "
                             f"it reads the matrix where it lies, its depth sliced by "
                             f"heuristics.matvec_slices")
        return _run_matvec(queue, m, n, k, str(kernel).strip(), params, repeat, check, alpha,
                           beta, trans_a, trans_b, seed, progress)
    plan = plan or GemmPlan(queue, kernel, params, shape=(m, n, k), transposed_by=transposed_by,
                            pad=pad, split_k=split_k)
    # where the compiler reports registers and local memory (NVIDIA), the build must fit
    # the work-group too: a refusal naming them instead of a failed launch
    if devmod.nvidia_cc(queue.device) is not None:
        report(f"compiling kernel {plan.kernel.key} for the compiler's register report")
    footprint = build.footprint(queue.context, plan.kernel, plan.params)
    if footprint is not None:
        plan.kernel.check(plan.params, queue.device, footprint=footprint)
    operands.check_fits(queue.device, operands.gemm_shapes(m, n, k), host=True)
    rng, ops = _operands(m, n, k, trans_a, trans_b, beta, seed, report)
    opa, opb, c0 = ops
    report(f"compiling kernel {plan.kernel.key} ({plan.kernel.name})")
    prep = prepare(plan, cla.to_device(queue, opa), cla.to_device(queue, opb),
                   None if c0 is None else c0.copy(), alpha, beta)
    result = _measure(queue, prep, ops, alpha, beta, repeat, check, rng, progress)
    result.update(
        kernel=plan.kernel.key, kernel_name=plan.kernel.name, params=dict(plan.params),
        params_source=plan.source, tuned_at=plan.tuned_at, tuned_kernel=plan.tuned_kernel,
        tuned_on=plan.tuned_on,
        m=m, n=n, k=k, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
        transposed_by=plan.transposed_by, read_as_they_lie=list(prep.read), a_kmajor=prep.kmajor,
        columns_first=prep.columns_first, padded=prep.padded, floats=prep.floats, tail=prep.tail,
        peel=prep.peel)
    return result


def _operands(m: int, n: int, k: int, trans_a: bool, trans_b: bool, beta: float,
              seed: int | None, report) -> tuple:
    """(rng, (op(A), op(B), C or None)): fresh random operands on the host."""
    rng = np.random.default_rng(seed)
    report("making random operands")
    a = verify.random_matrix(rng, *((k, m) if trans_a else (m, k)))
    b = verify.random_matrix(rng, *((n, k) if trans_b else (k, n)))
    c0 = verify.random_matrix(rng, m, n) if beta != 0.0 else None
    return rng, ((a.T if trans_a else a), (b.T if trans_b else b), c0)


def _run_matvec(queue: cl.CommandQueue, m: int, n: int, k: int, key: str, params, repeat,
                check: bool, alpha: float, beta: float, trans_a: bool, trans_b: bool,
                seed: int | None, progress: Progress | None) -> dict:
    """run_gemm of a matrix-vector kernel: at a shape of its form with row-major operands,
    as its tune runs it (matvec.check_form), from its tuned entry or defaults and `params`."""
    kern = kernels.get(key, "matvec")
    report = progress or _silent
    if trans_a or trans_b:
        raise ValueError(f"kernel {key} runs on row-major operands (as it is tuned); a "
                         f"transposed operand may take the other form, which gemm() chooses")
    matvec.check_form(key, m, n)
    form = matvec.form_of(key)
    R, L = matvec.rows((m, n, k))[form]
    # the sweep's vector runs down the R rows and gives L outputs; the dot's, the other way
    vector, outputs = (R, L) if form == "sweep" else (L, R)
    base = matvec.bases(queue.device, (m, n, k), key, params or None)[form]
    operands.check_fits(queue.device, operands.gemm_shapes(m, n, k), host=True)
    rng, ops = _operands(m, n, k, False, False, beta, seed, report)
    opa, opb, c0 = ops
    report(f"compiling kernel {key}")
    from .choice import facts
    prep = matvec.prepare(queue, cla.to_device(queue, opa), cla.to_device(queue, opb),
                          None if c0 is None else cla.to_device(queue, c0), alpha, beta,
                          facts(queue.device), bases={form: base})
    result = _measure(queue, prep, ops, alpha, beta, repeat, check, rng, progress)
    result.update(
        kernel=key, kernel_name=kern.name, params=prep.params, params_source=base.source,
        tuned_at=None if base.at is None else db.shape_key(*base.at),
        tuned_kernel=None if base.at is None else key, tuned_on=base.tuned_on, m=m, n=n, k=k,
        alpha=alpha, beta=beta,
        trans_a=False, trans_b=False, transposed_by="kernel", read_as_they_lie=[],
        a_kmajor=False, columns_first=False, padded=False, floats=False, tail=None, peel=None,
        # what bounds it: the matrix read once, the vector, C written and, with beta, read
        gbps=timing.gbps(4 * (R * L + vector + outputs * (2 if beta != 0.0 else 1)),
                         result["ms_median"]))
    return result


def _measure(queue: cl.CommandQueue, prep: Prepared, ops: tuple, alpha: float, beta: float,
             repeat: int | None, check: bool, rng: np.random.Generator,
             progress: Progress | None) -> dict:
    """A laid-out product warmed up, checked against float64 (its output poisoned first) and
    timed by profiling events; then checked to have given the same output again."""
    report = progress or _silent
    opa, opb, c0 = ops
    m, k = opa.shape
    n = opb.shape[1]
    out = prep.out
    if c0 is None:
        operands.poison(queue, out)

    def result_host() -> np.ndarray:
        h = operands.to_host(queue, out)
        return h.T if prep.swap else h

    report("warm-up launch")
    events = prep.launch()          # compiled already; this is the warm-up
    cl.wait_for_events(events)
    repeat = _repeat_for(events[-1], repeat)
    result: dict = {"verified": None, "rel_error": None, "tolerance": None}
    if check:
        first = result_host()
        rows = _rows_to_check(m, n, k, rng)
        report(f"verifying {len(rows)} of {m} rows against float64")
        c_rows = None if c0 is None else c0[rows]
        # alpha and beta as the kernels have them: rounded to float32
        a32, b32 = float(np.float32(alpha)), float(np.float32(beta))
        ref = verify.reference(opa[rows], opb, a32, b32, c_rows)
        err = verify.rel_error(first[rows], ref)
        ok = verify.passes(first[rows], ref, k, opa[rows], opb, a32, b32, c_rows)
        result.update(rel_error=err, tolerance=verify.tolerance(k), verified=ok,
                      rows_checked=len(rows))
        if not ok and np.abs(ref).max() > operands.F32_MAX:
            result["overflows"] = True   # the exact product is beyond float32's range
    report("timing", 0, repeat)
    launch, stop = _counted(prep.launch, lambda done: report("timing", done, repeat)) \
        if progress else (prep.launch, lambda: None)
    t = timing.profile(launch, repeat=repeat, warmup=0)
    stop()
    report("timing", repeat, repeat)
    if check and c0 is None:
        report("checking that the output did not change")
        result["stable"] = bool(np.array_equal(result_host(), first, equal_nan=True))
        result["verified"] = result["verified"] and result["stable"]
    result.update(
        splits=prep.splits, launches=len(events), **_device_fields(queue.device),
        ms_median=t.median, ms_min=t.min, ms_max=t.max, repeat=repeat,
        gflops=timing.gflops(m, n, k, t.median),
    )
    peak = devmod.peak_gflops(queue.device)
    if peak:
        result["peak_fraction"] = result["gflops"] / peak
    return result


Progress = Callable[..., None]   # (stage, done=None, total=None)


def _counted(launch: timing.Launch, done: Callable[[int], None]):
    """`launch`, calling done(count) as each launch it enqueued completes (a profiling event
    callback, so the timed launches are still enqueued back to back), and a call that
    stops the counting once every callback asked for has come (they come on the driver's
    thread after the events were waited for; one still due when Python exits aborted the
    process, `clgemm run` in a terminal: 2026-12-05)."""
    cond, count, asked, live = threading.Condition(), [0], [0], [True]

    def completed(status: int) -> None:
        with cond:
            count[0] += 1
            if live[0]:
                done(count[0])
            cond.notify_all()

    def counted():
        evs = launch()
        try:
            timing.events(evs)[-1].set_callback(cl.command_execution_status.COMPLETE, completed)
        except (cl.Error, AttributeError):   # no callbacks (OpenCL 1.0): no count
            return evs
        with cond:
            asked[0] += 1
        return evs

    def stop() -> int:
        """Mutes done() and waits for the callbacks still due; returns how many came."""
        with cond:
            live[0] = False
            cond.wait_for(lambda: count[0] >= asked[0], timeout=CALLBACK_WAIT_S)
            return count[0]
    return counted, stop


CALLBACK_WAIT_S = 10.0   # how long stop() waits for callbacks of launches already done


def _rows_to_check(m: int, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    if 2 * m * n * k <= FULL_CHECK_FLOPS or m <= 512:
        return np.arange(m)
    return np.union1d(verify.sample_rows(rng, m, 256), np.arange(max(0, m - 129), m, 8))


def run_transpose(queue: cl.CommandQueue, rows: int, cols: int, *, kernel: object = None,
                  params: Mapping[str, object] | None = None, repeat: int | None = None,
                  seed: int | None = None) -> dict:
    """Time a transpose and a plain device copy of the same bytes, interleaved, and check
    the transpose exactly. Bandwidth counts bytes read plus bytes written."""
    plan = TransposePlan(queue, kernel, params)
    operands.check_fits(queue.device, [(rows, cols), (cols, rows)], host=True)
    a = verify.random_matrix(np.random.default_rng(seed), rows, cols)
    src = operands.raw(queue, a, 1)
    dst = operands.poison(queue, operands.empty(queue, cols, rows, rows))
    launch = plan.bind(src, dst)
    ev = launch()
    ev.wait()
    ok = bool(np.array_equal(operands.to_host(queue, dst), a.T))
    repeat = _repeat_for(ev, repeat)
    nbytes = rows * cols * 4
    t_copy, t_tr = [], []
    for _ in range(3):   # interleave, so clock or thermal drift hits both alike
        t_tr.extend(timing.profile(launch, repeat=repeat).ms)
        t_copy.extend(timing.profile(lambda: cl.enqueue_copy(queue, dst.buf, src.buf,
                                                             byte_count=nbytes), repeat=repeat).ms)
    tr, cp = timing.Timing(tuple(t_tr)), timing.Timing(tuple(t_copy))
    copied = cp.median > 0       # Oclgrind gives copies no duration
    return {"kernel": plan.kernel.key, "params": dict(plan.params), "rows": rows, "cols": cols,
            **_device_fields(queue.device), "shuffle": devmod.shuffle_support(queue.device),
            "verified": ok, "ms_median": tr.median, "ms_min": tr.min, "ms_max": tr.max,
            "gbps": timing.gbps(2 * nbytes, tr.median),
            "copy_ms_median": cp.median if copied else None,
            "copy_gbps": timing.gbps(2 * nbytes, cp.median) if copied else None,
            "ratio_to_copy": cp.median / tr.median if copied else None, "repeat": 3 * repeat}
