#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
timeout 200 python3 probe/k8_probe.py 8192x8192x8192 "TSK=32;HALFST=1"
K5="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4 --param PAD=1"
python3 scripts/inspect_ptx.py --kernels 5 $K5 --option=-DEXACT --save-ptx /tmp/ptx5 >/dev/null 2>&1
timeout 60 python3 scripts/ncu_ptx.py --ptx /tmp/ptx5/kernel5.ptx --kernel 5 $K5 --shape 4096x4096x4096 2>&1 | tail -2
SECT="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats --section SourceCounters"
for s in 4096 2048; do
  timeout 120 ncu --clock-control none $SECT -k regex:gemm --launch-skip 1 -c 1 -f -o /tmp/k5-$s python3 scripts/ncu_ptx.py --ptx /tmp/ptx5/kernel5.ptx --kernel 5 $K5 --shape ${s}x${s}x${s} 2>&1 | tail -2
  timeout 120 ncu --clock-control none $SECT -k regex:gemm --launch-skip 1 -c 1 -f -o /tmp/cub-$s python3 scripts/ncu_ptx.py --cublas --shape ${s}x${s}x${s} 2>&1 | tail -2
done
for r in k5-4096 cub-4096 k5-2048 cub-2048; do echo "### $r"; ncu --import /tmp/$r.ncu-rep --page details --csv; done > "$OUT/ncu-details.csv"
ncu --import /tmp/k5-4096.ncu-rep --page source --csv --print-source sass > "$OUT/src-k5-4096.csv" 2>&1
ls -la $OUT
