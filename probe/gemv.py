"""Matrix-vector kernels (probe/gemv.cl) for products with m = 1 or n = 1: verified on
any device, then timed against gemm()'s current path and cuBLAS as whole calls.

    python3 probe/gemv.py verify                       # any OpenCL device (pocl)
    python3 probe/gemv.py time --out $OUT/gemv.json    # the H200: spans of a small grid
        of parameters per shape, then whole calls of the best three, gemm() and torch's
        a @ b (cuBLAS, TF32 off), interleaved over rounds

A case is (form, R, L): sweep reads X as R rows of L (v down the rows), dot as R rows of L
(v along a row). gemm()'s m = 1 with B row-major is sweep(R=K, L=N); with B stored N x K
dot(R=N, L=K); n = 1 with A row-major dot(R=M, L=K); with A stored K x M sweep(R=K, L=M).
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
import pyopencl.tools as clt

HERE = Path(__file__).resolve().parent
SRC = (HERE / "gemv.cl").read_text()


class Gemv:
    """One build of a form and its launches for one case."""

    def __init__(self, ctx, form, R, L, vw=4, S=1, vcontig=False, **p):
        self.form, self.R, self.L, self.vw, self.S = form, R, L, vw, S
        self.p = p
        opts = [f"-DVW={vw}"] + [f"-D{k}={v}" for k, v in p.items()]
        if vcontig:
            opts.append("-DVCONTIG")
        prg = cl.Program(ctx, SRC).build(options=opts)
        self.knl = getattr(prg, "gemv_" + form)
        self.red = prg.gemv_reduce
        if form == "sweep":
            cv, lanes = p.get("CV", 64), p.get("LANES", 4)
            lv = (L + vw - 1) // vw
            self.local = (cv, lanes, 1)
            self.glob = (-(-lv // cv) * cv, lanes, S)
            self.n = L
        else:
            lw, rw = p.get("LW", 32), p.get("RW", 8)
            self.local = (lw, rw, 1)
            self.glob = (lw, -(-R // rw) * rw, S)
            self.n = R

    def __call__(self, q, X, ldx, v, incv, y, incy, alpha=1.0, beta=0.0, W=None):
        f32, i32 = np.float32, np.int32
        if self.S > 1 and W is None:
            raise ValueError("S > 1 needs a workspace")
        Wb = W if W is not None else y
        ev = self.knl(q, self.glob, self.local, i32(self.R), i32(self.L), f32(alpha),
                      X, i32(ldx // self.vw), v, i32(incv), f32(beta), y, i32(incy),
                      Wb, i32(self.n))
        if self.S > 1:
            ev = self.red(q, (-(-self.n // 64) * 64,), (64,), i32(self.n), i32(self.S),
                          f32(alpha), Wb, i32(self.n), f32(beta), y, i32(incy))
        return ev


def reference(form, X, v, y0, alpha, beta):
    """float64 result, and the sums of magnitudes that bound its rounding error."""
    X64, v64 = X.astype(np.float64), v.astype(np.float64)
    if form == "sweep":
        s, mag = v64 @ X64, np.abs(v64) @ np.abs(X64)
    else:
        s, mag = X64 @ v64, np.abs(X64) @ np.abs(v64)
    return alpha * s + (beta * y0.astype(np.float64) if beta else 0.0), mag


def run_case(ctx, q, rng, form, R, L, vw, S, ld_extra, incv, incy, alpha, beta, p,
             vcontig=False):
    ldx = L + ld_extra
    if vw == 4:
        ldx = -(-ldx // 4) * 4
    X = rng.uniform(-1, 1, (R, ldx)).astype(np.float32)
    X[:, L:] = np.nan                       # padding must never reach a result
    nv = R if form == "sweep" else L
    ny = L if form == "sweep" else R
    vfull = np.full(nv * incv, np.nan, np.float32)
    vfull[::incv] = rng.uniform(-1, 1, nv).astype(np.float32)
    yfull = np.full(ny * incy, np.nan if beta == 0 else 0, np.float32)
    if beta:
        yfull[::incy] = rng.uniform(-1, 1, ny).astype(np.float32)
    y0 = yfull[::incy].copy()
    g = Gemv(ctx, form, R, L, vw=vw, S=S, vcontig=vcontig, **p)
    mf = cl.mem_flags
    Xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=X)
    vb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=vfull)
    yb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=yfull)
    Wb = cl.Buffer(ctx, mf.READ_WRITE, 4 * S * ny) if S > 1 else None
    g(q, Xb, ldx, vb, incv, yb, incy, alpha, beta, Wb)
    out = np.empty_like(yfull)
    cl.enqueue_copy(q, out, yb)
    q.finish()
    want, mag = reference(form, X[:, :L], vfull[::incv], y0, alpha, beta)
    got = out[::incy]
    bound = 4 * np.finfo(np.float32).eps * (max(nv, 4) * mag * abs(alpha) + (abs(beta) * np.abs(y0) if beta else 0)) + 1e-30
    ok = bool(np.all(np.isfinite(got)) and np.all(np.abs(got - want) <= bound))
    # elements between strided outputs keep their poison: nothing else was written
    if incy > 1:
        ok &= bool(np.all(np.isnan(out[np.arange(out.size) % incy != 0])) if beta == 0 else
                   np.all(out[np.arange(out.size) % incy != 0] == 0))
    return ok, float(np.max(np.abs(got - want) / np.maximum(mag, 1e-30)))


def verify(args):
    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx)
    rng = np.random.default_rng(args.seed)
    sizes = [1, 2, 3, 5, 7, 31, 64, 97, 130, 257, 1001]
    fails, n = [], 0
    for form in ("sweep", "dot"):
        for R, L in itertools.product(sizes, repeat=2):
            if R * L > 300_000:
                continue
            vw = 4 if (R + L) % 3 else 1
            S = (1, 2, 3, 7)[(R * 7 + L) % 4]
            p = (dict(CV=32, LANES=4, UNROLL=4) if form == "sweep" else
                 dict(LW=16, RW=4, UNROLL=4))
            incv, incy = (1, 1) if (R + 2 * L) % 5 else (3, 2)
            alpha, beta = ((1.0, 0.0), (0.5, 2.0), (-1.5, 1.0))[(R + L) % 3]
            vcontig = form == "dot" and vw == 4 and incv == 1
            ok, err = run_case(ctx, q, rng, form, R, L, vw, S, (R % 3), incv, incy, alpha,
                               beta, p, vcontig)
            n += 1
            if not ok:
                fails.append((form, R, L, vw, S, incv, incy, alpha, beta, err))
    for f in fails:
        print("FAIL", f)
    print(f"{n - len(fails)}/{n} cases agree with float64 on {q.device.name}")
    return 1 if fails else 0


# ---- timing on the GPU ---------------------------------------------------------------

SHAPES = [  # (m, n, k, layout): "row" row-major operands, "t" B stored N x K (m = 1) or
    (1, 4096, 4096, "row"), (1, 8192, 8192, "row"), (1, 4096, 4096, "t"),  # A stored K x M
    (4096, 1, 4096, "row"), (8192, 1, 8192, "row"), (4096, 1, 4096, "t"),
    (1, 1000, 6000, "row"), (6000, 1, 1000, "row")]


def case_of(m, n, k, layout):
    if m == 1:
        return ("sweep", k, n) if layout == "row" else ("dot", n, k)
    return ("dot", m, k) if layout == "row" else ("sweep", k, m)


def grid(form):
    if form == "sweep":
        for cv, lanes, u, S in itertools.product((32, 64, 128), (2, 4, 8), (4, 8),
                                                 (1, 2, 4, 8, 16, 32)):
            if cv * lanes <= 1024:
                yield dict(CV=cv, LANES=lanes, UNROLL=u), S
    else:
        for lw, rw, u, S in itertools.product((32, 64, 128), (2, 4, 8), (4, 8), (1, 2, 4)):
            if lw * rw <= 1024:
                yield dict(LW=lw, RW=rw, UNROLL=u), S


def span_ms(q, fn, repeat=20):
    fn()
    q.finish()
    ts = []
    for _ in range(repeat):
        m0 = cl.enqueue_marker(q)
        fn()
        m1 = cl.enqueue_marker(q)
        m1.wait()
        ts.append((m1.profile.end - m0.profile.start) * 1e-6)
    return statistics.median(ts)


def call_ms(sync, fn, repeat=50):
    fn()
    sync()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def timing(args):
    import clgemm
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    ctx = cl.create_some_context(interactive=False)
    pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    q = cl.CommandQueue(ctx)
    pool = clt.MemoryPool(clt.ImmediateAllocator(q))
    rng = np.random.default_rng(args.seed)
    rows = []
    shapes = SHAPES if not args.shapes else [
        (*map(int, t.split(":")[0].split("x")), t.split(":")[1]) for t in args.shapes.split(",")]
    for m, n, k, layout in shapes:
        form, R, L = case_of(m, n, k, layout)
        X = rng.uniform(-1, 1, (R, L)).astype(np.float32)
        vec = rng.uniform(-1, 1, R if form == "sweep" else L).astype(np.float32)
        Xd, vd = cla.to_device(q, X), cla.to_device(q, vec)
        ny = L if form == "sweep" else R
        want = (vec.astype(np.float64) @ X if form == "sweep" else X.astype(np.float64) @ vec)
        mag = np.abs(vec) @ np.abs(X) if form == "sweep" else np.abs(X) @ np.abs(vec)
        W = cla.empty(q, 64 * ny, np.float32)
        spans = []
        for p, S in (list(grid(form))[::17] if args.quick else grid(form)):
            if form == "dot" and S > 1 and R >= 1024:
                continue
            g = Gemv(ctx, form, R, L, S=S, vcontig=form == "dot", **p)
            y = cla.empty(q, ny, np.float32)
            y.fill(np.nan)
            g(q, Xd.data, L, vd.data, 1, y.data, 1, W=W.data)
            got = y.get()
            err = float(np.max(np.abs(got - want) / mag))
            if not np.isfinite(err) or err > 1e-5:
                print(f"WRONG {m}x{n}x{k} {layout} {p} S={S}: {err}", flush=True)
                continue
            ms = span_ms(pq, lambda: g(pq, Xd.data, L, vd.data, 1, y.data, 1, W=W.data))
            spans.append((ms, p, S, err))
        spans.sort(key=lambda t: t[0])
        best = spans[:3]
        # operands as gemm() and torch take them
        if m == 1:
            a = vd.reshape(1, k)
            b = Xd if layout == "row" else Xd.T          # Xd is N x K in "t"
        else:
            a = Xd if layout == "row" else Xd.T          # Xd is K x M in "t"
            b = vd.reshape(k, 1)
        if cuda:                    # the same operands, as torch tensors of the same layout
            tX, tv = torch.from_numpy(X).cuda(), torch.from_numpy(vec).cuda()
            if m == 1:
                ta, tb = tv.reshape(1, k), (tX if layout == "row" else tX.T)
            else:
                ta, tb = (tX if layout == "row" else tX.T), tv.reshape(k, 1)
        contenders = {}
        for i, (ms, p, S, err) in enumerate(best):
            g = Gemv(ctx, form, R, L, S=S, vcontig=form == "dot", **p)

            def call(g=g):
                y = cla.empty(q, ny, np.float32, allocator=pool)
                Wc = cla.empty(q, g.S * ny, np.float32, allocator=pool) if g.S > 1 else None
                g(q, Xd.data, L, vd.data, 1, y.data, 1, W=None if Wc is None else Wc.data)
                return y
            contenders[f"gemv{i}"] = (call, q.finish)
        contenders["gemm"] = (lambda: clgemm.gemm(q, a, b), q.finish)
        if cuda:
            contenders["cublas"] = (lambda: ta @ tb, torch.cuda.synchronize)
        res = {c: [] for c in contenders}
        for _ in range(args.rounds):
            for c, (fn, sync) in contenders.items():
                res[c].append(call_ms(sync, fn))
        gspan = span_ms(pq, lambda: clgemm.gemm(pq, a, b))
        row = dict(m=m, n=n, k=k, layout=layout, form=form,
                   spans=[dict(ms=ms, params=p, S=S, err=err) for ms, p, S, err in spans[:10]],
                   calls={c: statistics.median(v) for c, v in res.items()}, gemm_span=gspan,
                   gbps_best_span=4 * R * L / spans[0][0] / 1e6 if spans else None)
        rows.append(row)
        cb = row["calls"].get("cublas", row["calls"]["gemm"])
        print(f"{m}x{n}x{k} {layout:3} {form:5} best span {spans[0][0] * 1e3:6.1f} us "
              f"({row['gbps_best_span']:.0f} GB/s) {spans[0][1]} S={spans[0][2]} | calls us: "
              + " ".join(f"{c} {v * 1e3:.1f} ({cb / v:.2f}x)" for c, v in row["calls"].items()),
              flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(dict(
            device=ctx.devices[0].name, driver=ctx.devices[0].driver_version,
            date=time.strftime("%Y-%m-%d"), commit=os.environ.get("CLGEMM_COMMIT"),
            command=" ".join(sys.argv), rows=rows), indent=1))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("verify", "time"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    ap.add_argument("--shapes", help="MxNxK:LAYOUT,... (LAYOUT row or t) instead of the default set")
    ap.add_argument("--quick", action="store_true", help="a few parameter points (a smoke test)")
    args = ap.parse_args()
    sys.exit(verify(args) if args.mode == "verify" else timing(args))


if __name__ == "__main__":
    main()
