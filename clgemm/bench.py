"""`clgemm bench`: clgemm against CLBlast and cuBLAS, timed as users call them, in one
process and run.

The number that counts is the whole call (METHOD): host wall-clock from the call to the
device's synchronisation, median after a warm-up, every contender interleaved with the
others in rounds. Device spans of the same calls (markers, or CUDA events for cuBLAS,
around one call) are recorded beside them and labelled as spans. Every contender's output
is checked against float64 on sampled rows (the first, the last and 62 at random), clgemm's
over an output poisoned with NaN, so a wrong or unwritten fast result cannot win.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyopencl as cl

from . import device as devmod
from . import operands, store, timing, verify
from .contenders import (CLBlast, Contender, Problem, Skipped, clgemm_contender, copy_contender,
                         cublas_contender)

METHOD = ("whole calls as users make them: host wall-clock from the call to the device's "
          "synchronisation (queue.finish(), torch.cuda.synchronize()) on a queue without "
          "profiling, as users make one, median of R calls (or as many as last 25 ms, where "
          "more) in each of ROUNDS rounds that interleave the contenders, after a warm-up call; "
          "clgemm is gemm(queue, a, b) on device Arrays with a fresh output (clgemm-N names "
          "the kernel), as torch's a @ b (cuBLAS, TF32 off) allocates one; CLBlast is "
          "CLBlastSgemm on device buffers. Device spans of the same calls (OpenCL markers or "
          "CUDA events around one call) are recorded beside them as spans (ms_median, "
          "gflops, vs_cublas). Fresh uniform[-1,1) data on the device; each output checked "
          "against float64 on sampled rows, over an output poisoned with NaN")
DEFAULT_SIZES = (16, 512, 1024, 2048, 4096, 8192)
DEFAULT_SHAPES = ((4000, 4000, 4000), (8192, 8192, 256), (256, 8192, 8192), (4096, 1024, 4096),
                  (1, 4096, 4096), (4096, 1, 4096), (4096, 4096, 1))
# the shapes users bring: primes and non-multiples of every tile, narrow and short products
ODD_SHAPES = ((5003, 3001, 2039), (7919, 7919, 769), (4096, 32, 4096), (1000, 6000, 800),
              (2, 8192, 8192))
ROUNDS = 3
# A CPU device runs the default set up to 2048^3's work: at pocl's ~30 GFLOPS a 4096^3 call
# takes seconds and an 8192^3 one half a minute, so the whole default set would take hours
CPU_DEFAULT_FLOPS = 2 * 2048 ** 3


def default_shapes(device) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """The default shapes for `device`, and those left out of them (on a CPU device, the
    products above CPU_DEFAULT_FLOPS; none elsewhere)."""
    every = [(s, s, s) for s in DEFAULT_SIZES] + list(DEFAULT_SHAPES) + list(ODD_SHAPES)
    if not device.type & cl.device_type.CPU:
        return every, []
    small = lambda s: 2 * s[0] * s[1] * s[2] <= CPU_DEFAULT_FLOPS  # noqa: E731
    return [s for s in every if small(s)], [s for s in every if not small(s)]


def measure(call: Callable[[], object], span, repeat: int) -> tuple[timing.Timing | None, timing.Timing]:
    """(device spans, host wall-clock of the bracketed calls) of `repeat` calls after one
    warm-up call. The device spans are None where the platform cannot time markers."""
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


ROUND_MS = 25.0    # each contender's share of a round lasts at least this long


def wall(call: Callable[[], object], sync: Callable[[], None], repeat: int,
         least_ms: float = ROUND_MS) -> list[float]:
    """Host wall-clock (ms) of whole calls, each from the call to the device's
    synchronisation, after one untimed call: `repeat` of them, or as many as last about
    `least_ms` where that is more. A 0.09 ms call timed 10 times a round gave medians 7%
    apart for two contenders making the same call (H200, 2026-12-04): the host's jitter
    needs more samples of a short call than of a long one."""
    t0 = time.perf_counter()
    call()
    sync()
    once = (time.perf_counter() - t0) * 1e3
    out = []
    for _ in range(max(repeat, min(5000, int(least_ms / max(once, 1e-3))))):
        t0 = time.perf_counter()
        call()
        sync()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def bench(queue: cl.CommandQueue, kernels: list[str | None], shapes: list[tuple[int, int, int]],
          against: list[str], repeat: int = 10, clblast_sets: dict[str, dict] | None = None,
          seed: int | None = None, on_row: Callable[[dict], None] | None = None,
          rounds: int = ROUNDS, least_ms: float = ROUND_MS,
          on_shape: Callable[[list[dict]], None] | None = None) -> list[dict]:
    """One row per (shape, contender), skipped contenders included with their reason, and
    those that failed (an error in setting up or calling) with theirs: one contender's
    failure does not cost the others, or the shapes measured before it. `kernels` names
    clgemm's contenders: None is gemm() without a kernel (`clgemm`). Each contender makes
    `repeat` whole calls a round, or as many as last `least_ms`. `on_shape` is given the
    rows so far after each shape."""
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
        makers: list[tuple[str, Callable[[], Contender]]] = [
            ("clgemm" if key is None else f"clgemm-{key}", lambda key=key: clgemm_contender(p, key))
            for key in kernels]
        for label, lib in libs.items():
            makers.append((label, lambda lib=lib: _raise(lib) if isinstance(lib, Skipped)
                           else lib.contender(p)))
        if "cublas" in against:
            makers.append(("cublas", lambda: cublas_contender(p)))
        makers.append(("copy", lambda: copy_contender(p)))
        shape_rows, live = [], []
        for name, make in makers:
            row = {"m": shape[0], "n": shape[1], "k": shape[2], "contender": name}
            try:
                live.append((row, make()))
            except Skipped as e:
                row.update(status="skipped", reason=str(e))
            except Exception as e:       # noqa: BLE001 - recorded in its row
                row.update(status="failed", reason=_why(e))
            shape_rows.append(row)
        calls = {id(c): [] for _, c in live}
        spans: dict[int, list] = {id(c): [] for _, c in live}
        for _ in range(rounds):             # interleaved: drift hits every contender alike
            for row, c in list(live):
                try:
                    c.before()
                    calls[id(c)] += wall(c.call, c.sync, repeat, least_ms)
                    dev, _ = measure(c.span_call, c.span, repeat)
                except Exception as e:   # noqa: BLE001 - recorded in its row
                    row.update(status="failed", reason=_why(e))
                    live.remove((row, c))
                    continue
                spans[id(c)] += list(dev.ms) if dev else [None]
        for row, c in live:
            _fill(row, c, calls[id(c)], spans[id(c)], shape, len(calls[id(c)]), peak)
        _ratios(shape_rows)
        for row in shape_rows:
            if on_row:
                on_row(row)
        rows += shape_rows
        if on_shape:
            on_shape(rows)
    return rows


def _why(e: Exception) -> str:
    """An error in a row: its type and message (a driver's error may have no message)."""
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _fill(row: dict, c: Contender, calls: list[float], spans: list, shape, n: int,
          peak: float | None) -> None:
    call = timing.Timing(tuple(calls))
    row.update(c.info, status="ok", repeat=n, call_ms_median=call.median, call_ms_min=call.min,
               call_ms_max=call.max)
    span = timing.Timing(tuple(spans)) if None not in spans else None
    row["timing"] = "events" if span else "host"
    if span:
        row.update(ms_median=span.median, ms_min=span.min, ms_max=span.max)
    if c.name == "copy":
        row["gbps"] = timing.gbps(c.info["bytes"], (span or call).median)
        row["call_gbps"] = timing.gbps(c.info["bytes"], call.median)
        return
    row["call_gflops"] = timing.gflops(*shape, call.median)
    if span:
        row["gflops"] = timing.gflops(*shape, span.median)
    row["rel_error"] = c.rel_error
    row["verified"] = c.verified
    if peak:
        row["call_peak_pct"] = 100 * row["call_gflops"] / peak


def _raise(e: Exception):
    raise e


def _ratios(rows: list[dict]) -> None:
    """Ratio of each contender to cuBLAS and to the faster CLBlast (default or tuned), for
    verified results only: whole calls (vs_*_call) and device spans (vs_*)."""
    for field_, suffix in (("call_gflops", "_call"), ("gflops", "")):
        def best(prefix):
            ok = [r[field_] for r in rows if r["contender"].startswith(prefix)
                  and r.get("verified") and r.get(field_)]
            return max(ok) if ok else None
        cub, clb = best("cublas"), best("clblast")
        for r in rows:
            if r.get("verified") and r.get(field_):
                if cub:
                    r["vs_cublas" + suffix] = r[field_] / cub
                if clb:
                    r["vs_clblast" + suffix] = r[field_] / clb


def results_dir(queue: cl.CommandQueue, out_dir: Path) -> Path:
    """Where Results writes: a folder of out_dir named for the device, which the CLI checks
    before measuring (a file in its place lost a whole bench at the end)."""
    return Path(out_dir) / store.slug(devmod.describe(queue.device)["name"])


class Results:
    """results/<device>/bench-<date>.json and .csv, written whole (never cut off) after
    each shape, so that a bench stopped midway (a full disk, a crash, Ctrl-C) keeps the
    shapes it measured: the JSON says whether the run was `complete`. The name is taken
    when the run starts: an earlier run of the day, or one running beside it, is kept,
    never overwritten."""

    COLUMNS = ["m", "n", "k", "contender", "status", "call_ms_median", "call_gflops",
               "vs_cublas_call", "vs_clblast_call", "call_peak_pct", "call_ms_min",
               "call_ms_max", "ms_median", "gflops", "vs_cublas", "vs_clblast", "timing",
               "gbps", "verified", "rel_error", "kernel", "params_source", "splits", "padded",
               "floats", "a_kmajor", "columns_first", "reason"]

    def __init__(self, queue: cl.CommandQueue, out_dir: Path, command: str):
        self.info, self.command = devmod.describe(queue.device), command
        # once (it asks git): the files are rewritten after each shape
        self.commit = store.commit()
        out = results_dir(queue, out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.date = time.strftime("%Y-%m-%d")
        self.paths: list[Path] = []
        stem = out / f"bench-{self.date}"
        for nth in itertools.count(2):
            # the name is taken at once, by a file of no rows: a bench started meanwhile
            # would have chosen it too, and the two would have written over each other
            if not any(stem.with_suffix(s).exists() for s in (".json", ".csv", ".png")):
                try:        # created exclusively (no hard link: not every file system has them)
                    with open(stem.with_suffix(".json"), "x") as f:
                        f.write(self._doc([], False))
                    break
                except FileExistsError:
                    pass
            stem = out / f"bench-{self.date}-{nth}"
        self.stem = stem

    def _doc(self, rows: list[dict], complete: bool) -> str:
        return json.dumps(verify.json_safe(
            {"device": self.info, "date": self.date, "commit": self.commit,
             "command": self.command, "method": METHOD, "complete": complete, "rows": rows}),
            indent=1)

    def discard(self) -> None:
        """Give the name back where nothing was measured (the run was refused)."""
        if not self.paths:
            self.stem.with_suffix(".json").unlink(missing_ok=True)

    def write(self, rows: list[dict], complete: bool = False) -> list[Path]:
        """The rows so far, as JSON and CSV (each replaced whole); the paths."""
        json_path, csv_path = self.stem.with_suffix(".json"), self.stem.with_suffix(".csv")
        store.write_text_atomic(json_path, self._doc(rows, complete))
        text = io.StringIO()
        w = csv.DictWriter(text, fieldnames=self.COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
        store.write_text_atomic(csv_path, text.getvalue())
        self.paths = [json_path, csv_path]
        return self.paths

    def finish(self, rows: list[dict]) -> tuple[list[Path], str | None]:
        """Every row, marked complete, and a PNG plot of the square shapes where matplotlib
        is; the paths written, and why there is no plot where there is none."""
        paths = self.write(rows, complete=True)
        png = _plot(rows, self.stem.with_suffix(".png"), self.info["name"])
        return (paths + [png], None) if isinstance(png, Path) else (paths, png)


def _plot(rows: list[dict], path: Path, device_name: str) -> Path | str:
    """The plot of whole calls at the square shapes (M = N = K), or why there is none."""
    square = [r for r in rows if r["m"] == r["n"] == r["k"] and r.get("call_gflops")]
    if not square:
        return "no plot: no square shape (M = N = K) was timed"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return 'no plot: matplotlib is not installed (pip install "clgemm[bench]")'
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in dict.fromkeys(r["contender"] for r in square):
        pts = sorted((r["m"], r["call_gflops"]) for r in square if r["contender"] == name)
        ax.plot([p[0] for p in pts], [p[1] / 1e3 for p in pts], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOPS (FP32), whole calls")
    ax.set_title(f"SGEMM on {device_name}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

