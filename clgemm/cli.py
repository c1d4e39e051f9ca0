"""The `clgemm` command: a thin layer over the library."""

from __future__ import annotations

import errno
import functools
import itertools
import json
import os
import sys
import warnings
from pathlib import Path

import click

from . import device as devmod
from . import db, kernels, pool, show, store, verify
from .options import (MAX_REPEAT, Float, Int, kernel_keys, not_blank, param_pairs,
                      parse_ints, parse_shapes, results_folder, scalar_value, split_k_value)

_DEVICE = click.option("--device", "device_spec", default=None, metavar="D",
                       help="PLATFORM:DEVICE indices or a name substring (default: first GPU, "
                            "else the CPU; PYOPENCL_CTX is honoured)")


def _queue(spec: str | None):
    try:
        return devmod.queue(devmod.select(spec))
    except devmod.DeviceNotFound as e:
        raise click.UsageError(str(e)) from None


def _kernel(kind: str):
    def convert(ctx, param, value):
        try:
            return kernels.get(value, kind=kind)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return convert


def _gemm_shape(default_size: int):
    """--kernel and the problem shape, shared by `run` and `tune`."""
    def wrap(f):
        for opt in reversed((
            click.option("--kernel", "kernel", default=kernels.DEFAULT_GEMM,
                         callback=_kernel("tunable"), show_default=True,
                         help="GEMM kernel number (1-8) or name, or a matrix-vector kernel: "
                              "matvec-sweep (m = 1), matvec-dot (n = 1)"),
            click.option("--size", type=Int(min=1), default=default_size,
                         show_default=True, help="M = N = K"),
            click.option("--m", "m", type=Int(min=1), default=None,
                         help="rows of C (overrides --size)"),
            click.option("--n", "n", type=Int(min=1), default=None, help="columns of C"),
            click.option("--k", "k", type=Int(min=1), default=None, help="inner dimension"),
        )):
            f = opt(f)
        return f
    return wrap


class _Command(click.Group):
    """The clgemm group: output that cannot be written (a full disk, a quota, a device
    error) and a file named in the error that cannot be used (another user's, a folder
    where a file must be, a lock held too long) end in a one-line error naming the cause,
    exit status 1, not a traceback.
    click already ends a broken pipe quietly. Ctrl-C ends any command with exit status 130,
    as a shell reports an interrupted one (click's own "Aborted!" exits 1; `tune` says
    more about its log)."""

    _UNWRITABLE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}
    # a file named in the error that is not the user's to use, or of the wrong kind
    _UNUSABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR, errno.ENOTDIR,
                 errno.ETIMEDOUT}

    def invoke(self, ctx: click.Context):
        before = warnings.showwarning
        warnings.showwarning = functools.partial(_show_warning, before)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            raise SystemExit(130) from None
        except OSError as e:
            if not (e.errno in self._UNWRITABLE or (e.filename and e.errno in self._UNUSABLE)):
                raise
            where = f": {e.filename}" if e.filename else " (writing the output)"
            raise click.ClickException(f"{e.strerror or e}{where}") from None
        finally:
            warnings.showwarning = before


@click.group(cls=_Command)
@click.version_option(package_name="clgemm")
def main() -> None:
    """OpenCL SGEMM kernels, from naive to double-buffered and onto the tensor cores, and
    their auto-tuner."""


def _show_warning(before, message, category, filename, lineno, file=None, line=None) -> None:
    """A warning about the user's files (a database entry or a log line ignored) as one
    line that names the file, without Python's source line under it, which read as a
    piece of a traceback; any other warning as `before` shows it. In place while a command
    runs (_Command.invoke), and only then."""
    if issubclass(category, db.DataWarning):
        click.echo(f"warning: {message}", err=True)
    else:
        before(message, category, filename, lineno, file, line)


@main.command()
@_DEVICE
def devices(device_spec) -> None:
    """List every OpenCL platform and device with its capabilities (or only --device)."""
    entries = devmod.entries()
    if device_spec is not None:
        chosen = _queue(device_spec).device
        entries = [e for e in entries if e.device == chosen]
    if not entries:
        click.echo("No OpenCL devices found.")
    for e in entries:
        for line in show.device_lines(e.spec, devmod.describe(e.device)):
            click.echo(line)
    hint = devmod.nvidia_icd_hint()
    if hint:
        click.echo("\n" + hint)


