# Session 11, call 2 (~3 minutes). The database as it lands: call 1's split stages with the
# count re-chosen by the margin rule (scripts/split_margin.py: the fewest slices within 2% of
# the fastest), so 256x8192x8192 keeps 2 slices (not 8) and 1152^3 none (not 4).
# (a) before (call 1's db-before.json, the shipped database: gemm()'s split rule) / after (the
#     working tree's), GemmPlan's own choice both times, 2 rounds, at the two changed tuned
#     shapes and 14 untuned ones (call 1's ten and four more).
# (b) clgemm bench against cuBLAS at the bench shapes where the database now records a split.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
CLGEMM_HOME=$OUT/empty timeout 300 python3 -u scripts/choice_probe.py --db results/h200/session11/call1/db-before.json --rounds 2 --out $OUT --shapes \
256x8192x8192,1152,1x8192x8192,1x2000x3000,4x4096x4096,32x4096x4096,128x8192x8192,384x6144x6144,900,1200,1800,3000x1000x3000,8x8192x8192,64x2048x8192,200x4000x6000,1250 \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -20
date -u
CLGEMM_HOME=$OUT/empty timeout 120 python3 -m clgemm bench --kernels 5 --against cublas --sizes 1024 \
  --shapes 256x8192x8192,1x4096x4096,1x8192x8192,32x4096x4096 --out $OUT/bench 2>&1 | grep -v -i warn | tail -14
date -u
