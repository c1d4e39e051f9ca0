# Session 8, call 5 (~5 minutes). Call 4's database came back with resident counts for only
# 7 of 36 entries: NVIDIA's driver prints ptxas's report only when it compiles PTX it has not
# cached (call 4b), and the tunes had compiled the rest already. build.footprint now adds
# an empty kernel of a new name so that the PTX is always new.
# (a) scripts/db_residents.py again: call 4's tuned entries merged, every entry's resident
#     work-groups per multiprocessor, written to $OUT/nvidia-h200.json and put in place here.
# (b) scripts/choice_probe.py: gemm()'s choices at untuned shapes (call 3's 18 and 7 more),
#     before (the old database's nearest entry, the old padding rule) against after,
#     interleaved, 2 rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 150 python3 scripts/db_residents.py --shipped clgemm/tuned/nvidia-h200.json \
  --merge results/h200/session8/call4/nvidia-h200-580.159.04.json --out $OUT/nvidia-h200.json \
  --note " Session 8: kernel 5 at 14 shapes between those (scripts/h200_s8_call4.sh: clgemm tune --budget 10, results/h200/session8/call4/), and every entry's work-groups resident per multiprocessor (scripts/h200_s8_call5.sh, scripts/db_residents.py)." \
  2>&1 | grep -v -i "warn\|lambda" | grep -v "^from "
cp $OUT/nvidia-h200.json clgemm/tuned/nvidia-h200.json
date -u
timeout 400 python3 -u scripts/choice_probe.py --old-db results/h200/session8/db-before.json --rounds 2 --out $OUT --shapes \
1100,1256,1300,1400,1500,1700,2100,2300,2600,3000,3300,5000,6000,2100x2100x512,1300x4000x1300,3000x1000x3000,4200,6144x6144x1024,1777,2999,3777x2222x1999,5555,999x3333x2222,1250x1250x4000,2600x2600x600 \
  2>&1 | grep --line-buffered -v -i "warn\|lambda"
date -u
