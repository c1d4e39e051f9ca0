#!/usr/bin/env python3
"""Whole calls of clgemm.Plan variants at each shape, interleaved, beside cuBLAS's call.

A variant is a Plan made with other options or other heuristics thresholds than gemm()'s
defaults, so that a launch decision (a build, padding, split-K, the entry's parameters)
can be measured as users meet it, before it becomes a rule:

    python3 scripts/plans.py --shapes 1023x1023x1023,1500x1500x7000 \\
        --variant base: --variant copies:unaligned_max_volume=0 \\
        --variant "tiles:TSM=128;TSN=128;TSK=8;WPTM=16;WPTN=8;WIDTH=4;PAD=1;split_k=8"

A variant is NAME:ITEM;ITEM;... with ITEM one of: a heuristics threshold (NAME=VALUE, see
clgemm/thresholds.py DEFAULTS), split_k=N|auto, pad=auto|yes|no, kernel=KEY (KEY-NAME for
a source given as --source KEY:NAME=FILE), or a kernel
parameter in capitals (TSM=128; give all of the kernel's parameters: the ones left out
take the registry's defaults, not the tuned entry's). Each call is
plan(a, b) on device Arrays (dense, rows of k and n floats, as `clgemm bench` makes them)
plus queue.finish(), host wall-clock; each variant's output is checked against float64
on sampled rows first. Prints a table (median ms, x the first variant, x cuBLAS), then for
each later variant its geomean x the first where its plan differs and where it does not,
and, with --json, writes the rows with each plan's describe().
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

import clgemm
from clgemm import bench, choice, contenders, db, device, entries, kernels
from clgemm.thresholds import DEFAULTS, LIMITS
from job_summary import overall      # (scripts/ comes first on the path)


def variant(text: str) -> tuple[str, dict, dict, dict]:
    """(name, Plan options, kernel parameters, thresholds) of NAME:ITEM;ITEM;..."""
    name, sep, rest = text.partition(":")
    if not sep or not name:
        raise ValueError(f"{text!r}: a variant is NAME:ITEM;ITEM;... (ITEMs may be none)")
    options: dict = {}
    params: dict = {}
    thresholds: dict = {}
    for item in filter(None, (i.strip() for i in rest.split(";"))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"{item!r} in variant {name!r}: an item is KEY=VALUE")

        def number(kind):
            try:
                return kind(value)
            except ValueError:
                raise ValueError(f"{item!r} in variant {name!r}: {value!r} is not "
                                 f"{'an integer' if kind is int else 'a number'}") from None
        if key in DEFAULTS:
            low, high = LIMITS[key]
            thresholds[key] = number(float)
            if not low <= thresholds[key] <= high:
                raise ValueError(f"{item!r} in variant {name!r}: {key} takes values from "
                                 f"{low} to {high}")
        elif key == "split_k":
            options[key] = value if value == "auto" else number(int)
        elif key in ("pad", "kernel"):
            options[key] = value
        elif key.isupper():
            params[key] = number(int)
        else:
            raise ValueError(f"{key!r} in variant {name!r}: not a threshold ("
                             f"{', '.join(DEFAULTS)}), split_k, pad, kernel or a "
                             f"kernel parameter")
    return name, options, params, thresholds


def make_plan(queue, shape, options: dict, params: dict, thresholds: dict, p) -> clgemm.Plan:
    """A Plan made, and laid out by a first call, with `thresholds` over both the defaults
    and the device's database (whose thresholds would otherwise win: the H200's file
    carries its own); the database is read as before after it (a Plan keeps the layout its
    first call made)."""
    measured = db.thresholds
    try:
        db.thresholds = lambda dev, *limits: {**measured(dev, *limits), **thresholds}
        clear()
        plan = clgemm.Plan(queue, *shape, params=params or None, **options)
        plan(p.dev_a, p.dev_b)
        queue.finish()
    finally:
        db.thresholds = measured
        clear()
    return plan


def against_first(rows: list[dict], names: list[str]) -> list[str]:
    """Each later variant against the first over the shapes both ran, apart where its plan
    differs from the first's (the launches the variant changes) and where it does not (the
    rounds' noise): job_summary.overall's lines, x the first as the table gives it."""
    firsts = {(r["m"], r["n"], r["k"]): r for r in rows if r["variant"] == names[0]}
    lines = []
    for name in names[1:]:
        changed, same = [], []
        for r in rows:
            base = firsts.get((r["m"], r["n"], r["k"]))
            if r["variant"] != name or not base or not r.get("call_ms_median") \
                    or not base.get("call_ms_median"):
                continue
            ratio = base["call_ms_median"] / r["call_ms_median"]
            (same if r.get("plan") == base.get("plan") else changed).append(ratio)
        shapes = len(changed) + len(same)
        lines.append(f"{name} over {names[0]}, " + overall("plan changed", changed, shapes))
        lines.append(f"{name} over {names[0]}, " + overall("same plan (the rounds' noise)",
                                                           same, shapes))
    return lines


def clear() -> None:
    """Forget the device's facts and the entries chosen with them (choice.tuned_entry keeps
    its choices per database state, not per thresholds: a variant of near_within,
    wave_margin, tile_waste or latency_warps would otherwise reuse the first one's)."""
    choice.forget()


