# Session 13, call 1 (~4 minutes).
# (a) scripts/ldpad_probe.py: kernel 5's shipped 8192^3 launch with the leading dimensions
#     of A (K-major, as gemm() makes it), B and C padded past the power of two, and the
#     row-major-A build at 4096^3 the same way; (b) `clgemm tune --kernel 5` at
#     16x4096x4096 (budget 100) into a scratch database, for an entry that covers m = 16
#     products; (c) tests/test_install.py on this offline machine (hatchling now in .gpu/).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
timeout 150 python3 scripts/ldpad_probe.py --shapes 8192x8192x8192 --kmajor 1 --rounds 3 \
  --pads 0:0:0,16:0:0,32:0:0,64:0:0,128:0:0,0:32:0,0:0:32,32:32:32 2>&1 | grep -v -i warn
timeout 60 python3 scripts/ldpad_probe.py --shapes 4096x4096x4096 --kmajor 0 --rounds 3 \
  --pads 0:0:0,32:0:0,0:32:0,32:32:32 2>&1 | grep -v -i warn | tail -5
date -u
CLGEMM_HOME=$OUT/home timeout 200 python3 -m clgemm tune --kernel 5 --m 16 --n 4096 --k 4096 \
  --budget 100 --workers 8 --json 2>/dev/null > $OUT/tune16.json
python3 - <<'PY'
import json, os
r = json.load(open(os.environ["OUT"] + "/tune16.json"))
w = r["best"]
print("tune 16x4096x4096:", round(r["seconds"]), "s, winner", w["params"], "splits", w.get("splits"), round(w["gflops"]), "GFLOPS")
for f in r["finalists"]:
    print("  finalist", round(f["gflops"]), f["params"])
PY
date -u
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_install.py 2>&1 | tail -3
date -u
