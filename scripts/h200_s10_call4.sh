# Session 10, call 4 (~4 minutes). Kernel 6 had no tuned entry, so `clgemm bench --kernels 6`
# ran it at the registry defaults; the tuner now starts it from kernel 5's winners
# (Kernel.same_params_as). (a) `clgemm tune` kernel 6 at the bench's squares and 4000^3, and
# kernel 5 at 8192x8192x256, the one bench shape without its own entry (TPE, budget 10);
# (b) merged with resident counts (scripts/db_residents.py); (c) the bench without peers,
# before (shipped database) and after (with the new entries), twice, interleaved.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for t in 6:1024x1024x1024 6:2048x2048x2048 6:4096x4096x4096 6:8192x8192x8192 6:4000x4000x4000 5:8192x8192x256; do
  IFS=: read kern s <<< "$t"; IFS=x read m n k <<< "$s"
  CLGEMM_HOME=$OUT/home timeout 120 python3 -m clgemm tune --kernel $kern --m $m --n $n --k $k --budget 10 --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); w=r.get('best') or {}; print('$kern $s', r.get('seconds') and round(r['seconds']), 's', w.get('params'), round(w.get('gflops', 0)), 'GFLOPS')" \
    || echo "$t: tune failed or timed out"
done
date -u
CLGEMM_HOME=$OUT/home timeout 150 python3 scripts/db_residents.py --shipped clgemm/tuned/nvidia-h200.json --out $OUT/nvidia-h200.json \
  --note " Session 10: kernel 6 at 1024^3, 2048^3, 4096^3, 8192^3, 4000^3 and kernel 5 at 8192x8192x256 (scripts/h200_s10_call4.sh: clgemm tune --budget 10, results/h200/session10/call4/)." \
  2>&1 | grep -v -i "warn" | tail -8
cp clgemm/tuned/nvidia-h200.json $OUT/db-before.json
B="--kernels 5,6 --sizes 1024,2048,4096,8192 --shapes 4000x4000x4000,8192x8192x256 --against none"
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
                g.setdefault((r["m"], r["n"], r["k"], r["contender"]), []).append(r["gflops"])
    return g
b, a = load("before"), load("after")
print("shape contender: before / after GFLOPS (median of 2 runs)")
for key in sorted(a):
    print(*key, round(statistics.median(b[key])), "/", round(statistics.median(a[key])),
          f"x{statistics.median(a[key]) / statistics.median(b[key]):.2f}")
PY
date -u
