# Session 14, call 4 (~5 minutes). Kernel 7's first tunes on the H200 (its parameter
# space: 229 valid points of 960), budget 40 each, into the shipped database, at the
# square shapes of the bench: 8192^3, 4096^3, 2048^3 and 4000^3. Call 3's best point by
# hand (128 x 64 x 16, warps of 64 x 32, now the registry default) ran 55.2 TFLOPS at
# 8192^3 and 53.4 at 4096^3.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
python3 scripts/tune_into_shipped.py --kernel 7 --budget 40 --timeout 100 --out $OUT \
  --shapes 8192x8192x8192,4096x4096x4096,2048x2048x2048,4000x4000x4000 \
  --note "session 14 call 4 (scripts/h200_s14_call4.sh)" 2>&1 | grep -v -i warn
date -u