@main.command()
@_gemm_shape(default_size=1024)
@click.option("--repeat", type=Int(min=1, max=MAX_REPEAT), default=None,
              help="timed launches [default: 10, fewer (>= 3) when a launch takes over 0.2 s]")
@_DEVICE
@click.option("--param", "params", multiple=True, callback=param_pairs, metavar="NAME=VALUE",
              help="kernel parameter (repeatable)")
@click.option("--alpha", type=Float(), default=1.0, show_default=True, callback=scalar_value)
@click.option("--beta", type=Float(), default=0.0, show_default=True, callback=scalar_value)
@click.option("--trans-a", is_flag=True, help="A is given as K x M; use its transpose")
@click.option("--trans-b", is_flag=True, help="B is given as N x K; use its transpose")
@click.option("--transposed-by", type=click.Choice(["auto", "transpose", "kernel"]), default="auto",
              show_default=True, help="a transposed operand is copied row-major by a device "
              "transpose first, or read as it lies by the kernel (kernels 5 and 6); auto reads "
              "A as it lies and transposes B, the faster way for each on the H200, and for large "
              "products turns a row-major A K-major first")
@click.option("--pad", type=click.Choice(["auto", "yes", "no"]), default="auto", show_default=True,
              help="copy A and B of a shape that is not a whole number of tiles into "
                   "zero-padded buffers to run the build without bounds checks (kernels 5-8); "
                   "auto does so for large shapes where it adds at most 15% work and k is not "
                   "whole tiles (where it is, the CLAMP build runs unpadded)")
@click.option("--split-k", default="auto", show_default=True, callback=split_k_value, metavar="auto|S",
              help="cut k into S slices computed apart and summed by a second kernel (kernels 5 "
                   "and 6); auto takes the count the tuner measured for the entry in use, else "
                   "splits only when C has too few tiles to fill the device")
@click.option("--no-check", is_flag=True, help="skip verification against float64")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def run(kernel, size, m, n, k, repeat, device_spec, params, alpha, beta, trans_a, trans_b,
        transposed_by, pad, split_k, no_check, as_json) -> None:
    """Time one GEMM, C = alpha*op(A)*op(B) + beta*C, with profiling events and verify it
    against float64 numpy."""
    from .run import run_gemm
    queue = _queue(device_spec)
    m, n, k = m or size, n or size, k or size
    try:
        with show.stages(quiet=as_json) as progress:
            r = run_gemm(queue, m, n, k, kernel=kernel.key, params=params, repeat=repeat,
                         check=not no_check, alpha=alpha, beta=beta, trans_a=trans_a,
                         trans_b=trans_b, transposed_by=transposed_by, pad=pad, split_k=split_k,
                         progress=progress)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    keys = ("kernel", "params", "params_source", "tuned_at", "tuned_kernel", "tuned_on", "m", "n", "k",
            "alpha", "beta", "trans_a", "trans_b", "transposed_by",
            "read_as_they_lie", "a_kmajor", "columns_first",
            "padded", "floats", "splits", "tail", "peel", "launches", "device", "platform", "driver", "repeat",
            "ms_median", "ms_min", "ms_max", "gflops", "verified", "rel_error", "tolerance")
    # what a run measured, where it did: the rows checked, the output's stability, the
    # share of the device's peak, the bandwidth of a matrix-vector kernel
    extra = ("rows_checked", "stable", "overflows", "peak_fraction", "gbps")
    emulated = ((kernel.mma and not devmod.has_tf32_mma(queue.device))
                or (kernel.wgmma and not devmod.has_wgmma(queue.device)))
    if as_json:
        click.echo(json.dumps(verify.json_safe({key: r[key] for key in keys}
                                                | {"kernel_name": r["kernel_name"],
                                                   "emulated": bool(emulated)}
                                                | {key: r[key] for key in extra if key in r})))
    else:
        for line in show.run_lines(r, kernel, emulated, split_k, no_check, (trans_a, trans_b)):
            click.echo(line)
    if r["verified"] is False:
        sys.exit(1)


