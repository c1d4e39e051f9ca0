# Session 9, call 2 (~6 minutes). Shallow products between the tuned shapes: the database
# had no entry with k below 768 except 8192x8192x256's neighbours, and 2100x2100x512 ran at
# 22.7 TFLOPS where 32 x 128 tiles reach 30.7 (session 8, call 3).
# (a) `clgemm tune` kernel 5 at 5 shallow shapes (TPE, warm-started, budget 10) into
#     $OUT/home; none is a shape of (c), which stay for validation.
# (b) scripts/db_residents.py merges them into the shipped database with resident counts.
# (c) before (the shipped database) / after (with the new entries) at 8 untuned shallow
#     shapes, GemmPlan's own rules both times, 2 rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for s in 1792x1792x512 2304x2304x512 3072x3072x384 4096x4096x512 6144x6144x256; do
  IFS=x read m n k <<< "$s"
  CLGEMM_HOME=$OUT/home timeout 100 python3 -m clgemm tune --kernel 5 --m $m --n $n --k $k --budget 10 --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); w=r.get('best') or {}; print('$s', r.get('seconds') and round(r['seconds']), 's', w.get('params'), round(w.get('gflops', 0)), 'GFLOPS')" \
    || echo "$s: tune failed or timed out"
done
date -u
CLGEMM_HOME=$OUT/home timeout 150 python3 scripts/db_residents.py --shipped clgemm/tuned/nvidia-h200.json --out $OUT/nvidia-h200.json \
  --note " Session 9: kernel 5 at 5 shallow shapes (scripts/h200_s9_call2.sh: clgemm tune --budget 10, results/h200/session9/call2/)." \
  2>&1 | grep -v -i "warn"
date -u
cp clgemm/tuned/nvidia-h200.json $OUT/db-before.json && cp $OUT/nvidia-h200.json clgemm/tuned/nvidia-h200.json
CLGEMM_HOME=$OUT/empty timeout 150 python3 -u scripts/choice_probe.py --db $OUT/db-before.json --rounds 2 --out $OUT --shapes \
2100x2100x512,2600x2600x600,2000x2000x540,3000x3000x500,1500x1500x400,5000x5000x300,2048x6144x512,3500x3500x700 \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -12
date -u
