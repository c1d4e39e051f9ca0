# Session 12, call 1 (~7 minutes). Split-K summed by the last work-group of each tile of C
# to finish (LAST_GROUP_SUMS, NVIDIA only) instead of a second kernel, splitk_reduce.
# (a) The SPLIT_K + LAST_GROUP_SUMS builds compile, with membar.gl, atom.global and
#     volatile loads in their PTX (scripts/inspect_ptx.py).
# (b) Before (zz_before: `git archive` of 03e9491, the two-kernel sum) / after (the working
#     tree), kernel 5 with the shipped database, interleaved, 2 rounds: the bench's span of
#     one call and back-to-back launches (scripts/ab_versions.py), at shapes that split and
#     one (2048^3) that does not; kernel 6 at three shapes, 1 round.
# (c) The tuner's split stage again (budget 1: the shipped winner, then its slice counts)
#     at 1x4096x4096 and 256x8192x8192, since summing got cheaper.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for p in "TSM=16 TSN=128 TSK=32 WPTM=4 WPTN=4 WIDTH=4 PAD=1" "TSM=128 TSN=128 TSK=8 WPTM=8 WPTN=8 WIDTH=4 PAD=0"; do
  args=$(for x in $p; do echo -n "--param $x "; done)
  for o in "-DSPLIT_K" "-DSPLIT_K --option -DLAST_GROUP_SUMS"; do
    timeout 60 python3 scripts/inspect_ptx.py --kernels 5 $args --option $o 2>&1 | grep -v -i warn | head -3
  done
done
date -u
timeout 300 python3 scripts/ab_versions.py --versions before=zz_before,after=. --kernel 5 --rounds 2 \
  --shapes 1x4096x4096,1x8192x8192,1x2000x3000,4x4096x4096,8x8192x8192,32x4096x4096,16x2048x2048,256x8192x8192,384x6144x6144,2048x2048x2048 \
  --out $OUT/ab5.jsonl 2>&1 | grep -v -i warn | tee $OUT/ab5.txt
date -u
for s in 1x4096x4096 256x8192x8192; do
  IFS=x read m n k <<< "$s"
  CLGEMM_HOME=$OUT/home timeout 90 python3 -m clgemm tune --kernel 5 --m $m --n $n --k $k --budget 1 --workers 4 --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); w=r.get('best') or {}; print('$s', r.get('seconds') and round(r['seconds']), 's', w.get('params'), 'splits', w.get('splits'), round(w.get('gflops', 0)), 'GFLOPS;', ', '.join(f\"{x['splits']}:{round(x.get('gflops') or 0)}\" for x in r.get('split_stage', [])))" \
    || echo "$s: tune failed or timed out"
done | tee $OUT/stage.txt
date -u
timeout 150 python3 scripts/ab_versions.py --versions before=zz_before,after=. --kernel 6 --rounds 1 \
  --shapes 1x4096x4096,256x8192x8192,32x4096x4096 --out $OUT/ab6.jsonl 2>&1 | grep -v -i warn | tee $OUT/ab6.txt
date -u
