"""Probe: kernel-8 candidate (probe/k8.cl, wgmma through patched PTX) built, checked
against float64 and timed (profiling-event spans, back to back) against kernel 7's tuned
point through clgemm's run_gemm, interleaved, at the given shapes."""
import re, statistics, sys, time
import numpy as np
import pyopencl as cl
from clgemm.run import run_gemm
from clgemm.verify import rel_error

def patched_program(ctx, dev, src, opts):
    prg = cl.Program(ctx, src).build(options=opts)
    ptx = prg.get_info(cl.program_info.BINARIES)[0].decode().rstrip("\0")
    ptx = re.sub(r"\.target\s+sm_\d+a?", ".target sm_90a", ptx).replace("// SM90A: ", "")
    prg2 = cl.Program(ctx, [dev], [ptx.encode()]).build(options="-cl-nv-verbose")
    log = prg2.get_build_info(dev, cl.program_build_info.LOG)
    print("   ", " | ".join(l.strip() for l in log.splitlines() if "egisters" in l or "spill" in l or "arn" in l or "erformance" in l or "wgmma" in l)[:1500])
    import os
    if os.environ.get("OUT"):
        pass
    return prg2

def main():
    shapes = [tuple(int(x) for x in s.split("x")) for s in (sys.argv[1] if len(sys.argv) > 1 else "4096x4096x4096,8192x8192x8192").split(",")]
    variants = sys.argv[2].split(";") if len(sys.argv) > 2 else ["FOLD=32", "FOLD=16"]
    dev = [d for p in cl.get_platforms() for d in p.get_devices() if "NVIDIA" in p.name][0]
    ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    progs = {}
    for v in variants:
        items = [x for x in v.split(",") if x]
        path = next((x[4:] for x in items if x.startswith("src=")), "probe/k8.cl")
        opts = [f"-D{x}" for x in items if not x.startswith("src=")] + ["-Ikernels"]
        print("build", v)
        try:
            progs[v] = cl.Kernel(patched_program(ctx, dev, open(path).read(), opts), "gemm")
        except Exception as e:
            print("   FAILED", str(e)[:3000])
    rng = np.random.default_rng(0)
    res = {}
    for (m, n, k) in shapes:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        mf = cl.mem_flags
        da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
        db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
        dc = cl.Buffer(ctx, mf.READ_WRITE, size=m * n * 4)
        rows = rng.choice(m, 48, replace=False)
        ref = a[rows].astype(np.float64) @ b.astype(np.float64)
        for v, knl in progs.items():
            knl.set_args(np.int32(m), np.int32(n), np.int32(k), np.float32(1), da, np.int32(k), db, np.int32(n), np.float32(0), dc, np.int32(n))
            c = np.full((m, n), np.nan, np.float32); cl.enqueue_copy(q, dc, c)
            cl.enqueue_nd_range_kernel(q, knl, (n // 128 * 256, m // 128), (256, 1)); cl.enqueue_copy(q, c, dc); q.finish()
            err = float(rel_error(c[rows], ref))
            print(f"k8 {v} {m}x{n}x{k}: rel. error {err:.2e} nan {int(np.isnan(c).sum())}")
            res[(v, (m, n, k))] = {"err": err, "ms": []}
        for rnd in range(3):
            for v, knl in progs.items():
                evs = [cl.enqueue_nd_range_kernel(q, knl, (n // 128 * 256, m // 128), (256, 1)) for _ in range(12)]
                q.finish()
                res[(v, (m, n, k))]["ms"] += [(e.profile.end - e.profile.start) * 1e-6 for e in evs[2:]]
            r7 = run_gemm(q, m, n, k, kernel="7", params=dict(TSM=128, TSN=128, TSK=32, WM=64, WN=32, FOLD=16), repeat=10)
            res.setdefault(("k7", (m, n, k)), {"err": r7.get("rel_error"), "ms": []})["ms"].append(r7["ms_median"])
        for (v, s), r in res.items():
            if s != (m, n, k): continue
            med = statistics.median(r["ms"])
            print(f"{v:12s} {m}x{n}x{k}: {med:.3f} ms {2*m*n*k/med/1e9:8.0f} GFLOPS (spans)  err {r['err']}")

main()
