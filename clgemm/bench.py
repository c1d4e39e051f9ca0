"""`clgemm bench`: clgemm's kernels against CLBlast and cuBLAS, in one process and run.

Every contender is timed the same way (METHOD): the device span of one call, between
markers (CUDA events for cuBLAS) around it, median of R calls after a warm-up. That counts
everything a library enqueues for one product (CLBlast's padding and transpose kernels,
for one) and the gaps between them, the same for all; host wall-clock is recorded beside
it. Every contender's output is checked against a float64 reference, so a wrong fast
result cannot win.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import csv
import itertools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import db, operands, timing, verify
from . import device as devmod
from .gemm import GemmPlan, prepare

METHOD = ("device span of one call, median of R calls after one warm-up call: OpenCL "
          "profiling timestamps of a marker enqueued before the call and one after it (CUDA "
          "events for cuBLAS), so every kernel a library enqueues and the host-side gaps "
          "between them count; host wall-clock to the device synchronisation is recorded beside "
          "it (host_ms_*). Fresh uniform[-1,1) data, on the device before the timed calls (cuBLAS: "
          "its own copy through torch); each contender's output checked against float64 on "
          "sampled rows")
DEFAULT_SIZES = (512, 1024, 2048, 4096, 8192)
DEFAULT_SHAPES = ((4000, 4000, 4000), (8192, 8192, 256), (256, 8192, 8192), (4096, 1024, 4096),
                  (1, 4096, 4096), (4096, 4096, 1))


class Skipped(Exception):
    """A contender that cannot run here; the message says why."""


class OpenCLSpan:
    """Brackets a call with markers; their profiling timestamps give its device span."""

    def __init__(self, queue: cl.CommandQueue):
        self.queue = queue

    def begin(self) -> None:
        self.start = cl.enqueue_marker(self.queue)

    def end(self) -> float | None:
        stop = cl.enqueue_marker(self.queue)
        self.queue.finish()
        try:
            ms = (stop.profile.end - self.start.profile.end) * 1e-6
        except cl.Error:          # no profiling on markers here: host time only
            return None
        return ms if ms > 0 else None


class CudaSpan:
    """The same for cuBLAS: CUDA events recorded on the stream before and after the call."""

    def __init__(self, torch):
        self.torch = torch

    def begin(self) -> None:
        self.start = self.torch.cuda.Event(enable_timing=True)
        self.stop = self.torch.cuda.Event(enable_timing=True)
        self.start.record()

    def end(self) -> float | None:
        self.stop.record()
        self.torch.cuda.synchronize()
        return self.start.elapsed_time(self.stop)


def measure(call: Callable[[], None], span, repeat: int) -> tuple[timing.Timing | None, timing.Timing]:
    """(device spans, host wall-clock) of `repeat` calls after one warm-up call. The device
    spans are None where the platform cannot time markers."""
    span.begin()
    call()
    span.end()
    dev, host = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        span.begin()
        call()
        dev.append(span.end())
        host.append((time.perf_counter() - t0) * 1e3)
    return (timing.Timing(tuple(dev)) if None not in dev else None), timing.Timing(tuple(host))


class Problem:
    """One shape's inputs, their float64 reference on sampled rows, on host and device."""

    def __init__(self, queue: cl.CommandQueue, m: int, n: int, k: int, rng: np.random.Generator):
        self.queue, self.shape = queue, (m, n, k)
        self.a, self.b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
        # device-resident, as every OpenCL contender takes them: what a contender does to
        # its inputs on the device (padding, transposes) is then inside its timed launches
        self.dev_a, self.dev_b = cla.to_device(queue, self.a), cla.to_device(queue, self.b)
        self.rows = verify.sample_rows(rng, m, 62)
        self.ref = verify.reference(self.a[self.rows], self.b)

    def error(self, rows_out: np.ndarray) -> float:
        return verify.rel_error(rows_out, self.ref)


# ------------------------------------------------------------------ contenders

def run_clgemm(p: Problem, kernel: str, repeat: int) -> dict:
    """Laid out and launched as gemm() does it (split-K and padding included)."""
    q = p.queue
    plan = GemmPlan(q, kernel, shape=p.shape)
    prep = prepare(plan, p.dev_a, p.dev_b, None, 1.0, 0.0)
    operands.poison(q, prep.out)
    cl.wait_for_events(prep.launch())
    err = p.error(operands.rows_to_host(q, prep.out, p.rows))
    return {"contender": f"clgemm-{kernel}", "params": plan.params, "params_source": plan.source,
            "tuned_at": plan.tuned_at, "tuned_kernel": plan.tuned_kernel, "splits": prep.splits, "padded": prep.padded, "a_kmajor": prep.kmajor,
            "timing": measure(prep.launch, OpenCLSpan(q), repeat), "rel_error": err}


