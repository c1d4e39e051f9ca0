"""What the command line shows: progress lines on a terminal, tune reports and tables
(rich), kept apart from the commands so that cli.py stays a thin layer."""

from __future__ import annotations

import contextlib
import json
import sys
import threading

from . import db


@contextlib.contextmanager
def stages(quiet: bool):
    """A progress line on stderr for a long run (rich): the stage, the time it has taken,
    and k of R while timing; it is gone once the run ends. Yields run_gemm's `progress`
    callback, or None where there is nothing to show: with `quiet` (--json) or where
    stderr is not a terminal."""
    from rich.console import Console
    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    lock, open_ = threading.Lock(), [True]
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  TextColumn("{task.fields[count]}"), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("starting", total=None, count="")

        def report(stage: str, done: int | None = None, total: int | None = None) -> None:
            with lock:          # timed launches report from the OpenCL runtime's threads
                if open_[0]:
                    bar.update(task, description=stage, completed=done or 0, total=total,
                               count="" if total is None else f"{done} of {total}",
                               refresh=True)
        try:
            yield report
        finally:
            with lock:
                open_[0] = False


def tune_with_progress(tune_mod, jobs, time_limit, options, console, as_json) -> list:
    """Run the jobs with a progress line per shape: evaluations, failures, the best so far
    and the time left (of the time limit where there is one, else estimated)."""
    import time

    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("fail {task.fields[failures]}"), TextColumn("{task.fields[best]}"),
               TextColumn("{task.fields[left]}"))
    with Progress(*columns, console=console, transient=as_json) as bar:
        tasks: dict[int, int] = {}
        started: dict[int, float] = {}
        current = [0]
        noted = set()

        def on_start(i, job):
            current[0] = i
            started[i] = time.monotonic()
            tasks[i] = bar.add_task(f"kernel {job[0]} {db.shape_key(*job[1:])}", total=None,
                                    failures=0, best="", left="")

        def progress(s: dict) -> None:
            i = current[0]
            if s.get("note") and s["note"] not in noted:
                noted.add(s["note"])
                bar.console.print(escape(s["note"]))
            b = s["best"]
            best = "" if b is None else f"best {b['gflops']:.0f} GFLOPS"
            if s.get("phase") == "finals":
                left = "re-measuring the best"
            elif s.get("seconds_left") is not None:
                left = f"{s['seconds_left']:.0f} s left"
            else:
                rate = s["done"] / max(1e-9, time.monotonic() - started[i])
                left = f"~{(s['total'] - s['done']) / rate:.0f} s left" if rate > 0 else ""
            bar.update(tasks[i], completed=s["done"], total=s["total"], failures=s["failures"],
                       best=best, left=left)

        if len(jobs) == 1:
            on_start(0, jobs[0])
            return [tune_mod.tune(*jobs[0], time_limit=time_limit, on_progress=progress, **options)]
        return tune_mod.tune_many(jobs, time_limit=time_limit, on_start=on_start,
                                  on_progress=progress, **options)


def full_width_console():
    """Standard output; when it is not a terminal, wide enough that no table is cut or
    wrapped (rich assumes 80 columns there)."""
    from rich.console import Console
    return Console() if sys.stdout.isatty() else Console(width=400)


def print_tune(out, res) -> None:
    """One shape's report: the space, the top configurations, failures, the winner, the
    split-K stage, and where the log and the database are."""
    from rich.markup import escape
    from rich.table import Table

    c = res.summary()
    m, n, k = res.shape
    if c["note"]:
        out.print(escape(c["note"]))
    if res.stopped_by == "busy":            # skipped: nothing was measured
        return
    out.print(f"space: {c['raw']} raw, {c['valid']} valid, {c['rejected']} rejected by constraints; "
              f"{len(res.records)} evaluated ({c['resumed']} resumed from the log, "
              f"{c['evaluated_now']} now in {c['seconds']:.1f} s = {c['configs_per_second']:.1f}/s, "
              f"{c['strategy']}, {c['workers']} workers)")
    table = Table(title=f"kernel {res.kernel} at {m}x{n}x{k}: top configurations")
    for col in ("GFLOPS", "median ms", "min ms", "max ms", "parameters"):
        table.add_column(col)
    for r in c["top"]:
        table.add_row(f"{r['gflops']:.0f}", f"{r['ms_median']:.4f}", f"{r['ms_min']:.4f}",
                      f"{r['ms_max']:.4f}", params_text(r["params"]))
    out.print(table)
    out.print("failures by reason: " + (", ".join(f"{s} {n}" for s, n in c["status_counts"].items()
                                                  if s != "ok") or "none"))
    if c["best"]:
        b = c["best"]
        out.print(f"winner after re-measuring the top five interleaved: {b['gflops']:.0f} GFLOPS, "
                  + params_text(b["params"])
                  + (f", k in {b['splits']} slice(s) (split-K)" if "splits" in b else ""))
    else:
        out.print(f"no winner: {c['no_winner_reason']} (the database is unchanged)")
    if c["split_stage"]:
        out.print("split-K stage (each finalist with each count of k slices, all in the same "
                  "interleaved rounds), GFLOPS:")
        for p in {json.dumps(r["params"]): r["params"] for r in c["split_stage"]}.values():
            out.print("  " + params_text(p) + ": " + ", ".join(
                (f"{r['splits']}{' (its only count)' if r.get('only_count') else ''}: "
                 if "splits" in r else "stage ")
                + (f"{r['gflops']:.4g}" if r["status"] == "ok" else r["status"])
                + (f" ({escape(r['error'][-200:])})" if "error" in r else "")
                for r in c["split_stage"] if r["params"] == p))
    out.print(f"log: {c['log']}" + (f"\ndatabase: {c['database']}" if c["database"] else ""))


