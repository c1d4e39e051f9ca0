# Session 4, call 3 (~5 minutes): the shipped state. The three transposes at 8192^2 once
# more (the shuffle one at its new defaults), then the bench against CLBlast and cuBLAS,
# with the database as shipped (an empty CLGEMM_HOME): kernel 5's 8192^3 entry is call 2's
# A_KMAJOR winner, and gemm() now turns A K-major there (GemmPlan.kmajor_a).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home-empty
for t in shuffle local naive; do
  timeout 30 python3 -m clgemm transpose --kernel $t --size 8192 --json >> $OUT/transposes.jsonl
done
python3 -c "
import json
for r in map(json.loads, open('$OUT/transposes.jsonl')):
    print(r['kernel'], r['params'], round(r['gbps']), round(r['copy_gbps']), round(r['ratio_to_copy'], 3), r['verified'])"
timeout 450 python3 -m clgemm bench --kernels 4,5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep -v -i "warn\|lambda\|^ *$" | tail -40