class CLBlast:
    """libclblast through ctypes, row-major SGEMM on pyopencl buffers."""

    def __init__(self, queue: cl.CommandQueue, params: dict | None = None, label: str = "clblast"):
        path = os.environ.get("CLGEMM_CLBLAST") or ctypes.util.find_library("clblast") or "libclblast.so.1"
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as e:
            raise Skipped(f"CLBlast not installed ({e})") from None
        self.queue, self.label, self.params = queue, label, params
        f = self.lib.CLBlastSgemm
        size, ptr = ctypes.c_size_t, ctypes.c_void_p
        f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, size, size, size, ctypes.c_float,
                      ptr, size, size, ptr, size, size, ctypes.c_float, ptr, size, size,
                      ctypes.POINTER(ptr), ctypes.POINTER(ptr)]
        f.restype = ctypes.c_int
        self.apply()

    def apply(self) -> None:
        """Overrides are per-device state in CLBlast: drop any earlier set (clearing its
        caches), then apply this contender's own, if any."""
        self.lib.CLBlastClearCache()
        if self.params:
            self.override(self.params)

    def override(self, params: dict) -> None:
        """Apply Xgemm parameters (e.g. from CLBlast's own tuner) for this device."""
        names = (ctypes.c_char_p * len(params))(*[k.encode() for k in params])
        values = (ctypes.c_size_t * len(params))(*[int(v) for v in params.values()])
        f = self.lib.CLBlastOverrideParameters
        f.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t,
                      ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
        status = f(self.queue.device.int_ptr, b"Xgemm", 32, len(params), names, values)
        if status != 0:
            raise Skipped(f"CLBlastOverrideParameters refused the parameters (status {status})")

    def sgemm(self, m, n, k, a: cl.Buffer, b: cl.Buffer, c: cl.Buffer) -> None:
        qp = ctypes.c_void_p(self.queue.int_ptr)
        ev = ctypes.c_void_p()
        status = self.lib.CLBlastSgemm(101, 111, 111, m, n, k, 1.0, a.int_ptr, 0, k, b.int_ptr, 0, n,
                                       0.0, c.int_ptr, 0, n, ctypes.byref(qp), ctypes.byref(ev))
        if status != 0:
            raise Skipped(f"CLBlastSgemm returned status {status}")
        if ev.value:
            cl.Event.from_int_ptr(ev.value, retain=False)   # released when collected

    def run(self, p: Problem, repeat: int) -> dict:
        self.apply()
        q = p.queue
        m, n, k = p.shape
        am, bm = operands.raw(q, p.dev_a, 1), operands.raw(q, p.dev_b, 1)
        cm = operands.poison(q, operands.empty(q, m, n, n))
        self.sgemm(m, n, k, am.buf, bm.buf, cm.buf)
        q.finish()
        err = p.error(operands.rows_to_host(q, cm, p.rows))
        t = measure(lambda: self.sgemm(m, n, k, am.buf, bm.buf, cm.buf), OpenCLSpan(q), repeat)
        return {"contender": self.label, "timing": t, "rel_error": err}


