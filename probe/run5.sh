#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
export CLGEMM_COMMIT=${CLGEMM_COMMIT:-wip}
echo "== pytest (kernel 8 on the H200)"
timeout 240 python3 -m pytest -q -x -n 8 tests/test_kernels.py tests/test_guard.py -k "8 or sm90a or tensor_core" 2>&1 | tail -6
echo "== points"
timeout 200 python3 scripts/points.py --kernel 8 --points "TSM=128,TSN=128;TSM=128,TSN=64;TSM=64,TSN=128;TSM=64,TSN=64" \
  --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192,4000x4000x4000 --rounds 2 --out "$OUT/points8.json" 2>&1 | tail -20
timeout 100 python3 scripts/points.py --kernel 7 --points "TSM=128,TSN=128,TSK=32,WM=64,WN=32,FOLD=16" \
  --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192,4000x4000x4000 --rounds 1 --out /tmp/points7.json 2>&1 | tail -5
echo "== tune"
timeout 280 python3 scripts/tune_into_shipped.py --kernel 8 --commit "$CLGEMM_COMMIT" --out "$OUT/tune" \
  --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192,4000x4000x4000 --budget 4 --timeout 70 2>&1 | tail -8
ls -la "$OUT" "$OUT/tune"
