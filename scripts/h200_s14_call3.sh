# Session 14, call 3 (~4 minutes). Call 2's fix (fresh MMA sums folded in by float adds)
# verified everywhere (5.8e-7 at 8192^3 against kernel 5's 1.6e-6) but cost speed: 70.4 ->
# 55.4 TFLOPS at the best point, 255 registers with spills. Now the k step loads B's
# fragments once and A's one MMA row at a time, and keeps fresh sums for one row of NJ
# tiles only (NJ*4 registers, not MI*NJ*4). Predicted: no spills, most of the loss back.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
POINTS="128,128,16,64,64 128,128,16,64,32 128,128,16,32,64 64,128,16,32,64 128,64,16,64,32 128,256,8,64,64 256,128,8,64,64 128,128,8,64,64 128,128,16,128,32"
for p in $POINTS; do
  IFS=, read tsm tsn tsk wm wn <<< "$p"
  python3 scripts/inspect_ptx.py --kernels 7 --param TSM=$tsm --param TSN=$tsn --param TSK=$tsk \
    --param WM=$wm --param WN=$wn --option=-DEXACT --save-ptx $OUT/ptx-$tsm-$tsn-$tsk-$wm-$wn 2>&1 | grep -v "^OpenCL"
done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
ARGS=""; for p in $POINTS; do ARGS="$ARGS --point $p"; done
timeout 400 python3 scripts/tc_probe.py --sizes 4096,8192 --rounds 1 --out $OUT $ARGS 2>&1 | grep -v -i warn
kill $SMI
python3 scripts/cublas_ref.py --sizes 4096,8192 2>&1 | grep cuBLAS
gzip -q $OUT/ptx-*/*.ptx || true
date -u
