# Session 12, call 2 (~7 minutes). Call 1 found the last group's sum with volatile loads
# slower than the second kernel at most shapes (x0.52 at 32x4096x4096): NVIDIA's compiler
# issues volatile loads one by one. Now ld.global.cg by inline PTX, one pass per slice.
# (a) PTX of the SPLIT_K + LAST_GROUP_SUMS builds (scripts/inspect_ptx.py).
# (b) Before (zz_before: 03e9491, the second kernel) / vol (zz_vol: call 1's build) / after
#     (the working tree), kernel 5, shipped database, interleaved, 2 rounds; kernel 6, 1 round.
# (c) The split stage (budget 1: the shipped winner) at 1x4096x4096 and 256x8192x8192 for
#     kernel 5 and at 1x4096x4096 for kernel 6.
# (d) The whole test suite on the H200.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for p in "TSM=16 TSN=128 TSK=32 WPTM=4 WPTN=4 WIDTH=4 PAD=1" "TSM=128 TSN=128 TSK=8 WPTM=8 WPTN=8 WIDTH=4 PAD=0"; do
  args=$(for x in $p; do echo -n "--param $x "; done)
  timeout 60 python3 scripts/inspect_ptx.py --kernels 5 $args --option=-DSPLIT_K 2>&1 | grep -v -i warn | head -2
  timeout 60 python3 scripts/inspect_ptx.py --kernels 5 $args --option=-DSPLIT_K --option=-DLAST_GROUP_SUMS 2>&1 | grep -v -i warn | head -2
done
date -u
timeout 300 python3 scripts/ab_versions.py --versions before=zz_before,vol=zz_vol,after=. --kernel 5 --rounds 2 \
  --shapes 1x4096x4096,1x8192x8192,1x2000x3000,4x4096x4096,8x8192x8192,32x4096x4096,16x2048x2048,256x8192x8192,384x6144x6144,2048x2048x2048 \
  --out $OUT/ab5.jsonl 2>&1 | grep -v -i warn | tee $OUT/ab5.txt
date -u
timeout 100 python3 scripts/ab_versions.py --versions before=zz_before,after=. --kernel 6 --rounds 1 \
  --shapes 1x4096x4096,256x8192x8192,32x4096x4096 --out $OUT/ab6.jsonl 2>&1 | grep -v -i warn | tee $OUT/ab6.txt
date -u
for t in 5:1x4096x4096 5:256x8192x8192 6:1x4096x4096; do
  IFS=: read kern s <<< "$t"; IFS=x read m n k <<< "$s"
  CLGEMM_HOME=$OUT/home timeout 60 python3 -m clgemm tune --kernel $kern --m $m --n $n --k $k --budget 1 --workers 4 --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); w=r.get('best') or {}; print('$kern $s', r.get('seconds') and round(r['seconds']), 's', w.get('params'), 'splits', w.get('splits'), round(w.get('gflops', 0)), 'GFLOPS;', ', '.join(f\"{x['splits']}:{round(x.get('gflops') or 0)}\" for x in r.get('split_stage', [])))" \
    || echo "$kern $s: tune failed or timed out"
done | tee $OUT/stage.txt
date -u
CLGEMM_HOME=$(mktemp -d) timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests 2>&1 | tail -4 | tee $OUT/pytest.txt
date -u
