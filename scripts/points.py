"""Time parameter points of one GEMM kernel against each other, in one process, interleaved.

Each round runs every point at every shape through `run_gemm` (as `clgemm run` does:
fresh uniform[-1, 1) operands on the device, a NaN-poisoned output verified against
float64, then the profiling-event median of --repeat launches), in turn, so that drifts
of clock or temperature fall on every point alike. A point may name another version of
the kernel's source, given as --source NAME=FILE and written NAME:PARAMS (the older file
of a kernel being changed, for an A/B at equal parameters); SPLIT_K=S in a point is not a
parameter but the launch's count of k slices (kernels 5 and 6). Prints one line per point and
shape (median over rounds, registers per work-item from the compiler where it reports
them) and writes every run to --out as JSON, with its wall-clock start and end (to match
against `SMI=1`'s samples of clocks and power).

    python3 scripts/points.py --kernel 7 --shapes 4096x4096x4096,8192x8192x8192 \\
        --source old=old7.cl --points "old:TSM=128,TSN=64;TSM=128,TSN=64,FOLD=8" --rounds 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import pyopencl as cl

from clgemm import build, entries, kernels, store
from clgemm.run import run_gemm


def parse_point(text: str) -> tuple[str | None, dict[str, int]]:
    source, _, body = text.rpartition(":")
    params = {}
    for item in filter(None, body.split(",")):
        name, _, value = item.partition("=")
        if not value.lstrip("-").isdigit():
            raise SystemExit(f"point {text!r}: {item!r} is not NAME=INTEGER")
        params[name.strip()] = int(value)
    return (source or None), params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--points", required=True, help="[SOURCE:]NAME=V,NAME=V;... (';' between points)")
    ap.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    ap.add_argument("--source", action="append", default=[], help="NAME=FILE (repeatable)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    try:
        args.shapes = entries.shape_list(args.shapes)
    except ValueError as e:
        ap.error(f"--shapes: {e}")

    base = kernels.get(args.kernel)
    variants = {None: base}
    for spec in args.source:
        name, _, path = spec.partition("=")
        variants[name] = kernels.from_source(base.key, name, path)
    points = [parse_point(p) for p in args.points.split(";") if p.strip()]
    for src, _ in points:
        if src not in variants:
            raise SystemExit(f"no --source named {src!r}")

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    runs, regs = [], {}
    for rnd in range(args.rounds):
        for i, (src, params) in enumerate(points):
            kern = variants[src]
            kparams = {p: v for p, v in params.items() if p != "SPLIT_K"}   # SPLIT_K: a count
            if i not in regs:
                try:
                    resolved = kern.resolve(kparams, kern.defaults_for(queue.device))
                except ValueError as e:
                    raise SystemExit(f"point {i} ({params}): {e}") from None
                fp = build.footprint(ctx, kern, resolved)
                regs[i] = None if fp is None else fp[0]
            for m, n, k in args.shapes:
                began = time.time()
                try:
                    r = run_gemm(queue, m, n, k, kernel=kern.key, params=kparams,
                                 repeat=args.repeat, split_k=params.get("SPLIT_K", "auto"))
                except Exception as e:   # a point that does not build or fit: say so, go on
                    r = {"error": f"{type(e).__name__}: {e}"}
                r.update(point=i, source=src, asked=params, round=rnd, shape=f"{m}x{n}x{k}",
                         registers=regs[i], began=began, ended=time.time())
                runs.append(r)
                print(json.dumps({k2: r.get(k2) for k2 in ("point", "source", "asked", "shape",
                      "gflops", "rel_error", "verified", "registers", "error")}), flush=True)

    print("\npoint  source  registers  shape  GFLOPS(median over rounds)  rel_error  verified  params")
    for i, (src, params) in enumerate(points):
        for shape in dict.fromkeys(r["shape"] for r in runs):
            mine = [r for r in runs if r["point"] == i and r["shape"] == shape and "gflops" in r]
            if not mine:
                err = next((r["error"] for r in runs if r["point"] == i and "error" in r), "?")
                print(f"{i:5d}  {src or '-':6s}  {'':9s}  {shape}  FAILED {err[:120]}")
                continue
            print(f"{i:5d}  {src or '-':6s}  {regs[i] or '-'!s:9s}  {shape}  "
                  f"{statistics.median(r['gflops'] for r in mine):9.0f}  "
                  f"{max(r['rel_error'] or 0 for r in mine):.2e}  "
                  f"{all(r['verified'] for r in mine)!s:5s}  {mine[0]['params']} "
                  f"slices {mine[0].get('splits')}")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d"), "commit": store.commit(Path(__file__).resolve().parents[1]),
            "command": " ".join(["python3", "scripts/points.py"] + sys.argv[1:]),
            "device": queue.device.name, "driver": queue.device.driver_version, "runs": runs},
            indent=1, default=str))


if __name__ == "__main__":
    main()
