"""gemm()'s matrix-vector path (clgemm/matvec.py) at points of its work-group shapes and
slicing, as whole calls, interleaved with gemm()'s kernel-5 path and torch's a @ b
(cuBLAS, TF32 off, where torch has CUDA) over rounds; every result checked against float64.

    python3 probe/matvec_points.py --out $OUT/matvec-points.json [--shapes 1x4096x4096:row,...]

A point sets matvec.PARAMS and the matvec_groups threshold; "row" operands are row-major,
"t" has the matrix stored transposed (B as N x K for m = 1, A as K x M for n = 1).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clgemm
from clgemm import heuristics, launch, matvec

SHAPES = "1x4096x4096:row,1x8192x8192:row,1x4096x4096:t,4096x1x4096:row,8192x1x8192:row," \
         "4096x1x4096:t,1x1000x6000:row,6000x1x1000:row,1x64x64:row"
POINTS = [dict(CV=cv, LANES=lanes, LW=lw, RW=rw, UNROLL=u, groups=g)
          for cv, lanes, lw, rw, u, g in itertools.product(
              (32, 64, 128), (4, 8), (32, 64), (4, 8), (4, 8), (4, 64))
          if cv * lanes <= 1024 and lw * rw <= 1024]


def set_point(p: dict) -> None:
    matvec.PARAMS.update({k: v for k, v in p.items() if k != "groups"})
    heuristics.DEFAULTS["matvec_groups"] = p["groups"]
    launch._facts.clear()
    clgemm.clear_cache()


def call_ms(fn, sync, repeat: int) -> float:
    fn()
    sync()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--top", type=int, default=4, help="points carried to the interleaved rounds")
    ap.add_argument("--quick", action="store_true", help="every 13th point (a smoke test)")
    ap.add_argument("--out")
    args = ap.parse_args()
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx)
    rng = np.random.default_rng(11)
    points = POINTS[::13] if args.quick else POINTS
    rows = []
    for spec in args.shapes.split(","):
        dims, layout = spec.split(":")
        m, n, k = map(int, dims.split("x"))
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        ref, mag = a.astype(np.float64) @ b, np.abs(a) @ np.abs(b)
        t = layout == "t"
        # the operands as gemm() takes them: the matrix stored transposed where "t"
        da = cla.to_device(q, np.asfortranarray(a) if t and n == 1 else a)
        db = cla.to_device(q, np.asfortranarray(b) if t and m == 1 else b)

        def ok(out) -> float:
            got = out.get()
            err = float(np.max(np.abs(got - ref) / np.maximum(mag, 1e-30)))
            if not np.isfinite(err) or err > 1e-5:
                raise SystemExit(f"WRONG at {spec}: {err}")
            return err

        screen = []
        for p in points:
            set_point(p)
            err = ok(clgemm.gemm(q, da, db))
            screen.append((call_ms(lambda: clgemm.gemm(q, da, db), q.finish, args.repeat), p, err))
        screen.sort(key=lambda r: r[0])
        best = [p for _, p, _ in screen[:args.top]]
        contenders = {f"matvec{i}": (p, lambda: clgemm.gemm(q, da, db), q.finish)
                      for i, p in enumerate(best)}
        contenders["kernel5"] = (None, lambda: clgemm.gemm(q, da, db, kernel="5"), q.finish)
        if cuda:
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            if t:
                ta, tb = ((ta.T.contiguous().T, tb) if n == 1 else (ta, tb.T.contiguous().T))
            contenders["cublas"] = (None, lambda: ta @ tb, torch.cuda.synchronize)
        times = {c: [] for c in contenders}
        for _ in range(args.rounds):
            for c, (p, fn, sync) in contenders.items():
                if p is not None:
                    set_point(p)
                    ok(fn())
                times[c].append(call_ms(fn, sync, args.repeat))
        med = {c: statistics.median(v) for c, v in times.items()}
        ref_ms = med.get("cublas", med["kernel5"])
        rows.append(dict(shape=spec, screen=[dict(ms=ms, point=p, err=e) for ms, p, e in screen],
                         best=best, calls_ms=med))
        print(f"{spec:18} " + "  ".join(f"{c} {v * 1e3:7.1f} us ({ref_ms / v:4.2f}x)"
                                         for c, v in med.items()) + f"  best {best[0]}", flush=True)
    if args.out:
        dev = ctx.devices[0]
        Path(args.out).write_text(json.dumps(dict(
            device=dev.name, driver=dev.driver_version, date=time.strftime("%Y-%m-%d"),
            commit=os.environ.get("CLGEMM_COMMIT"), command=" ".join(sys.argv), rows=rows),
            indent=1))


if __name__ == "__main__":
    main()
