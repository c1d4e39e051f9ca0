# Session 14, call 5 (~5 minutes). (a) Kernel 7 tuned again at the bench's square shapes,
# budget 60, now by TPE (call 4's budget of 40 took the grid's first 40 points, all 32-row
# tiles: 46.7 TFLOPS at 8192^3 against 55.2 for the defaults; the tuner now takes the grid
# only when the budget covers it, and a grid starts from the warm-start points), into the
# shipped database. (b) The closing bench with kernels 5, 6 and 7 against CLBlast (default
# database and its own tuner's parameters) and cuBLAS, as in session 13's call 6.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
python3 scripts/tune_into_shipped.py --kernel 7 --budget 60 --timeout 120 --out $OUT \
  --shapes 8192x8192x8192,4096x4096x4096,2048x2048x2048,4000x4000x4000 \
  --note "session 14 call 5 (scripts/h200_s14_call5.sh)" 2>&1 | grep -v -i warn
date -u
bash scripts/h200_bench.sh 5,6,7 400 50