def write_rows(path: str, q: cl.CommandQueue, rows: list[dict]) -> None:
    """The rows so far, with the device and the command, replacing the file atomically."""
    tmp = Path(path).with_name(Path(path).name + ".part")
    with open(tmp, "w") as f:
        json.dump({"device": q.device.name.strip(), "driver": q.device.driver_version.strip(),
                   "command": " ".join(sys.argv), "rows": rows}, f, indent=1, default=str)
    tmp.replace(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--shapes", required=True, help="MxNxK,...")
    ap.add_argument("--variant", action="append", required=True, help="NAME:ITEM;ITEM;...")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10, help="calls a variant a round (more "
                    "where they last under 25 ms)")
    ap.add_argument("--no-cublas", action="store_true")
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--source", action="append", default=[], metavar="KERNEL:NAME=FILE",
                    help="register kernel KERNEL built from FILE as KERNEL-NAME, for a "
                         "variant's kernel=KERNEL-NAME (a probe of a kernel change)")
    args = ap.parse_args()
    if args.json and not os.access(Path(args.json).resolve().parent, os.W_OK):
        ap.error(f"--json {args.json}: its folder {Path(args.json).resolve().parent} does not "
                 f"exist or cannot be written (the rows are written after each shape)")
    for spec in args.source:
        base, _, rest = spec.partition(":")
        name, _, path = rest.partition("=")
        if base not in kernels.GEMM or not name or not Path(path).is_file():
            ap.error(f"--source {spec!r}: want KERNEL:NAME=FILE with a kernel of "
                     f"{', '.join(kernels.GEMM)} and an existing file")
        kernels.from_source(base, name, path)
    try:
        shapes = entries.shape_list(args.shapes)
        variants = [variant(v) for v in args.variant]
    except ValueError as e:
        ap.error(str(e))
    q = device.queue(device.select(args.device))
    rng = np.random.default_rng()
    rows = []
    for shape in shapes:
        p = contenders.Problem(q, *shape, rng)
        live = []
        for name, options, params, thresholds in variants:
            row = {"m": shape[0], "n": shape[1], "k": shape[2], "variant": name,
                   "options": options, "params_given": params, "thresholds": thresholds}
            try:
                plan = make_plan(p.plain, shape, options, params, thresholds, p)
                out = plan(p.dev_a, p.dev_b)
                err, ok = p.check(out.get()[p.rows])
                row.update(rel_error=err, verified=ok, plan=plan.describe())
                if not ok:
                    row.update(status="failed", reason="over tolerance")
                else:
                    live.append((row, lambda plan=plan: plan(p.dev_a, p.dev_b), p.plain.finish))
            except (ValueError, cl.Error) as e:
                row.update(status="failed", reason=f"{type(e).__name__}: {e}")
            rows.append(row)
        if not args.no_cublas:
            row = {"m": shape[0], "n": shape[1], "k": shape[2], "variant": "cublas"}
            try:
                c = contenders.cublas_contender(p)
                live.append((row, c.call, c.sync))
            except contenders.Skipped as e:
                row.update(status="skipped", reason=str(e))
            rows.append(row)
        times: dict[int, list[float]] = {id(r): [] for r, _, _ in live}
        for _ in range(args.rounds):
            for row, call, sync in live:
                times[id(row)].append(statistics.median(bench.wall(call, sync, args.repeat)))
        for row, _, _ in live:
            row.update(status="ok", call_ms_median=statistics.median(times[id(row)]),
                       call_ms_rounds=times[id(row)])
        if args.json:                  # after each shape: a run cut short keeps what ran
            write_rows(args.json, q, rows)
    print(f"{q.device.name.strip()} | {q.device.driver_version.strip()} | whole calls, "
          f"median of {args.rounds} interleaved rounds' medians (ms)")
    print(f"{'shape':<18} {'variant':<14} {'ms':>9} {'x first':>8} {'x cublas':>9}  plan")
    for shape in shapes:
        mine = [r for r in rows if (r["m"], r["n"], r["k"]) == tuple(shape)]
        ms = {r["variant"]: r.get("call_ms_median") for r in mine}
        first, cub = ms.get(variants[0][0]), ms.get("cublas")
        for r in mine:
            t = r.get("call_ms_median")
            d = r.get("plan") or {}
            what = (f"{d.get('params')} splits {d.get('splits')} padded {d.get('padded')} "
                    f"floats {d.get('floats')}" + (f" peel {d['peel']}" if d.get("peel") else "")
                    + (" c_rows" if d.get("c_rows") else "")
                    if d else r.get("reason", ""))
            print(f"{'x'.join(map(str, shape)):<18} {r['variant']:<14} "
                  f"{'-' if t is None else f'{t:.4f}':>9} "
                  f"{(first / t if t and first else float('nan')):8.3f} "
                  f"{(cub / t if t and cub else float('nan')):9.3f}  {what}")
    for line in against_first(rows, [v[0] for v in variants]):
        print(line)


if __name__ == "__main__":
    main()
