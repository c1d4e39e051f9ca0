# Session 11, call 1 (~8 minutes). The tuner's split stage: after its search and the
# re-measure, `clgemm tune` times the winner with each slice count of k that could pay
# (Evaluator.split_counts) and records the best as the entry's "splits"; gemm() then keeps
# that entry's total of work-groups at shapes near it (GemmPlan.splits).
# (a) `clgemm tune` kernel 5 at 1x4096x4096 (budget 10) and, budget 1 (the shipped winner
#     re-measured, then its split stage), at the other bench shapes where C has few tiles.
# (b) scripts/db_residents.py merges them into the shipped database.
# (c) before (the shipped database: gemm()'s split rule) / after, GemmPlan's own choice both
#     times, 2 rounds, at the tuned shapes and 10 untuned ones.
# (d) clgemm bench against cuBLAS at the bench shapes concerned, with the new database.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for t in 10:1x4096x4096 1:1024x1024x1024 1:512x512x512 1:2048x2048x2048 1:256x8192x8192 1:4096x1024x4096 1:1152x1152x1152 1:1536x4096x1536; do
  IFS=: read budget s <<< "$t"; IFS=x read m n k <<< "$s"
  CLGEMM_HOME=$OUT/home timeout 90 python3 -m clgemm tune --kernel 5 --m $m --n $n --k $k --budget $budget --workers 8 --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); w=r.get('best') or {}; print('$s', r.get('seconds') and round(r['seconds']), 's', w.get('params'), 'splits', w.get('splits'), round(w.get('gflops', 0)), 'GFLOPS;', ', '.join(f\"{x['splits']}:{round(x.get('gflops') or 0)}\" for x in r.get('split_stage', [])))" \
    || echo "$s: tune failed or timed out"
done
date -u
CLGEMM_HOME=$OUT/home timeout 150 python3 scripts/db_residents.py --shipped clgemm/tuned/nvidia-h200.json --out $OUT/nvidia-h200.json \
  --note " Session 11: the split stage of clgemm tune at 1x4096x4096 (budget 10) and, on the shipped winners (budget 1), at 1024^3, 512^3, 2048^3, 256x8192x8192, 4096x1024x4096, 1152^3, 1536x4096x1536 (scripts/h200_s11_call1.sh, results/h200/session11/call1/)." \
  2>&1 | grep -v -i "warn" | grep -i "from\|error" 
date -u
cp clgemm/tuned/nvidia-h200.json $OUT/db-before.json && cp $OUT/nvidia-h200.json clgemm/tuned/nvidia-h200.json
CLGEMM_HOME=$OUT/empty timeout 200 python3 -u scripts/choice_probe.py --db $OUT/db-before.json --rounds 2 --out $OUT --shapes \
1x4096x4096,1024,512,2048,256x8192x8192,4096x1024x4096,1152,1536x4096x1536,1x8192x8192,1x2000x3000,4x4096x4096,32x4096x4096,128x8192x8192,384x6144x6144,900,1200,1800,3000x1000x3000 \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -22
date -u
CLGEMM_HOME=$OUT/empty timeout 120 python3 -m clgemm bench --kernels 5 --against cublas --sizes 512,1024,2048 \
  --shapes 256x8192x8192,4096x1024x4096,1x4096x4096 --out $OUT/bench 2>&1 | grep -v -i warn | tail -16
date -u
