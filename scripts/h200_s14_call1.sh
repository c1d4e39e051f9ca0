# Session 14, call 1 (~6 minutes). Kernel 7 (tensor cores: mma.sync.m16n8k8 on TF32 by
# inline PTX, three MMAs per float product) on the H200 for the first time.
# 1. Registers, spills and the PTX's MMA and conversion counts at each point.
# 2. Seven points against kernel 5 (gemm()'s pick) at 4096^3 and 8192^3, 2 interleaved
#    rounds, each output verified against float64, errors side by side; odd shapes.
# 3. cuBLAS FP32 (TF32 off) at the same sizes, for scale; clock and power every 50 ms.
# Predicted: mma.sync's TF32 rate on Hopper is well above 3x the FP32 FFMA rate, so even a
# plain first kernel may pass kernel 5 if the fragment loads and splits keep up.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
POINTS="128,128,16,64,32 128,128,16,32,64 128,128,16,64,64 128,256,8,64,64 256,128,8,64,64 64,128,16,32,32 128,128,8,64,32"
for p in $POINTS; do
  IFS=, read tsm tsn tsk wm wn <<< "$p"
  python3 scripts/inspect_ptx.py --kernels 7 --param TSM=$tsm --param TSN=$tsn --param TSK=$tsk \
    --param WM=$wm --param WN=$wn --option -DEXACT --save-ptx $OUT/ptx-$tsm-$tsn-$tsk-$wm-$wn 2>&1 | grep -v "^OpenCL"
done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
ARGS=""; for p in $POINTS; do ARGS="$ARGS --point $p"; done
timeout 400 python3 scripts/tc_probe.py --sizes 4096,8192 --rounds 2 --out $OUT $ARGS 2>&1 | grep -v -i warn
kill $SMI
python3 scripts/cublas_ref.py --sizes 4096,8192 2>&1 | grep cuBLAS
gzip -q $OUT/ptx-*/*.ptx
date -u
