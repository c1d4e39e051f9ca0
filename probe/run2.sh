#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
echo "== k8 probe"
timeout 300 python3 probe/k8_probe.py 4096x4096x4096,8192x8192x8192 "FOLD=32;FOLD=16"
echo "== k5 ptx entry"
K5="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4 --param PAD=1"
python3 scripts/inspect_ptx.py --kernels 5 $K5 --option=-DEXACT --save-ptx /tmp/ptx5 >/dev/null 2>&1
grep -n -A14 "\.entry" /tmp/ptx5/kernel5.ptx | head -30
grep -n "envreg" /tmp/ptx5/kernel5.ptx | head -5
tr -d '\000' < /tmp/ptx5/kernel5.ptx > /tmp/k5.ptx
ptxas -arch=sm_90 -O3 -v /tmp/k5.ptx -o /tmp/k5.cubin && cuobjdump -sass /tmp/k5.cubin > "$OUT/k5.sass"
echo "== cupy launch"
timeout 60 python3 scripts/ncu_ptx.py --ptx /tmp/ptx5/kernel5.ptx --kernel 5 $K5 --shape 4096x4096x4096 2>&1 | tail -3
echo "== ncu on OpenCL directly"
timeout 120 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats -k regex:gemm -c 1 --launch-skip 2 python3 -m clgemm run --kernel 5 --size 4096 --param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param PAD=1 2>&1 | tail -40
ls -la "$OUT"
