# Session 3, call 4 (~7 minutes). Split-K became a build of its own (-DSPLIT_K) after the
# bench showed kernel 5's 16x8 blocks 20% slower with it always compiled in, and launches
# are now bound once (build.bind). Checks both, re-tunes kernel 5 where call 1 tuned it
# with the slower code (fresh logs), re-measures split-K, and runs the bench again.
# kernels/zz_prev.cl is kernel 5 as of fca2e50 (before split-K), untracked.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
mkdir -p $CLGEMM_HOME && tar xzf .gpu/tune-home-call12.tgz -C $CLGEMM_HOME
P16="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4 --param PAD=1"
P8="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=8 --param WPTN=8 --param WIDTH=4 --param PAD=0"
for P in "$P16" "$P8"; do
  python3 scripts/inspect_ptx.py --kernels 5 $P --option=-DEXACT --source zz_prev.cl 2>&1 | grep -v -i warn | head -2
  python3 scripts/inspect_ptx.py --kernels 5 $P --option=-DEXACT 2>&1 | grep -v -i warn | head -2
  python3 scripts/inspect_ptx.py --kernels 5 $P --option=-DEXACT --option=-DSPLIT_K 2>&1 | grep -v -i warn | head -2
done
python3 scripts/ab_source.py --kernel 5 --source zz_prev.cl --size 4096 --rounds 2 $P16 2>&1 | grep GFLOPS
python3 scripts/span_probe.py --sizes 512,1024,2048,4096 --out $OUT/span.json 2>&1 | grep -v -i "warn\|lambda"
timeout 330 python3 scripts/tune_batch.py --workers 16 --compare --fresh --out $OUT/tune_k5.json \
  --job 5:8192:tpe:0:30 --job 5:1024:tpe:0:20 --job 5:4000:tpe:0:25 --job 5:512:tpe:0:20 \
  --job 5:1x4096x4096:tpe:0:15 --job 5:4096x4096x1:tpe:0:10 --job 5:256x8192x8192:tpe:0:15 \
  --job 5:4096x1024x4096:tpe:0:15 2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C $CLGEMM_HOME .
for shape in "1 4096 4096:1 4 8 16 auto" "256 8192 8192:1 2 auto" "512 512 512:1 2"; do
  read m n k <<< "${shape%%:*}"
  for s in ${shape#*:}; do
    timeout 60 python3 -m clgemm run --kernel 5 --m $m --n $n --k $k --split-k $s --repeat 20 --json \
      | python3 -c "import json,sys; r=json.load(sys.stdin); r['asked']='$s'; print(json.dumps(r))" >> $OUT/split.jsonl
  done
done
python3 -c "
import json
for r in map(json.loads, open('$OUT/split.jsonl')):
    print(r['m'], r['n'], r['k'], 'asked', r['asked'], 'splits', r['splits'], round(r['gflops']), r['verified'], r['params'])"
timeout 200 python3 -m clgemm bench --kernels 4,5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep -v -i "warn\|lambda\|^ *$" | tail -8
