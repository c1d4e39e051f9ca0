# Session 3, last call (~2 minutes; what device time was left after two refused starts):
# the shuffle transpose with warps side by side (NW) at 8192^2; transposed operands read by
# the kernel against device transposes at 4096^3 with the current builds; the 8192^3 tunes
# of kernels 3 and 4 resumed with the warm start (call 1's cold TPE runs fell below the
# defaults there), each against the defaults.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
mkdir -p $CLGEMM_HOME && tar xzf .gpu/tune-home-call14.tgz -C $CLGEMM_HOME
for cfg in "2 8 1" "2 8 2" "4 8 2" "4 4 4" "8 4 4" "4 8 4"; do
  read w t nw <<< "$cfg"
  timeout 30 python3 -m clgemm transpose --kernel shuffle --size 8192 --param WARPS=$w \
    --param TILES=$t --param WIDE=1 --param NW=$nw --json >> $OUT/shuffle_nw.jsonl
done
timeout 30 python3 -m clgemm transpose --kernel local --size 8192 --json >> $OUT/shuffle_nw.jsonl
python3 -c "
import json
for r in map(json.loads, open('$OUT/shuffle_nw.jsonl')):
    print(r['kernel'], r['params'], round(r['gbps']), round(r['copy_gbps']), round(r['ratio_to_copy'], 3), r['verified'])"
for t in "--trans-a" "--trans-b"; do
  for by in kernel transpose; do
    timeout 30 python3 -m clgemm run --kernel 5 --size 4096 $t --transposed-by $by --json >> $OUT/trans4096.jsonl
  done
done
python3 -c "
import json
for r in map(json.loads, open('$OUT/trans4096.jsonl')):
    print('trans_a', r['trans_a'], 'trans_b', r['trans_b'], r['transposed_by'], r['launches'], round(r['gflops']), r['verified'])"
timeout 80 python3 scripts/tune_batch.py --workers 16 --compare --out $OUT/tune_8192.json \
  --job 3:8192:tpe:0:12 --job 4:8192:tpe:0:12 2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C $CLGEMM_HOME .
