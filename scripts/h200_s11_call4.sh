# Session 11, call 4 (~3 minutes). Kernel 6 at shapes where it has no tuned entry of its own
# but kernel 5 has one (GemmPlan now takes a sibling kernel's entry where it is nearer):
# the bench without peers, before (zz_before: `git archive HEAD~1` of commit "gemm: kernel 6
# takes kernel 5's tuned entries ...", i.e. the split-stage commit) and after (the working
# tree), interleaved, 2 rounds; then once with cuBLAS.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
S="--kernels 5,6 --sizes 512 --shapes 1x4096x4096,256x8192x8192,4096x1024x4096,8192x8192x256,4096x4096x1,1x8192x8192 --against none"
for r in 1 2; do
  (cd zz_before && PYTHONPATH=$PWD:$PYTHONPATH CLGEMM_HOME=$OUT/empty timeout 100 python3 -m clgemm bench $S --out $OUT/before 2>&1 | grep -i "wrote.*json")
  CLGEMM_HOME=$OUT/empty timeout 100 python3 -m clgemm bench $S --out $OUT/after 2>&1 | grep -i "wrote.*json"
done
python3 - <<'PY'
import json, glob, os, statistics
out = os.environ["OUT"]
def load(which):
    g = {}
    for f in sorted(glob.glob(f"{out}/{which}/*/bench-*.json")):
        for r in json.load(open(f))["rows"]:
            if r.get("gflops") and r["contender"].startswith("clgemm"):
                assert r["verified"], r
                g.setdefault((r["m"], r["n"], r["k"], r["contender"]), []).append((r["gflops"], r.get("tuned_at"), r.get("tuned_kernel"), r["splits"]))
    return g
b, a = load("before"), load("after")
print("shape contender: before / after GFLOPS (median of 2 runs), after's entry")
for key in sorted(a):
    gb, ga = statistics.median(x[0] for x in b[key]), statistics.median(x[0] for x in a[key])
    print(*key, round(gb), "/", round(ga), f"x{ga / gb:.2f}", a[key][0][1:])
PY
date -u
