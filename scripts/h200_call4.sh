# One device call: tuner throughput, the exhaustive kernel-5 sweep, kernel 4, transposes, kernel 6.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
python3 scripts/tune_batch.py --workers 12 --out $OUT/tune_summary.json \
  --job 5:2048:random:400:40 --job 5:4096:grid:0:330 --job 4:4096:tpe:300:45 2>&1 | grep -v -i "warn\|lambda"
tar czf $OUT/tune-home.tgz -C /tmp/clgemm-home .
for p in "WARPS=1 TILES=2" "WARPS=1 TILES=4" "WARPS=2 TILES=2" "WARPS=2 TILES=4" "WARPS=4 TILES=2" "WARPS=1 TILES=8" "WARPS=4 TILES=4"; do
  set -- $p; python3 -m clgemm transpose --kernel shuffle --size 8192 --param $1 --param $2 --repeat 10 --json >> $OUT/transpose_shuffle.jsonl 2>/dev/null
done
python3 -c "
import json
for l in open('$OUT/transpose_shuffle.jsonl'):
    r=json.loads(l); print('shuffle', r['params'], round(r['gbps']), 'copy', round(r['copy_gbps']), 'ratio %.3f'%r['ratio_to_copy'], r['verified'])"
for i in 1 2; do for k in 5 6; do python3 -m clgemm run --kernel $k --size 4096 --param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=8 --param WPTN=8 --param WIDTH=4 --param PAD=0 --repeat 20 --json 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin); print('k', r['kernel'], round(r['gflops']), r['verified'])"; done; done