def params_text(p: dict) -> str:
    return " ".join(f"{a}={v}" for a, v in p.items())


def tune_table(results):
    """The closing table: per shape, the winner against the registry defaults and against
    what gemm() launched there before (a tuned entry of another shape or of this one),
    each timed in the same rounds as the winner's figure where it could be (the split
    stage's, else the re-measure's)."""
    from rich.table import Table

    table = Table(title="best per shape (speed-ups: the winner's GFLOPS over each)")
    for col in ("kernel", "shape", "evaluated", "best GFLOPS", "vs defaults", "vs before",
                "before", "winner"):
        table.add_column(col)

    def ratio(best, ref):
        g = (ref or {}).get("gflops")
        return f"{best['gflops'] / g:.2f}x" if best and g else "-"
    for res in results:
        refs, best = res.references, res.best
        before = refs.get("before")
        where = (f"tuned at {before['tuned_at']}" if before else "the defaults")
        if before and before.get("tuned_on"):
            where += f" on {db.device_name(before['tuned_on'])}"
        table.add_row(res.kernel, db.shape_key(*res.shape), str(len(res.records)),
                      f"{best['gflops']:.0f}" if best else "none",
                      ratio(best, refs.get("defaults")),
                      ratio(best, before or refs.get("defaults")), where,
                      (params_text(best["params"]) + (f" splits={best['splits']}"
                                                        if "splits" in best else ""))
                      if best else (res.no_winner_reason() or ""))
    return table


def device_lines(spec: str, d: dict) -> list[str]:
    """`clgemm devices`'s lines for one device (device.describe's facts)."""
    out: list[str] = []
    peak = f"{d['fp32_peak_gflops'] / 1e3:.1f} TFLOPS" if d["fp32_peak_gflops"] else "unknown"
    out.append(f"[{spec}] {d['name']}  ({d['platform']}, driver {d['driver']}, {d['type']})")
    out.append(f"    compute units {d['compute_units']} @ {d['max_clock_mhz']} MHz, "
               f"FP32 peak {peak}"
               + (f", compute capability {d['compute_capability']}" if d["compute_capability"] else ""))
    out.append(f"    global {d['global_mem_bytes'] / 2**30:.1f} GiB, local "
               f"{d['local_mem_bytes'] / 2**10:.0f} KiB, max alloc "
               f"{d['max_alloc_bytes'] / 2**30:.1f} GiB, max work-group {d['max_work_group_size']}")
    shuffle = {"nvidia-ptx": "inline PTX shfl.sync", "khr": "cl_khr_subgroup_shuffle",
               "intel": "cl_intel_subgroups", "emulated": "none (emulated in local memory)"}
    out.append(f"    fp64 {'yes' if d['fp64'] else 'no'}, sub-group shuffle: {shuffle[d['shuffle']]}, "
               f"TF32 tensor-core MMA (kernel 7): "
               + ("inline PTX mma.sync" if d["tf32_mma"] else "none (emulated in local memory)")
               + ", warpgroup MMA (kernel 8): "
               + ("sm_90a wgmma" if d["wgmma"] else "none (emulated in local memory)"))
    if d["local_mem_usable_bytes"] != d["local_mem_bytes"]:
        out.append(f"    static local arrays of up to {d['local_mem_usable_bytes'] / 2**10:.0f} KiB "
                   f"run (probed; the query says {d['local_mem_bytes'] / 2**10:.0f} KiB)")
    if d["work_group_stack_bytes"] is not None:
        out.append(f"    a work-group's stack: {d['work_group_stack_bytes'] / 2**20:.1f} MiB (pocl keeps "
                   f"values that live across a barrier there; `ulimit -s` sets it)")
    return out


