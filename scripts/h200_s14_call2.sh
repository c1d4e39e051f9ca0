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
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
POINTS="128,128,16,64,64 128,256,8,64,64 256,128,8,64,64 128,128,16,32,64 128,128,8,64,64 64,128,16,32,64 128,64,16,64,32 64,256,16,32,64"
for p in $POINTS; do
  IFS=, read tsm tsn tsk wm wn <<< "$p"
  python3 scripts/inspect_ptx.py --kernels 7 --param TSM=$tsm --param TSN=$tsn --param TSK=$tsk \
    --param WM=$wm --param WN=$wn --option=-DEXACT --save-ptx $OUT/ptx-$tsm-$tsn-$tsk-$wm-$wn 2>&1 | grep -v "^OpenCL"
done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
ARGS=""; for p in $POINTS; do ARGS="$ARGS --point $p"; done
timeout 400 python3 scripts/tc_probe.py --sizes 4096,8192 --rounds 2 --out $OUT $ARGS 2>&1 | grep -v -i warn
kill $SMI
python3 scripts/cublas_ref.py --sizes 4096,8192 2>&1 | grep cuBLAS
gzip -q $OUT/ptx-*/*.ptx || true
date -u
