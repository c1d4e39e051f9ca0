# Session 14, call 3 (~4 minutes). Call 2's fix (fresh MMA sums folded in by float adds)
# verified everywhere (5.8e-7 at 8192^3 against kernel 5's 1.6e-6) but cost speed: 70.4 ->
# 55.4 TFLOPS at the best point, 255 registers with spills. Now the k step loads B's
# fragments once and A's one MMA row at a time, and keeps fresh sums for one row of NJ
# tiles only (NJ*4 registers, not MI*NJ*4). Predicted: no spills, most of the loss back.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
bash scripts/h200_tc_probe.sh 1 "128,128,16,64,64 128,128,16,64,32 128,128,16,32,64 64,128,16,32,64 128,64,16,64,32 128,256,8,64,64 256,128,8,64,64 128,128,8,64,64 128,128,16,128,32"
