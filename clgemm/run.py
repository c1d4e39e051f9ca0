"""One measured and verified GEMM: what `clgemm run` prints and the tuner records."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyopencl as cl

from . import device as devmod
from . import operands, timing, verify
from .gemm import GemmPlan

FULL_CHECK_FLOPS = 2 * 2048**3   # above this, the reference covers a sample of rows


def run_gemm(queue: cl.CommandQueue, m: int, n: int, k: int, *, kernel: object = None,
             params: Mapping[str, object] | None = None, repeat: int | None = None,
             check: bool = True,
             alpha: float = 1.0, beta: float = 0.0, seed: int | None = None,
             plan: GemmPlan | None = None) -> dict:
    """Build, warm up, verify and time one GEMM on fresh random data.

    The output is poisoned with NaN before the checked launch, so an unwritten element
    fails the check. After timing, the last output must equal the first bit for bit
    (the kernels are deterministic; a difference means a race). Without `repeat`, 10
    launches are timed, or fewer (at least 3) when they would take over ~2 s."""
    plan = plan or GemmPlan(queue, kernel, params)
    al = plan.align
    rounded = operands.rounded
    operands.check_fits(queue.device, [(m, rounded(k, al)), (k, rounded(n, al)), (m, rounded(n, al))])
    rng = np.random.default_rng(seed)
    a = verify.random_matrix(rng, m, k)
    b = verify.random_matrix(rng, k, n)
    c0 = verify.random_matrix(rng, m, n) if beta != 0.0 else None
    am, bm = operands.raw(queue, a, al), operands.raw(queue, b, al)
    cm = operands.raw(queue, c0, al) if c0 is not None else operands.empty(queue, m, n, rounded(n, al))
    if c0 is None:
        cl.enqueue_fill_buffer(queue, cm.buf, np.float32(np.nan), 0, m * cm.ld * 4)

    first = None
    result: dict = {}
    ev = plan.launch(am, bm, cm, alpha, beta)   # compiled already; this is the warm-up
    ev.wait()
    if repeat is None:
        one_ms = (ev.profile.end - ev.profile.start) * 1e-6
        repeat = max(3, min(10, int(2000 / max(one_ms, 1e-3))))
    if check:
        first = operands.to_host(queue, cm)
        rows = _rows_to_check(m, n, k, rng)
        ref = verify.reference(a[rows], b, alpha, beta, None if c0 is None else c0[rows])
        err = verify.rel_error(first[rows], ref)
        tol = verify.tolerance(k)
        result.update(rel_error=err, tolerance=tol, verified=bool(err <= tol),
                      rows_checked=len(rows))
        if c0 is not None:   # timed launches must start from the same C
            cl.enqueue_copy(queue, cm.buf, operands.padded(c0, cm.ld))
    t = timing.profile(lambda: plan.launch(am, bm, cm, alpha, beta), repeat=repeat, warmup=0)
    if check and c0 is None:
        stable = bool(np.array_equal(operands.to_host(queue, cm), first))
        result["stable"] = stable
        result["verified"] = result["verified"] and stable
    dev = queue.device
    result.update(
        kernel=plan.kernel.key, kernel_name=plan.kernel.name, params=dict(plan.params),
        m=m, n=n, k=k, alpha=alpha, beta=beta,
        device=dev.name.strip(), platform=dev.platform.name.strip(),
        driver=dev.driver_version.strip(),
        ms_median=t.median, ms_min=t.min, ms_max=t.max, repeat=repeat,
        gflops=timing.gflops(m, n, k, t.median),
    )
    peak = devmod.peak_gflops(dev)
    if peak:
        result["peak_fraction"] = result["gflops"] / peak
    if not check:
        result.update(verified=None, rel_error=None, tolerance=None)
    return result


def _rows_to_check(m: int, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    if 2 * m * n * k <= FULL_CHECK_FLOPS or m <= 512:
        return np.arange(m)
    sample = rng.choice(m, size=256, replace=False)
    return np.unique(np.concatenate([[0, m - 1], np.arange(max(0, m - 129), m, 8), sample]))

