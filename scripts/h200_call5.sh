# One device call: tuner throughput after reading back only the checked rows, the kernel
# table for kernels 1-6 at the current code, and the two fast transposes.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
python3 scripts/tune_batch.py --workers 12 --out $OUT/tune_throughput.json \
  --job 5:2048:random:300:30 2>&1 | grep -v -i "warn\|lambda"
tar czf $OUT/tune-home2.tgz -C /tmp/clgemm-home .
python3 scripts/kernel_table.py --kernels 1,2,3,4,5,6 --sizes 1024,2048,4096,8192,4000 --repeat 5 \
  --out $OUT/kernels 2>&1 | grep -v -i "warn\|lambda" | tail -12
for k in local shuffle; do python3 -m clgemm transpose --kernel $k --size 8192 --json 2>/dev/null >> $OUT/transposes.jsonl; done
python3 -c "
import json
for l in open('$OUT/transposes.jsonl'):
    r=json.loads(l); print(r['kernel'], r['params'], round(r['gbps']), 'copy', round(r['copy_gbps']), 'ratio %.3f'%r['ratio_to_copy'], r['verified'])"
