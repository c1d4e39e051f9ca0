# Session 4, call 2 (~6 minutes).
# 1. The shuffle transpose's launch order (BAND) at 8192^2, two rounds, with the padded
#    local transpose in the same run.
# 2. gemm()'s new auto rule, a row-major A transposed on the device to K-major and read by
#    the A_KMAJOR build, against plain NN (transposed_by="transpose"), with the rule's
#    thresholds forced to 0 so that every shape is measured both ways; the transpose counts.
# 3. Kernel 5 re-tuned at 8192^3 and 4096^3 with the build the rule now launches there
#    (A_KMAJOR), fresh logs, warm start; each against the defaults.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
mkdir -p $CLGEMM_HOME && tar xzf .gpu/tune-home-s4call1.tgz -C $CLGEMM_HOME
python3 - <<'PY' 2>&1 | grep -v -i warn
import json, os, sys
from clgemm import device, kernels
from clgemm.run import run_transpose, run_gemm
from clgemm.gemm import GemmPlan
q = device.queue(device.select())
out = os.environ["OUT"]
points = [("local", {})] + [("shuffle", dict(WARPS=w, TILES=t, BAND=b))
                            for w, t in ((1, 2), (1, 4), (2, 2)) for b in (1, 2, 8, 32)]
with open(out + "/transposes.jsonl", "w") as f:
    for rnd in range(2):
        for key, p in points:
            r = run_transpose(q, 8192, 8192, kernel=key, params=p, repeat=10)
            r["round"] = rnd
            f.write(json.dumps(r) + "\n")
            print(f"{rnd} {key:8s} {r['params']}: {r['gbps']:6.0f} GB/s copy {r['copy_gbps']:.0f} "
                  f"ratio {r['ratio_to_copy']:.3f} ok={r['verified']}", flush=True)
gm = sys.modules["clgemm.gemm"]
gm.KMAJOR_MIN_N = gm.KMAJOR_MIN_VOLUME = 0
shapes = [(1024,) * 3, (2048,) * 3, (4096,) * 3, (8192,) * 3, (4000,) * 3, (4096, 1024, 4096),
          (8192, 8192, 256), (256, 8192, 8192)]
with open(out + "/kmajor.jsonl", "w") as f:
    for shape in shapes:
        for rnd in range(2):
            for by in ("transpose", "auto"):
                r = run_gemm(q, *shape, kernel="5", transposed_by=by)
                r["round"] = rnd
                f.write(json.dumps(r) + "\n")
                print(f"{shape} {by:9s} a_kmajor={r['a_kmajor']} launches={r['launches']} "
                      f"{r['gflops']:7.0f} ok={r['verified']} {r['params']}", flush=True)
PY
timeout 260 python3 scripts/tune_batch.py --workers 16 --compare --fresh --out $OUT/tune_k5.json \
  --job 5:8192:tpe:0:90 --job 5:4096:tpe:0:45 2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C $CLGEMM_HOME .
