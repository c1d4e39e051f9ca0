# Session 5, call 2 (~4 minutes). Two probes, each an untracked copy of a shipped kernel:
# 1. kernels/zz_pipe.cl: the shuffle transpose made persistent and software-pipelined
#    (G one-warp groups walk the 32 x 32 tiles; tile t+G is loaded before tile t is
#    exchanged and stored). Call 1 found the float4 local transpose at 0.943-0.949x and
#    the shuffle one at 0.894-0.897x with every launch shape tried; the question is whether
#    a warp that waits for its loads, stores and exits leaves the memory idle between
#    groups. 8192^2, G = 132 x {8, 16, 19, 32} (and 132 x 16 walking down the
#    tile columns instead of along the rows), against the shipped kernels, 3 rounds.
# 2. kernels/zz_warp.cl: kernel 5 with warp tiles (each warp computes an 8 x 4 block of
#    work-item tiles, so every local read in the k loop is one wavefront: 6 per k step
#    instead of 8 for the 16 x 8 point). Call 1 saw clgemm-5 at the 700 W power limit
#    (throttle reason 0x4) at 8192^3 where cuBLAS ran at 674 W and 1980 MHz; fewer local
#    reads spend less energy per FLOP. 8192^3 and 4096^3 at the shipped points, 3 rounds,
#    with nvidia-smi sampling clock and power.
# Probe sources (untracked kernels/zz_*.cl when this ran): results/h200/session5/probes/
# (README.md there says how to rebuild them in kernels/).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
python3 - <<'PY' 2>&1 | grep -v -i warn
import dataclasses, json, os, re
import numpy as np
import pyopencl as cl
from clgemm import build, device, kernels, operands, timing, verify
from clgemm.run import run_transpose
dev = device.select()
q = device.queue(dev)
ctx = q.context
sh = kernels.get("shuffle", "transpose")
pk = dataclasses.replace(sh, key="pipe", name="pipe", source="zz_pipe.cl", params=())
prgs = {o: build.compile_source(ctx, pk, {"ORDER": o}, build.device_options(ctx, pk) + ("-cl-nv-verbose",)) for o in (0, 1)}
for o, prg in prgs.items():
    print("pipe ORDER", o, "registers", re.findall(r"Used (\d+) registers", prg.get_build_info(dev, cl.program_build_info.LOG)))
k5 = kernels.get("5")
kernels.GEMM["5w"] = dataclasses.replace(k5, key="5w", source="zz_warp.cl")
P = json.load(open("clgemm/tuned/nvidia-h200.json"))["entries"]["5"]["8192x8192x8192"]["params"]
for key in ("5", "5w"):
    k = kernels.GEMM[key]
    g = build.compile_source(ctx, k, k.resolve(P), build.device_options(ctx, k) + ("-DEXACT", "-DA_KMAJOR", "-cl-nv-verbose"))
    print(key, P, "registers", re.findall(r"Used (\d+) registers", g.get_build_info(dev, cl.program_build_info.LOG)), flush=True)

n = 8192
a = verify.random_matrix(np.random.default_rng(3), n, n)
src = operands.raw(q, a, 1)
dst = operands.poison(q, operands.empty(q, n, n, n))
def pipe(G, rnd, order=0):
    launch = build.bind(q, prgs[order], "transpose", (32 * G,), (32,),
                        (np.int32(n), np.int32(n), src.buf, np.int32(n), dst.buf, np.int32(n)), held=(src, dst))
    operands.poison(q, dst)
    launch().wait()
    ok = bool(np.array_equal(operands.to_host(q, dst), a.T))
    tt, tc = [], []
    for _ in range(3):
        tt.extend(timing.profile(launch, repeat=10).ms)
        tc.extend(timing.profile(lambda: cl.enqueue_copy(q, dst.buf, src.buf, byte_count=4 * n * n), repeat=10).ms)
    tr, cp = timing.Timing(tuple(tt)), timing.Timing(tuple(tc))
    return {"kernel": "pipe", "params": {"G": G, "ORDER": order}, "rows": n, "cols": n, "verified": ok, "round": rnd,
            "ms_median": tr.median, "gbps": timing.gbps(8 * n * n, tr.median),
            "copy_gbps": timing.gbps(8 * n * n, cp.median), "ratio_to_copy": cp.median / tr.median}
lo = kernels.get("local", "transpose")
kernels.TRANSPOSE["local4"] = dataclasses.replace(
    lo, key="local4", name="local4", source="zz_local4.cl",
    geometry=kernels.Geometry(tile=lambda p: (64, 64), local=lambda p: (16, 16), local_bytes=lambda p: 64 * 65 * 4))
out = open(os.environ["OUT"] + "/transposes.jsonl", "w")
for rnd in range(3):
    rs = [run_transpose(q, n, n, kernel=key, repeat=10) for key in ("local", "local4", "shuffle")]
    rs += [pipe(132 * m, rnd) for m in (8, 16, 19, 32)] + [pipe(132 * 16, rnd, 1)]
    for r in rs:
        r["round"] = rnd
        out.write(json.dumps(r) + "\n")
        print(f"{rnd} {r['kernel']:8s} {r['params']}: {r['gbps']:6.0f} GB/s copy {r['copy_gbps']:.0f} "
              f"ratio {r['ratio_to_copy']:.3f} ok={r['verified']}", flush=True)
PY
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
python3 - <<'PY' 2>&1 | grep -v -i warn
import dataclasses, json, os, time
from clgemm import device, kernels
from clgemm.run import run_gemm
q = device.queue(device.select())
k5 = kernels.get("5")
kernels.GEMM["5w"] = dataclasses.replace(k5, key="5w", source="zz_warp.cl")
db = json.load(open("clgemm/tuned/nvidia-h200.json"))["entries"]["5"]
rows = []
for rnd in range(3):
    for s in (8192, 4096):
        P = db[f"{s}x{s}x{s}"]["params"]
        for key in ("5", "5w"):
            t0 = time.time()
            r = run_gemm(q, s, s, s, kernel=key, params=P, repeat=30 if s == 8192 else 100)
            r.update(round=rnd, kernel_probe=key, t0=t0, t1=time.time(),
                     utc0=time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(t0)))
            rows.append(r)
            print(f"{rnd} {s} {key:3s} {r['gflops']:8.0f} GFLOPS ok={r['verified']} kmajor={r.get('a_kmajor')} "
                  f"padded={r.get('padded')}", flush=True)
json.dump(rows, open(os.environ["OUT"] + "/gemm_warp.json", "w"), indent=1, default=str)
PY
kill $SMI
