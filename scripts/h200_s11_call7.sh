# Session 11, call 7 (~3 minutes). (a) The review's changes to gemm()'s use of tuned split
# counts: slices no thinner than the tuned ones or 512 away from the tuned shape (the
# 1024^3 entry, whose stage found 1 slice best, had made 640^3-800^3 split in 2 and small
# cubes in 4-8). Before (zz_before: `git archive` of the commit before "split stage review
# fixes") / after (the working tree), `clgemm run --kernel 5 --json`, interleaved, 2 rounds,
# at the shapes where the two differ (worked out off the device with the shipped database)
# and one where they agree. (b) The tuner tests on the H200.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for r in 1 2; do
  for s in 256x256x256 384x384x384 768x768x768 1x2000x3000 1x1024x1024 16x2048x2048 1x8192x8192; do
    IFS=x read m n k <<< "$s"
    for v in before after; do
      d=.; [ $v = before ] && d=zz_before
      (cd $d && PYTHONPATH=$PWD:$PYTHONPATH CLGEMM_HOME=$OUT/empty timeout 60 python3 -m clgemm run --kernel 5 --m $m --n $n --k $k --json 2>/dev/null) \
        | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print('$r $s $v', r['tuned_at'], r['splits'], round(r['gflops']), r['verified'])"
    done
  done
done | tee $OUT/runs.txt
python3 - <<'PY'
import os, statistics, collections
g = collections.defaultdict(list); sp = {}
for line in open(os.path.join(os.environ["OUT"], "runs.txt")):
    r, s, v, at, splits, gf, ok = line.split()
    assert ok == "True", line
    g[s, v].append(float(gf)); sp[s, v] = splits
print("shape: before (slices) / after (slices), median GFLOPS")
ratios = []
for s in dict.fromkeys(k[0] for k in g):
    b, a = statistics.median(g[s, "before"]), statistics.median(g[s, "after"])
    ratios.append(a / b)
    print(f"{s}: {b:.0f} ({sp[s, 'before']}) / {a:.0f} ({sp[s, 'after']})  x{a / b:.2f}")
print(f"geomean x{statistics.geometric_mean(ratios):.3f}")
PY
date -u
CLGEMM_HOME=$(mktemp -d) timeout 120 python3 -m pytest -q -x tests/test_tune.py 2>&1 | tail -2
date -u