def run_cublas(p: Problem, repeat: int) -> dict:
    try:
        import torch
    except ImportError:
        raise Skipped("torch is not installed (cuBLAS is reached through torch)") from None
    if not torch.cuda.is_available():
        raise Skipped("torch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    x, y = torch.from_numpy(p.a).cuda(), torch.from_numpy(p.b).cuda()
    out = torch.mm(x, y)
    err = p.error(out[torch.from_numpy(p.rows).cuda()].cpu().numpy())
    return {"contender": "cublas", "timing": measure(lambda: torch.mm(x, y, out=out), CudaSpan(torch), repeat),
            "rel_error": err, "params": {"tf32": False}}


def run_copy(p: Problem, repeat: int) -> dict:
    """A device copy of the bytes a GEMM must move at least (A, B read; C written)."""
    q = p.queue
    m, n, k = p.shape
    nbytes = 4 * (m * k + k * n + m * n)
    src = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(q, src, np.float32(1.5), 0, nbytes)
    t = measure(lambda: cl.enqueue_copy(q, dst, src, byte_count=nbytes), OpenCLSpan(q), repeat)
    return {"contender": "copy", "timing": t, "gbps": timing.gbps(2 * nbytes, (t[0] or t[1]).median)}


# ------------------------------------------------------------------ the run

def bench(queue: cl.CommandQueue, kernels: list[str], shapes: list[tuple[int, int, int]],
          against: list[str], repeat: int = 10, clblast_sets: dict[str, dict] | None = None,
          seed: int | None = None, on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """One row per (shape, contender), skipped contenders included with their reason."""
    for shape in shapes:    # every shape is checked before the first is measured
        operands.check_fits(queue.device, operands.gemm_shapes(*shape), host=True)
    rng = np.random.default_rng(seed)
    peak = devmod.peak_gflops(queue.device)
    # CLBlast with its own database, then with each parameter set given (e.g. from its
    # tuner); a set stays applied until the next, so each contender re-applies its own.
    libs: dict[str, object] = {}
    if "clblast" in against:
        for label, params in [("clblast", None)] + [(f"clblast-{n}", p) for n, p in (clblast_sets or {}).items()]:
            try:
                libs[label] = CLBlast(queue, params, label)
            except Skipped as e:
                libs[label] = e
    rows = []
    for shape in shapes:
        p = Problem(queue, *shape, rng)
        runs: list[Callable[[], dict]] = [lambda key=key: run_clgemm(p, key, repeat) for key in kernels]
        for label, lib in libs.items():
            runs.append(lambda lib=lib, label=label: _raise(lib) if isinstance(lib, Skipped)
                        else lib.run(p, repeat))
        if "cublas" in against:
            runs.append(lambda: run_cublas(p, repeat))
        runs.append(lambda: run_copy(p, repeat))
        names = [f"clgemm-{key}" for key in kernels] + list(libs) + \
            (["cublas"] if "cublas" in against else []) + ["copy"]
        shape_rows = []
        for name, run in zip(names, runs):
            row = {"m": shape[0], "n": shape[1], "k": shape[2], "contender": name}
            try:
                r = run()
            except Skipped as e:
                row.update(status="skipped", reason=str(e))
            else:
                dev, host = r.pop("timing")
                t = dev or host
                row.update(r, status="ok", timing="events" if dev else "host", ms_median=t.median,
                           ms_min=t.min, ms_max=t.max, host_ms_median=host.median, repeat=repeat)
                if name != "copy":
                    row["gflops"] = timing.gflops(*shape, t.median)
                    row["host_gflops"] = timing.gflops(*shape, host.median)
                    row["verified"] = bool(row["rel_error"] <= verify.tolerance(shape[2]))
                    if peak:
                        row["peak_pct"] = 100 * row["gflops"] / peak
            shape_rows.append(row)
        _ratios(shape_rows)
        for row in shape_rows:
            if on_row:
                on_row(row)
        rows += shape_rows
    return rows


def _raise(e: Exception):
    raise e


def _ratios(rows: list[dict]) -> None:
    """Ratio of each contender to cuBLAS and to the faster CLBlast (default or tuned), for
    verified results only."""
    def best(prefix):
        ok = [r["gflops"] for r in rows if r["contender"].startswith(prefix) and r.get("verified")]
        return max(ok) if ok else None
    cub, clb = best("cublas"), best("clblast")
    for r in rows:
        if r.get("verified"):
            if cub:
                r["vs_cublas"] = r["gflops"] / cub
            if clb:
                r["vs_clblast"] = r["gflops"] / clb


def save(rows: list[dict], queue: cl.CommandQueue, out_dir: Path, command: str) -> list[Path]:
    """results/<device>/bench-<date>.json and .csv, and a PNG plot where matplotlib is."""
    info = devmod.describe(queue.device)
    out = Path(out_dir) / db.slug(info["name"])
    out.mkdir(parents=True, exist_ok=True)
    date = time.strftime("%Y-%m-%d")
    stem = out / f"bench-{date}"
    for nth in itertools.count(2):      # an earlier run of the day is kept, never overwritten
        if not any(stem.with_suffix(s).exists() for s in (".json", ".csv", ".png")):
            break
        stem = out / f"bench-{date}-{nth}"
    stem.with_suffix(".json").write_text(json.dumps(verify.json_safe(
        {"device": info, "date": date, "command": command, "method": METHOD, "rows": rows}), indent=1))
    cols = ["m", "n", "k", "contender", "status", "gflops", "peak_pct", "vs_cublas", "vs_clblast",
            "ms_median", "ms_min", "ms_max", "timing", "host_ms_median", "host_gflops", "gbps",
            "verified", "rel_error", "splits", "padded", "a_kmajor", "reason"]
    with open(stem.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    paths = [stem.with_suffix(".json"), stem.with_suffix(".csv")]
    png = _plot(rows, stem.with_suffix(".png"), info["name"])
    return paths + ([png] if png else [])


def _plot(rows: list[dict], path: Path, device_name: str) -> Path | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    square = [r for r in rows if r["m"] == r["n"] == r["k"] and r.get("gflops")]
    if not square:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in dict.fromkeys(r["contender"] for r in square):
        pts = sorted((r["m"], r["gflops"]) for r in square if r["contender"] == name)
        ax.plot([p[0] for p in pts], [p[1] / 1e3 for p in pts], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOPS (FP32)")
    ax.set_title(f"SGEMM on {device_name}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

