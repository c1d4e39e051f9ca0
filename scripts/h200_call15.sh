# Session 3, call 5 (~5 minutes): registers of the builds with and without SPLIT_K; the
# 8192^3 tunes resumed with the warm start (winners at other shapes and the defaults are
# proposed first; the cold TPE runs of call 1/4 fell below the defaults for kernels 3 and
# 4); transposed operands read by the kernel against device transposes at 4096^3; and the
# bench once more with the final database. Then the shuffle transpose with warps side by
# side along the columns (NW), against the default layout (NW=1), at 8192^2.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
mkdir -p $CLGEMM_HOME && tar xzf .gpu/tune-home-call14.tgz -C $CLGEMM_HOME
P16="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4 --param PAD=1"
for opt in "--source zz_prev.cl" "" "--option=-DSPLIT_K"; do
  python3 scripts/inspect_ptx.py --kernels 5 $P16 --option=-DEXACT $opt 2>&1 | grep -A1 "^kernel" | tee -a $OUT/registers.txt
done
timeout 185 python3 scripts/tune_batch.py --workers 16 --compare --out $OUT/tune_8192.json \
  --job 3:8192:tpe:0:15 --job 4:8192:tpe:0:15 --job 5:8192:tpe:0:20 --job 5:256x8192x8192:tpe:0:10 2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C $CLGEMM_HOME .
timeout 150 python3 -m clgemm bench --kernels 4,5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep -v -i "warn\|lambda\|^ *$" | tail -5
for t in "" "--trans-a" "--trans-b" "--trans-a --trans-b"; do
  for by in kernel transpose; do
    python3 -m clgemm run --kernel 5 --size 4096 $t --transposed-by $by --json \
      | python3 -c "import json,sys; r=json.load(sys.stdin); print(json.dumps(r))" >> $OUT/trans4096.jsonl
  done
done
python3 -c "
import json
for r in map(json.loads, open('$OUT/trans4096.jsonl')):
    print('trans_a', r['trans_a'], 'trans_b', r['trans_b'], r['transposed_by'], r['launches'], round(r['gflops']), r['verified'])"
for round in 1; do
  for cfg in "2 8 1" "2 8 2" "4 8 2" "4 4 4" "8 4 4" "4 8 4"; do
    read w t nw <<< "$cfg"
    timeout 30 python3 -m clgemm transpose --kernel shuffle --size 8192 --param WARPS=$w \
      --param TILES=$t --param WIDE=1 --param NW=$nw --json >> $OUT/shuffle_nw.jsonl
  done
  timeout 30 python3 -m clgemm transpose --kernel local --size 8192 --json >> $OUT/shuffle_nw.jsonl
done
python3 -c "
import json
for r in map(json.loads, open('$OUT/shuffle_nw.jsonl')):
    print(r['kernel'], r['params'], round(r['gbps']), round(r['copy_gbps']), round(r['ratio_to_copy'], 3), r['verified'])"