@main.command()
@_gemm_shape(default_size=2048)
@click.option("--shapes", default=None, metavar="MxNxK,...", callback=not_blank,
              help="tune each of these shapes in turn (instead of --size/--m/--n/--k), the "
                   "time limit split between them")
@click.option("--recorded", is_flag=True,
              help="tune the shapes gemm() recorded on this device while CLGEMM_RECORD_SHAPES=1 "
                   "was set (only --kernel's where --kernel is given)")
@click.option("--strategy", type=click.Choice(["grid", "random", "tpe", "cma"]), default=None,
              help="grid: every valid point; random; cma: CMA-ES over the ordered parameter "
                   "values; tpe: Optuna's Tree-structured Parzen Estimator (cma and tpe need "
                   "the tune extra: pip install \"clgemm[tune]\") [default: grid where the "
                   "budget covers the space, else cma, else random with a note where the extra "
                   "is missing]")
@click.option("--budget", type=Int(min=1), default=None,
              help="evaluations per shape, resumed ones included")
@click.option("--time-limit", type=Float(min=0), default=None,
              help="seconds for the search, for all shapes together: no evaluation starts "
                   "after it, the one timing on the device finishes (within --timeout) and "
                   "those still compiling are stopped")
@click.option("--repeat", type=Int(min=1, max=MAX_REPEAT), default=5, show_default=True,
              help="timed launches per configuration")
@click.option("--workers", type=Int(min=1, max=pool.MAX_WORKERS), default=None,
              help="compiling worker processes [default: one per core, as many as memory holds]")
@click.option("--timeout", type=Float(min=1), default=60.0, show_default=True,
              help="seconds a compile or a timed run may take before its worker is replaced")
@click.option("--seed", type=Int(0, 2**32 - 1), default=0, show_default=True,
              help="the search's random seed, 0 to 2^32 - 1")
@click.option("--fresh", is_flag=True, help="start over (the old log is kept, renamed)")
@_DEVICE
@click.option("--json", "as_json", is_flag=True, help="print a JSON summary (a line per shape)")
@click.option("--export-t4", type=click.Path(dir_okay=False, writable=True), default=None,
              callback=not_blank,
              help="also write every evaluation of this (device, kernel, shape) in the T4 "
                   "results format (Kernel Tuner, KTT, BAT); one shape only")
def tune(kernel, size, m, n, k, shapes, recorded, strategy, budget, time_limit, repeat, workers,
         timeout, seed, fresh, device_spec, as_json, export_t4) -> None:
    """Search a kernel's parameter space on this device; the winner goes into the tuning
    database that gemm() and `clgemm run` use."""
    from rich.console import Console

    from . import tune as tune_mod
    from .tunelog import to_t4
    queue = _queue(device_spec)   # a clear error for an unknown device, before any worker starts
    jobs = _tune_jobs(queue.device, kernel, size, m, n, k, shapes, recorded, workers)
    if export_t4:         # and for an export that could not be written, before any tuning
        if len(jobs) > 1:
            raise click.BadParameter("exports one shape's evaluations; tune one shape",
                                     param_hint="--export-t4")
        folder = Path(export_t4).resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise click.BadParameter(f"cannot write {export_t4}: {folder} is not a writable "
                                     f"folder", param_hint="--export-t4")
        if os.path.lexists(export_t4):     # the database, a tune log, an earlier export
            raise click.BadParameter(f"{export_t4} exists; choose another path or remove it "
                                     f"(an export never overwrites a file)",
                                     param_hint="--export-t4")
    console = Console(stderr=True)
    options = dict(device_spec=device_spec, strategy=strategy, budget=budget, repeat=repeat,
                   workers=workers, timeout=timeout, fresh=fresh, seed=seed)
    try:
        results = show.tune_with_progress(tune_mod, jobs, time_limit, options, console, as_json)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    except (tune_mod.WorkerSetupError, tune_mod.TuneBusy, tune_mod.MissingExtra) as e:
        raise click.ClickException(str(e)) from None
    except tune_mod.Terminated:
        console.print("terminated: every finished evaluation is in the log; the same command "
                      "resumes from it")
        raise
    except OSError as e:
        if not e.filename:
            raise
        raise click.ClickException(f"{e.strerror or e}: {e.filename}; every finished "
                                   f"evaluation is in the log, and the same command resumes "
                                   f"from it") from None
    except KeyboardInterrupt:
        console.print("interrupted: every finished evaluation is in the log; the same command "
                      "resumes from it")
        raise SystemExit(130) from None
    if export_t4:
        res = results[0]
        doc = to_t4(res.exported(), {"tool": "clgemm", "device": res.device, "kernel": res.kernel,
                                  "kernel_name": kernels.tunable(res.kernel).name, "m": res.shape[0],
                                  "n": res.shape[1], "k": res.shape[2], "log": res.log})
        _export(Path(export_t4), doc)
    if as_json:
        for res in results:
            click.echo(json.dumps(verify.json_safe(res.summary())))
    else:
        out = show.full_width_console()
        for res in results:
            show.print_tune(out, res)
        out.print(show.tune_table(results))
    if any(res.best is None for res in results):
        raise SystemExit(1)   # nothing recorded for a shape: a script running this can tell


