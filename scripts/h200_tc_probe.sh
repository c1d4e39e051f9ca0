# Kernel 7 at several points against kernel 5 and cuBLAS at 4096^3 and 8192^3 (session 14,
# calls 2 and 3): registers and PTX counts per point, then scripts/tc_probe.py with clock
# and power sampled every 50 ms. Run after `source .gpu/activate.sh`:
#   bash scripts/h200_tc_probe.sh ROUNDS "TSM,TSN,TSK,WM,WN ..."
rounds=$1 POINTS=$2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
for p in $POINTS; do
  IFS=, read tsm tsn tsk wm wn <<< "$p"
  python3 scripts/inspect_ptx.py --kernels 7 --param TSM=$tsm --param TSN=$tsn --param TSK=$tsk \
    --param WM=$wm --param WN=$wn --option=-DEXACT --save-ptx $OUT/ptx-$tsm-$tsn-$tsk-$wm-$wn 2>&1 | grep -v "^OpenCL"
done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
ARGS=""; for p in $POINTS; do ARGS="$ARGS --point $p"; done
timeout 400 python3 scripts/tc_probe.py --sizes 4096,8192 --rounds $rounds --out $OUT $ARGS 2>&1 | grep -v -i warn
kill $SMI
python3 scripts/cublas_ref.py --sizes 4096,8192 2>&1 | grep cuBLAS
gzip -q $OUT/ptx-*/*.ptx || true
date -u
