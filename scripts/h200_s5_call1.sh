# Session 5, call 1 (~3 minutes).
# 1. What separates the shuffle transpose (0.893-0.899x copy) from the local one (0.93x)?
#    Untracked probes, copies of the shipped kernels with one change each:
#    zz_nosh.cl   the shuffle kernel with the exchange removed: the same memory traffic and
#                 no shuffles (its output is wrong; it measures the access pattern alone);
#    zz_diag.cl   the shuffle kernel with a diagonal launch order (consecutive groups walk
#                 down the row bands and across the columns at once; partition camping);
#    zz_occ.cl    the shuffle kernel with OCCB bytes of local memory per group that it never
#                 touches, to cap the groups per multiprocessor (fewer DRAM rows open at once);
#    zz_local4.cl the local transpose with 16-byte global loads and stores.
#    Registers from -cl-nv-verbose first; then 8192^2 in 3 rounds, and 8000^2 once.
# 2. SM clock and power (nvidia-smi, every 50 ms) while cuBLAS, clgemm-5 and CLBlast
#    (tuned at 4096) each run 8192^3 back to back for ~3 s: is the FP32 ceiling the clock?
# Probe sources (untracked kernels/zz_*.cl when this ran): results/h200/session5/probes/
# (README.md there says how to rebuild them in kernels/).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv
python3 - <<'PY' 2>&1 | grep -v -i warn
import dataclasses, json, os, re
import pyopencl as cl
from clgemm import build, device, kernels
from clgemm.kernels import Geometry, Param
from clgemm.run import run_transpose
dev = device.select()
q = device.queue(dev)
sh, lo = kernels.get("shuffle", "transpose"), kernels.get("local", "transpose")
kernels.TRANSPOSE["nosh"] = dataclasses.replace(sh, key="nosh", name="nosh", source="zz_nosh.cl")
kernels.TRANSPOSE["diag"] = dataclasses.replace(sh, key="diag", name="diag", source="zz_diag.cl")
kernels.TRANSPOSE["occ"] = dataclasses.replace(
    sh, key="occ", name="occ", source="zz_occ.cl",
    params=sh.params + (Param("OCCB", 8192, (4096, 8192, 16384, 32768), "idle local bytes"),),
    geometry=dataclasses.replace(sh.geometry, local_bytes=lambda p: 128 * p["WARPS"] + p["OCCB"]))
kernels.TRANSPOSE["local4"] = dataclasses.replace(
    lo, key="local4", name="local4", source="zz_local4.cl",
    geometry=Geometry(tile=lambda p: (64, 64), local=lambda p: (16, 16), local_bytes=lambda p: 64 * 65 * 4))
points = [("local", {}), ("local4", {}), ("shuffle", {}), ("nosh", {}), ("diag", {}),
          ("occ", dict(OCCB=8192)), ("occ", dict(OCCB=16384)), ("occ", dict(OCCB=32768))]
ctx = q.context
for key, p in points:
    k = kernels.TRANSPOSE[key]
    pp = k.resolve(p)
    prg = build.compile_source(ctx, k, pp, build.device_options(ctx, k) + ("-cl-nv-verbose",))
    log = prg.get_build_info(dev, cl.program_build_info.LOG)
    print(key, p, "registers", re.findall(r"Used (\d+) registers", log), "smem",
          re.findall(r"(\d+) bytes smem", log), flush=True)
out = open(os.environ["OUT"] + "/transposes.jsonl", "w")
def one(key, p, n, rnd):
    r = run_transpose(q, n, n, kernel=key, params=p, repeat=10)
    r["round"] = rnd
    out.write(json.dumps(r) + "\n"); out.flush()
    print(f"{rnd} {n} {key:8s} {p}: {r['gbps']:6.0f} GB/s copy {r['copy_gbps']:.0f} "
          f"ratio {r['ratio_to_copy']:.3f} ok={r['verified']}", flush=True)
for rnd in range(3):
    for key, p in points:
        one(key, p, 8192, rnd)
for key in ("local", "shuffle", "nosh"):
    one(key, {}, 8000, 0)
PY
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
python3 - <<'PY' 2>&1 | grep -v -i warn
import json, os, time
import numpy as np
from clgemm import device
from clgemm.bench import Problem, run_clgemm, run_cublas, CLBlast
q = device.queue(device.select())
p = Problem(q, 8192, 8192, 8192, np.random.default_rng(5))
sets = json.load(open("results/h200/clblast-xgemm-h200.json"))["sets"]
windows = []
for name, fn in (("cublas", lambda: run_cublas(p, 150)), ("clgemm-5", lambda: run_clgemm(p, "5", 150)),
                 ("clblast-tuned_at_4096", lambda: CLBlast(q, sets["tuned_at_4096"], "clblast-tuned_at_4096").run(p, 150)),
                 ("cublas", lambda: run_cublas(p, 150)), ("clgemm-5", lambda: run_clgemm(p, "5", 150))):
    time.sleep(2)
    t0 = time.time()
    r = fn()
    t1 = time.time()
    dev = r["timing"][0]
    gf = 2 * 8192**3 / dev.median / 1e6
    windows.append({"name": name, "t0": t0, "t1": t1, "utc0": time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(t0)), "gflops_median": gf, "rel_error": r["rel_error"]})
    print(f"{name:24s} {gf:8.0f} GFLOPS err {r['rel_error']:.1e}  {t1 - t0:.1f} s", flush=True)
json.dump(windows, open(os.environ["OUT"] + "/windows.json", "w"), indent=1)
PY
kill $SMI
head -3 $OUT/smi.csv; cat $OUT/smi.err | head -3