def _export(path: Path, doc: dict) -> None:
    """The T4 export at `path`, or beside it where a file appeared there while the tune
    ran (--export-t4 never replaces a file; it was checked before the tune)."""
    where = path
    for nth in itertools.count(2):
        try:
            store.write_atomic(where, doc, replace=False)
            return
        except FileExistsError:
            alt = path.with_name(f"{path.stem}-{nth}{path.suffix}")
            click.echo(f"{where} appeared while tuning and is left as it is; the export goes "
                       f"to {alt}", err=True)
            where = alt


def _tune_jobs(dev, kernel, size, m, n, k, shapes, recorded,
               workers) -> list[tuple[str, int, int, int]]:
    """(kernel, m, n, k) to tune: one shape, --shapes, or the recorded ones."""
    from . import record
    if shapes and recorded:
        raise click.UsageError("give --shapes or --recorded, not both")
    given = click.get_current_context().get_parameter_source
    if (shapes or recorded) and (any(x is not None for x in (m, n, k))
                                 or given("size") is not click.core.ParameterSource.DEFAULT):
        raise click.UsageError("--size, --m, --n and --k give one shape; with --shapes or "
                               "--recorded leave them out")
    if recorded:
        only = kernel.key if given("kernel") is not click.core.ParameterSource.DEFAULT else None
        jobs = record.recorded(dev, only)
        if not jobs:
            raise click.UsageError(f"no shapes recorded on {db.device_key(dev)}"
                                   + (f" for kernel {only}" if only else "")
                                   + f" in {record.path()}: run the application with "
                                   f"{record.ENV}=1 first")
        # a shape an application ran may be too large to tune (each worker holds its own
        # operands): it is left out, and the others are tuned
        kept = []
        for job in jobs:
            try:
                pool.check_fits(dev, *job, workers or 1)
                kept.append(job)
            except ValueError as e:
                click.echo(f"left out: {e}", err=True)
        if not kept:
            raise click.UsageError(f"no shape recorded in {record.path()} can be tuned here")
        return kept
    if shapes is not None:
        return [(kernel.key, *dims) for dims in parse_shapes(shapes)]
    return [(kernel.key, m or size, n or size, k or size)]


@main.command()
@click.option("--kernels", "kernel_list", default="none", show_default=True, callback=not_blank,
              help="also time gemm() with these kernels named (clgemm-N), e.g. 5,7,8, 1-8 or "
                   "5,matvec-sweep (skipped where the operands do not take its form); gemm() "
                   "without a kernel (clgemm) always runs")
@click.option("--sizes", default=None, callback=not_blank,
              help="square sizes [default: 16,512,1024,2048,4096,8192 plus the shapes below; "
                   "on a CPU device those up to 2048^3's work]")
@click.option("--shapes", default=None, callback=not_blank,
              help="MxNxK,... [default with no --sizes: 4000^3, 8192x8192x256, 256x8192x8192, "
                   "4096x1024x4096, 1x4096x4096, 4096x1x4096, 4096x4096x1, and the odd set "
                   "5003x3001x2039, 7919x7919x769, 4096x32x4096, 1000x6000x800, 2x8192x8192]")
