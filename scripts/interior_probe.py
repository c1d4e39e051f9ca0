#!/usr/bin/env python3
"""Probe: a product whose sides are not tile multiples, computed as the padded whole call
(what gemm() does now) against an interior of whole 128-tiles read and written in place plus
its edge strips, each strip a gemm() call on blocks of the same matrices. Whole calls,
host wall clock to queue.finish(), interleaved rounds; every output checked against float64."""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clgemm


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4000x4000x4000")
    ap.add_argument("--tile", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx)
    rng = np.random.default_rng()
    rows = []
    for shape in args.shapes.split(","):
        m, n, k = map(int, shape.split("x"))
        ha = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        hb = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        a, b = cla.to_device(q, ha), cla.to_device(q, hb)
        ref = ha.astype(np.float64) @ hb.astype(np.float64)
        mi, ni = m // args.tile * args.tile, n // args.tile * args.tile
        pool = clgemm.memory_pool(q)

        def whole():
            return clgemm.gemm(q, a, b)

        def split():
            c = cla.empty(q, (m, n), np.float32, allocator=pool)
            clgemm.gemm(q, a[:mi], b[:, :ni], c[:mi, :ni])
            if ni < n:
                clgemm.gemm(q, a[:mi], b[:, ni:], c[:mi, ni:])
            if mi < m:
                clgemm.gemm(q, a[mi:], b, c[mi:, :])
            return c

        def interior():
            c = cla.empty(q, (m, n), np.float32, allocator=pool)
            clgemm.gemm(q, a[:mi], b[:, :ni], c[:mi, :ni])
            return c

        calls = {"whole": whole, "split": split, "interior_only": interior}
        sync = dict.fromkeys(calls, q.finish)
        try:
            import torch
            if torch.cuda.is_available():
                torch.backends.cuda.matmul.allow_tf32 = False
                x, y = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
                calls["cublas"], sync["cublas"] = (lambda: x @ y), torch.cuda.synchronize
        except ImportError:
            pass
        err = {}
        for name, f in list(calls.items())[:3]:
            out = f()
            out.fill(np.nan)
            out = f()
            got = out.get()
            if name in ("whole", "split"):
                err[name] = float(np.abs(got - ref).max() / np.abs(ref).max())
                assert err[name] < 1e-5, (name, err[name])
        times = {name: [] for name in calls}
        for _ in range(args.rounds):
            for name, f in calls.items():
                for _ in range(args.repeat):
                    sync[name]()
                    t0 = time.perf_counter()
                    f()
                    sync[name]()
                    times[name].append((time.perf_counter() - t0) * 1e3)
        plans = {f"{pm}x{pn}x{pk}": clgemm.Plan(q, pm, pn, pk).describe()
                 for pm, pn, pk in ((m, n, k), (mi, ni, k), (mi, n - ni, k), (m - mi, n, k))
                 if pm and pn}
        row = {"shape": shape, "interior": [mi, ni], "errors": err, "plans": plans,
               **{f"{name}_ms": statistics.median(t) for name, t in times.items()}}
        rows.append(row)
        print(json.dumps(row))
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
