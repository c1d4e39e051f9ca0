#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
echo "== pytest (kernel 8 on the H200)"
timeout 240 python3 -m pytest -q -x -n 8 tests/test_kernels.py tests/test_guard.py -k "8 or sm90a or tensor_core" 2>&1 | tail -3
echo "== points"
timeout 200 python3 scripts/points.py --kernel 8 --points "TSM=128,TSN=128;TSM=128,TSN=64;TSM=64,TSN=128;TSM=64,TSN=64" \
  --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192,4000x4000x4000 --rounds 2 --out "$OUT/points8.json" 2>&1 | tail -17
echo "== tune"
timeout 200 python3 scripts/tune_into_shipped.py --kernel 8 --commit "$CLGEMM_COMMIT" --out "$OUT/tune" \
  --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192,4000x4000x4000 --budget 4 --timeout 70 2>&1 | grep "^tune"
cp "$OUT/tune/nvidia-h200.json" clgemm/tuned/nvidia-h200.json
echo "== bench"
timeout 200 python3 -m clgemm bench --kernels 5,7,8 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out "$OUT/bench" 2>&1 | tail -3