@click.option("--against", default="clblast,cublas", show_default=True, callback=not_blank,
              help="peers: clblast, cublas (comma-separated, or 'none')")
@click.option("--clblast-params", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Xgemm parameters from CLBlast's tuner: a JSON object of NAME: VALUE, or "
                   "{'sets': {label: {NAME: VALUE}}}")
@click.option("--repeat", type=Int(min=1, max=MAX_REPEAT), default=10, show_default=True)
@_DEVICE
@click.option("--out", "out_dir", default="results", show_default=True, callback=not_blank,
              help="results go to OUT/<device>/bench-<date>.json, .csv and .png")
def bench(kernel_list, sizes, shapes, against, clblast_params, repeat, device_spec, out_dir) -> None:
    """Time gemm() as users call it against CLBlast and cuBLAS (whole calls)."""
    from rich.table import Table

    from . import bench as benchmod
    queue = _queue(device_spec)
    keys = [] if kernel_list.strip() == "none" else kernel_keys(kernel_list)
    shape_list = [(s, s, s) for s in (parse_ints(sizes, "--sizes") if sizes is not None else [])]
    shape_list += parse_shapes(shapes) if shapes is not None else []
    shape_list = list(dict.fromkeys(shape_list))     # 16 in --sizes and 16x16x16: timed once
    left_out = []
    if sizes is None and shapes is None:
        shape_list, left_out = benchmod.default_shapes(queue.device)
    named = [p.strip() for p in against.split(",")]
    peers = [p for p in named if p and p != "none"]
    for p in peers:
        if p not in ("clblast", "cublas"):
            raise click.BadParameter(f"unknown peer {p!r}; choose clblast, cublas or none",
                                     param_hint="--against")
    if not peers and named != ["none"] or peers and "none" in named:
        raise click.BadParameter(f"{against!r}: give peers (clblast, cublas) or none",
                                 param_hint="--against")
    sets = None
    if clblast_params and "clblast" not in peers:
        raise click.BadParameter("sets CLBlast's parameters, and CLBlast is not among the "
                                 "peers: add clblast to --against", param_hint="--clblast-params")
    if clblast_params:
        try:
            doc = json.loads(open(clblast_params).read())
        except (ValueError, RecursionError) as e:
            why = "nested too deeply" if isinstance(e, RecursionError) else e
            raise click.BadParameter(f"not JSON: {why}", param_hint="--clblast-params") from None
        sets = doc["sets"] if isinstance(doc, dict) and "sets" in doc else {"tuned": doc}
        # values pass to CLBlast as size_t: one out of range would wrap around, unseen
        if not isinstance(sets, dict) or not sets or not all(
                isinstance(v, dict) and v and all(type(x) is int and 0 <= x < 2**31
                                                  for x in v.values())
                for v in sets.values()):
            raise click.BadParameter("expected a JSON object of NAME: integer (0 to 2^31-1), "
                                     "or {\"sets\": {label: {NAME: integer}}}, none empty",
                                     param_hint="--clblast-params")
    for folder in (Path(out_dir), benchmod.results_dir(queue, out_dir)):
        results_folder(folder)             # before measuring, not after
    console = show.full_width_console()
    console.print(f"method: {benchmod.METHOD}")
    if left_out:
        console.print(f"a CPU device: the default set stops at 2048^3's work; left out "
                      f"{', '.join(db.shape_key(*s) for s in left_out)} (name them with --sizes "
                      f"or --shapes)")

    def report_row(r):
        if r["status"] == "skipped":
            console.print(f"{r['m']}x{r['n']}x{r['k']} {r['contender']}: skipped ({r['reason']})")
        elif r["status"] == "failed":
            console.print(f"{r['m']}x{r['n']}x{r['k']} {r['contender']}: FAILED ({r['reason']})")
        elif r["contender"] == "copy":
            console.print(f"{r['m']}x{r['n']}x{r['k']} copy: {r['gbps']:.0f} GB/s")
        else:
            console.print(f"{r['m']}x{r['n']}x{r['k']} {r['contender']}: {r['call_ms_median']:.3f} ms "
                          f"a call, {r['call_gflops']:.0f} GFLOPS"
                          + ("" if r["verified"] else "  WRONG RESULT"))
    results = benchmod.Results(queue, Path(out_dir), "clgemm bench " + " ".join(sys.argv[2:]))
    try:
        rows = benchmod.bench(queue, [None, *keys], shape_list, peers, repeat, sets,
                              on_row=report_row, on_shape=results.write)
    except ValueError as e:
        results.discard()
        raise click.UsageError(str(e)) from None
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt) and results.paths:
            console.print(f"interrupted: the shapes measured so far are in {results.paths[0]}")
        results.discard()           # where nothing was measured
        raise
    table = Table(title="SGEMM whole calls (host wall-clock to synchronisation, median); "
                        "device spans beside")
    for col in ("shape", "contender", "ms/call", "GFLOPS", "vs cuBLAS", "vs CLBlast",
                "span GFLOPS", "check"):
        table.add_column(col, no_wrap=True)
    fmt = lambda v, f: "" if v is None else f.format(v)  # noqa: E731
    for r in rows:
        if r["status"] != "ok" or r["contender"] == "copy":
            continue
        table.add_row(f"{r['m']}x{r['n']}x{r['k']}", r["contender"], f"{r['call_ms_median']:.4f}",
                      f"{r['call_gflops']:.0f}", fmt(r.get("vs_cublas_call"), "{:.2f}"),
                      fmt(r.get("vs_clblast_call"), "{:.2f}"), fmt(r.get("gflops"), "{:.0f}"),
                      "ok" if r["verified"] else f"WRONG ({r['rel_error']:.1e})")
    console.print(table)
    paths, no_plot = results.finish(rows)
    for line in [f"wrote {path}" for path in paths] + ([no_plot] if no_plot else []):
        console.print(line)
    if any(r["contender"].startswith("clgemm") and (r["status"] == "failed" or (
            r["status"] == "ok" and not r["verified"])) for r in rows):
        sys.exit(1)