def run_lines(r: dict, kernel, emulated: bool, split_k: int | str, no_check: bool,
              trans: tuple[bool, bool]) -> list[str]:
    """`clgemm run`'s report of run_gemm's result `r` for `kernel` (a registry entry):
    what ran, where, how fast, whether it checked out; `emulated`: its MMAs are emulated
    on this device."""
    out: list[str] = []
    ps = " ".join(f"{a}={b}" for a, b in r["params"].items())
    base, _, given = r["params_source"].partition("+")
    sibling = f"kernel {r['tuned_kernel']} on " if r["tuned_kernel"] not in (None, r["kernel"]) else ""
    device = f"{db.device_name(r['tuned_on'])} (the same architecture)" if r.get("tuned_on") \
        else "this device"
    src = {"tuned": f"tuned for {sibling}{device} at {r['tuned_at']}", "defaults": "registry defaults",
           "given": "as given"}[base] + (", some as given" if given else "")
    slow = "  (MMA EMULATED in local memory on this device: slow)" if emulated else ""
    name = f"{r['kernel_name']}: " if r["kernel_name"] != r["kernel"] else ""
    out.append(f"kernel   {r['kernel']} ({name}{kernel.technique}){slow}")
    out.append(f"params   {ps}  [{src}]")
    ops = f"  alpha={r['alpha']:g} beta={r['beta']:g}" + (" op(A)=A^T" if trans[0] else "") + \
        (" op(B)=B^T" if trans[1] else "")
    out.append(f"shape    M={r['m']} N={r['n']} K={r['k']}{ops}")
    out.append(f"device   {r['device']} ({r['platform']}, driver {r['driver']})")
    split = f", k cut into {r['splits']} slices (split-K)" if r["splits"] > 1 else ""
    relaid = ", A turned K-major by a device transpose" if r["a_kmajor"] else ""
    if r["tail"]:
        split += (f", tiles from {r['tail'][0]} (the last wave) each in {r['tail'][1]} "
                  f"pieces of k")
    steps = f", {r['launches']} kernels each{split}{relaid}" if r["launches"] > 1 else ""
    steps += ", tiles down columns" if r["columns_first"] else ""
    steps += ", A and B read a float at a time" if r.get("floats") else ""
    if r.get("peel"):
        steps += (f", C's first {r['peel'][0]} rows and {r['peel'][1]} columns in whole tiles,"
                  f" the rest apart")
    runs = f"{r['repeat']} run{'s' if r['repeat'] != 1 else ''}"
    out.append(f"time     median {r['ms_median']:.4f} ms  min {r['ms_min']:.4f}  "
               f"max {r['ms_max']:.4f}  ({runs} after a warm-up{steps}, profiling events)")
    if split_k != "auto" and r["splits"] != split_k:
        out.append(f"split-K  {r['splits']} slice{'s' if r['splits'] > 1 else ''} ran, not "
                   f"the {split_k} asked: a slice holds whole tiles of k, as many in each "
                   f"but the last")
    # the tensor-core kernels' products are not FFMAs: their share of the FFMA peak can
    # pass 100% and says only how they compare with it
    against = " FFMA peak; its products run on the tensor cores" \
        if kernel.mma or kernel.wgmma else " FP32 peak"
    peak = f"  ({100 * r['peak_fraction']:.1f}% of the{against})" \
        if "peak_fraction" in r else ""
    out.append(f"speed    {r['gflops']:.1f} GFLOPS at the median{peak}")
    if "gbps" in r:        # a matrix-vector kernel: memory bounds it
        out.append(f"memory   {r['gbps']:.1f} GB/s (the matrix read once, the vectors)")
    if no_check:
        out.append("check    skipped")
    else:
        status = "PASS" if r["verified"] else "FAIL"
        extra = "" if r.get("stable", True) else " (output changed between runs: race?)"
        if r.get("overflows"):
            extra += " (the exact product exceeds float32's range: its float32 result overflows)"
        out.append(f"check    {status}: every element within {r['tolerance']:.2e} = "
                   f"max(16, 4*sqrt(K)) * eps32 of its terms' scale (relative Frobenius "
                   f"error {r['rel_error']:.2e}), {r['rows_checked']} of {r['m']} rows "
                   f"against float64{extra}")
    return out
