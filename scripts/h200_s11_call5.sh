# Session 11, call 5 (~5 minutes). Kernel 6's own entries at the bench shapes where it had
# none: call 4 found kernel 5's entries 1.14-3.67x better for kernel 6 than its own nearest
# at five of them, but 0.87x at 256x8192x8192 (kernel 5's 8 x 8 blocks).
# (a) `clgemm tune --kernel 6` (TPE from kernel 6's and kernel 5's winners, budget 10, with
#     the split stage) at 512^3, 1x4096x4096, 256x8192x8192, 4096x1024x4096, 8192x8192x256,
#     4096x4096x1; (b) merged with resident counts; (c) the bench without peers, before (the
#     working tree's database) / after, interleaved, 2 rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for s in 512x512x512 1x4096x4096 256x8192x8192 4096x1024x4096 8192x8192x256 4096x4096x1; do
  IFS=x read m n k <<< "$s"
  CLGEMM_HOME=$OUT/home timeout 90 python3 -m clgemm tune --kernel 6 --m $m --n $n --k $k --budget 10 --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); w=r.get('best') or {}; print('$s', r.get('seconds') and round(r['seconds']), 's', w.get('params'), 'splits', w.get('splits'), round(w.get('gflops', 0)), 'GFLOPS;', ', '.join(f\"{x['splits']}:{round(x.get('gflops') or 0)}\" for x in r.get('split_stage', [])))" \
    || echo "$s: tune failed or timed out"
done
date -u
CLGEMM_HOME=$OUT/home timeout 150 python3 scripts/db_residents.py --shipped clgemm/tuned/nvidia-h200.json --out $OUT/nvidia-h200.json \
  --note " Session 11: kernel 6 at 512^3, 1x4096x4096, 256x8192x8192, 4096x1024x4096, 8192x8192x256, 4096x4096x1 (scripts/h200_s11_call5.sh: clgemm tune --budget 10 with the split stage, results/h200/session11/call5/)." \
  2>&1 | grep -v -i "warn" | grep -i "from\|error"
cp clgemm/tuned/nvidia-h200.json $OUT/db-before.json
B="--kernels 6 --sizes 512 --shapes 1x4096x4096,256x8192x8192,4096x1024x4096,8192x8192x256,4096x4096x1,1x8192x8192 --against none"
for r in 1 2; do
  cp $OUT/db-before.json clgemm/tuned/nvidia-h200.json
  CLGEMM_HOME=$OUT/empty timeout 100 python3 -m clgemm bench $B --out $OUT/before 2>&1 | grep -i "wrote.*json"
  cp $OUT/nvidia-h200.json clgemm/tuned/nvidia-h200.json
  CLGEMM_HOME=$OUT/empty timeout 100 python3 -m clgemm bench $B --out $OUT/after 2>&1 | grep -i "wrote.*json"
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