@main.command()
@click.option("--kernel", "kernel", default=kernels.DEFAULT_TRANSPOSE, callback=_kernel("transpose"),
              show_default=True, help="naive, local or shuffle")
@click.option("--size", type=Int(min=1), default=4096, show_default=True,
              help="rows = cols")
@click.option("--rows", type=Int(min=1), default=None)
@click.option("--cols", type=Int(min=1), default=None)
@click.option("--repeat", type=Int(min=1, max=MAX_REPEAT), default=None,
              help="timed launches per round (3 rounds, interleaved with the copy)")
@_DEVICE
@click.option("--param", "params", multiple=True, callback=param_pairs, metavar="NAME=VALUE")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def transpose(kernel, size, rows, cols, repeat, device_spec, params, as_json) -> None:
    """Time an out-of-place transpose against a plain device copy of the same bytes."""
    from .run import run_transpose
    queue = _queue(device_spec)
    rows, cols = rows or size, cols or size
    try:
        r = run_transpose(queue, rows, cols, kernel=kernel.key, params=params, repeat=repeat)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(json.dumps(verify.json_safe(r)))
    else:
        ps = " ".join(f"{a}={b}" for a, b in r["params"].items())
        shuffle = "" if not kernel.shuffle else (
            "  (shuffle EMULATED in local memory on this device)" if r["shuffle"] == "emulated"
            else f"  (shuffle: {r['shuffle']})")
        click.echo(f"kernel   transpose {r['kernel']}  {ps}{shuffle}")
        click.echo(f"shape    {rows} x {cols} -> {cols} x {rows}")
        click.echo(f"device   {r['device']} ({r['platform']}, driver {r['driver']})")
        click.echo(f"time     median {r['ms_median']:.4f} ms  min {r['ms_min']:.4f}  "
                   f"max {r['ms_max']:.4f}  ({r['repeat']} runs, profiling events)")
        copy = (f"device copy {r['copy_gbps']:.1f} GB/s; ratio {r['ratio_to_copy']:.2f}"
                if r["copy_gbps"] else "this platform gives device copies no time")
        click.echo(f"speed    {r['gbps']:.1f} GB/s (bytes read + written); {copy}")
        click.echo(f"check    {'PASS' if r['verified'] else 'FAIL'}: exact against numpy")
    if not r["verified"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
