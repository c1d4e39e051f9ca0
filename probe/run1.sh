#!/usr/bin/env bash
# one device run: the wgmma-through-patched-PTX probe, SASS of kernels 5 and 7, and
# Nsight Compute's stall picture of kernel 5, kernel 7 and cuBLAS
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
echo "== wgmma probe"; timeout 120 python3 probe/wgmma_probe.py
K5="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4 --param PAD=1"
K7="--param TSM=128 --param TSN=128 --param TSK=32 --param WM=64 --param WN=32 --param FOLD=16"
echo "== ptx"
python3 scripts/inspect_ptx.py --kernels 5 $K5 --option=-DEXACT --save-ptx /tmp/ptx5
python3 scripts/inspect_ptx.py --kernels 7 $K7 --option=-DEXACT --save-ptx /tmp/ptx7
PTXAS=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas | head -1)
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump | head -1)
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
echo "tools: $PTXAS $CUOBJ $NCU"
for k in 5 7; do
  $PTXAS -arch=sm_90 -O3 -v /tmp/ptx$k/kernel$k.ptx -o /tmp/k$k.cubin && $CUOBJ -sass /tmp/k$k.cubin > "$OUT/k$k.sass"
done
echo "== launch check"
timeout 60 python3 scripts/ncu_ptx.py --ptx /tmp/ptx5/kernel5.ptx --kernel 5 $K5 --shape 4096x4096x4096
timeout 60 python3 scripts/ncu_ptx.py --ptx /tmp/ptx7/kernel7.ptx --kernel 7 $K7 --shape 4096x4096x4096
SECT="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section InstructionStats --section SourceCounters"
prof() {  # name, kernel regex, args...
  local name=$1 re=$2; shift 2
  timeout 150 $NCU --clock-control none $SECT -k "regex:$re" --launch-skip 1 -c 1 -f -o /tmp/$name python3 scripts/ncu_ptx.py "$@" 2>&1 | tail -3
}
echo "== ncu"
prof k5-4096 gemm --ptx /tmp/ptx5/kernel5.ptx --kernel 5 $K5 --shape 4096x4096x4096
prof cub-4096 gemm --cublas --shape 4096x4096x4096
prof k7-4096 gemm --ptx /tmp/ptx7/kernel7.ptx --kernel 7 $K7 --shape 4096x4096x4096
prof k5-2048 gemm --ptx /tmp/ptx5/kernel5.ptx --kernel 5 $K5 --shape 2048x2048x2048
prof cub-2048 gemm --cublas --shape 2048x2048x2048
for r in k5-4096 cub-4096 k7-4096 k5-2048 cub-2048; do
  [ -f /tmp/$r.ncu-rep ] && { echo "### $r"; $NCU --import /tmp/$r.ncu-rep --page details --csv; } 
done > "$OUT/ncu-details.csv"
for r in k5-4096 k7-4096 cub-4096; do
  [ -f /tmp/$r.ncu-rep ] && $NCU --import /tmp/$r.ncu-rep --page source --csv --print-source sass > "$OUT/src-$r.csv" 2>&1
done
ls -la "$OUT"
