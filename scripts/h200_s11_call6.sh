# Session 11, call 6 (~3 minutes). The split stage over the five finalists instead of the
# winner alone (the search runs every configuration with gemm()'s own count, so one that
# wins only when split further is found only there). `clgemm tune --kernel 5` at
# 1x4096x4096 and 1x8192x8192 (budget 30) and 256x8192x8192 (budget 10), fresh logs; then
# `clgemm run` of each winner as gemm() launches it, against the shipped database's.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for t in 30:1x4096x4096 30:1x8192x8192 10:256x8192x8192; do
  IFS=: read budget s <<< "$t"; IFS=x read m n k <<< "$s"
  CLGEMM_HOME=$OUT/home timeout 120 python3 -m clgemm tune --kernel 5 --m $m --n $n --k $k --budget $budget --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "
import json,sys; r=json.loads(sys.stdin.read()); w=r.get('best') or {}
print('$s', round(r['seconds']), 's; winner', w.get('params'), 'splits', w.get('splits'), round(w.get('gflops', 0)), 'GFLOPS')
for f in r['finalists']: print('  finalist', f['params'], round(f['gflops']), 'stage:', ', '.join(f\"{x['splits']}:{round(x.get('gflops') or 0)}\" for x in r['split_stage'] if x['params'] == f['params']))" \
    || echo "$s: tune failed or timed out"
done
date -u
for r in 1 2; do for s in 1x4096x4096 1x8192x8192 256x8192x8192; do
  IFS=x read m n k <<< "$s"
  for db in shipped tuned; do
    H=$OUT/empty; [ $db = tuned ] && H=$OUT/home
    CLGEMM_HOME=$H timeout 60 python3 -m clgemm run --kernel 5 --m $m --n $n --k $k --json 2>/dev/null \
      | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print('$r $s $db', r['tuned_at'], r['splits'], round(r['gflops']), r['verified'], r['params'])"
  done
done; done
date -u
