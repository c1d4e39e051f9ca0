# Session 8, call 4 (~8 minutes). Calls 2-3: at untuned shapes the nearest tuned entry's
# configuration can spill into a part-filled wave (2100^3: 0.75 of the best tuned
# configuration); predicting each near entry's launch by its waves picks the best one
# if the database has entries near enough (a throwaway replica over call 3's shapes
# said so; not kept).
# (a) `clgemm tune` kernel 5 at 14 more shapes between the tuned ones (TPE, warm-started
#     with the database's winners, budget 10), into $OUT/home; none is a call 3 shape,
#     which stay for validation (call 5).
# (b) scripts/db_residents.py: work-groups resident per compute unit for every entry,
#     the new ones merged in, written to $OUT/nvidia-h200.json.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=$OUT/home
date -u
for s in 1152x1152x1152 1360x1360x1360 1600x1600x1600 1850x1850x1850 2240x2240x2240 \
         2432x2432x2432 2800x2800x2800 3584x3584x3584 4608x4608x4608 5632x5632x5632 \
         7000x7000x7000 2048x2048x768 1536x4096x1536 4096x2048x2048; do
  IFS=x read m n k <<< "$s"
  timeout 100 python3 -m clgemm tune --kernel 5 --m $m --n $n --k $k --budget 10 --json 2>/dev/null \
    | tee -a $OUT/tune.jsonl \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); w=r.get('best') or {}; print('$s', r.get('seconds') and round(r['seconds']), 's', w.get('params'), round(w.get('gflops', 0)), 'GFLOPS')" \
    || echo "$s: tune failed or timed out"
done
date -u
timeout 120 python3 scripts/db_residents.py --shipped clgemm/tuned/nvidia-h200.json --out $OUT/nvidia-h200.json \
  --note " Session 8: kernel 5 at 14 shapes between those (scripts/h200_s8_call4.sh: clgemm tune --budget 10, results/h200/session8/call4/), and every entry's work-groups resident per multiprocessor (scripts/db_residents.py)." \
  2>&1 | grep -v -i "warn"
date -u
