# Session 6, call 6 (~1 minute). Call 5's bench put 4000^3 (padded to 4096 x 4096 x 4000) at
# 44.1 TFLOPS, 2.90 ms, where the tuner timed its GEMM launch alone at 2.72 ms: where do
# the other 0.18 ms go? Each launch of the plan with its own interval and the gaps between
# them, and the padding copy (copy_rect) against a flat copy and a float4 row-copy kernel.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for s in 4000x4000x4000 8000x8000x8000; do
  timeout 120 python3 -u scripts/pad_probe.py --shape $s --repeat 20 --json $OUT/pad-$s.json 2>&1 \
    | grep --line-buffered -v -i "warn\|lambda"
done
