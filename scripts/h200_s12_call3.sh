# Session 12, call 3 (~6 minutes). (a) The whole test suite on the H200 (split-K summed by
# the second kernel again: the last-group sum of calls 1-2 is reverted). (b) The split
# stage now times every finalist's (configuration, count) pairs in the same interleaved
# rounds: `clgemm tune` kernel 5 at 1x4096x4096 (budget 10) and 256x8192x8192 (budget 4),
# into a scratch database (CLGEMM_HOME=$OUT/home); the shipped one is not changed here.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
CLGEMM_HOME=$(mktemp -d) timeout 330 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -6 | tee $OUT/pytest.txt
date -u
for t in 10:1x4096x4096 4:256x8192x8192; do
  IFS=: read budget s <<< "$t"; IFS=x read m n k <<< "$s"
  CLGEMM_HOME=$OUT/home timeout 100 python3 -m clgemm tune --kernel 5 --m $m --n $n --k $k --budget $budget --workers 8 --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "
import json, sys
r = json.loads(sys.stdin.read()); w = r.get('best') or {}
print('$s', round(r['seconds']), 's; winner', w.get('params'), 'splits', w.get('splits'), round(w.get('gflops', 0)), 'GFLOPS')
for f in r['finalists']:
    st = [x for x in r['split_stage'] if x['params'] == f['params']]
    print('  finalist', round(f['gflops']), f['params'], '| stage:', ', '.join(f\"{x.get('splits')}{'*' if x.get('only_count') else ''}:{round(x.get('gflops') or 0)}\" for x in st))
" || echo "$s: tune failed or timed out"
done | tee $OUT/stage.txt
date -u
