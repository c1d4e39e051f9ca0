"""One-off: kernel-5 points at 2048^3 timed as synchronised whole calls and back to back, beside cuBLAS."""
import json, os, statistics, sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cla, torch
import clgemm
torch.backends.cuda.matmul.allow_tf32 = False
S = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
base = dict(TSK=8, WIDTH=4, PAD=1)
pts = {"tuned": dict(base, TSM=128, TSN=128, WPTM=16, WPTN=8), "128x64_8x8": dict(base, TSM=128, TSN=64, WPTM=8, WPTN=8),
       "64x128_8x8": dict(base, TSM=64, TSN=128, WPTM=8, WPTN=8), "128x128_8x8": dict(base, TSM=128, TSN=128, WPTM=8, WPTN=8),
       "64x64_8x4": dict(TSM=64, TSN=64, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=1)}
dev = [d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.GPU][0]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
rng = np.random.default_rng(1)
A = rng.uniform(-1, 1, (S, S)).astype(np.float32); B = rng.uniform(-1, 1, (S, S)).astype(np.float32)
a, b = cla.to_device(q, A), cla.to_device(q, B)
ta, tb = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
ref = (ta.double() @ tb.double()).cpu().numpy()
def c_call(p): return lambda: clgemm.gemm(q, a, b, kernel="5", params=p)
calls = {}
for name, p in pts.items():
    try:
        out = c_call(p)().get(); err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
        assert err < 1e-5, err; calls[name] = (c_call(p), q.finish); print(name, "err", err)
    except Exception as e:
        print(name, "skipped:", str(e)[:200])
calls["cublas"] = (lambda: ta @ tb, torch.cuda.synchronize)
res = {k: {"synced": [], "b2b": []} for k in calls}
for rnd in range(3):
    for k, (f, sync) in calls.items():
        f(); sync()
        for _ in range(30):
            t = time.perf_counter(); f(); sync(); res[k]["synced"].append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        for _ in range(30): f()
        sync(); res[k]["b2b"].append((time.perf_counter() - t) * 1e3 / 30)
out = {k: {m: statistics.median(v) for m, v in r.items()} for k, r in res.items()}
for k, r in out.items(): print(f"{k:14s} synced {r['synced']:.4f} ms  b2b {r['b2b']:.4f} ms  synced x cuBLAS {out['cublas']['synced']/r['synced']:.3f}")
json.dump({"size": S, "points": pts, "ms": out}, open(os.path.join(os.environ.get("OUT", "."), f"synced-{S}.json"), "w"), indent=1)
