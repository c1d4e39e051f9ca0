# Session 14, call 2 (~5 minutes). Call 1's kernel 7 ran at up to 70.4 TFLOPS at 8192^3
# but failed verification there: 5.7e-5 relative error against kernel 5's 1.6e-6, doubling
# from 4096^3 to 8192^3, the same at every point: the tensor cores' adder truncates, and
# every MMA added into the long-running accumulator. Now each 8-deep step's three MMAs
# start from zero and a float add (round to nearest) folds them into the accumulator.
# Predicted: errors at or below kernel 5's; 4 FADDs per 3 MMAs cost a few percent.
# Also: registers and spills per point (call 1's --option was mis-parsed).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
bash scripts/h200_tc_probe.sh 2 "128,128,16,64,64 128,256,8,64,64 256,128,8,64,64 128,128,16,32,64 128,128,8,64,64 64,128,16,32,64 128,64,16,64,32 64,256,16,32,64"
