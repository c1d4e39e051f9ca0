# Session 6, call 1 (~5 minutes). Two levers on kernel 5 at 8192^3, the one shape short of
# 1.2x CLBlast (session 5 found clgemm-5 there at the 700 W power cap, cuBLAS at 663-674 W):
# 1. kernels/zz_async.cl (untracked probe): tile loads by cp.async (inline PTX) straight
#    into local memory, STAGES = 2, 3, 4 buffers deep: no staging registers, no STS.
#    Predicted: fewer instructions and register-file traffic, so less energy per FLOP.
# 2. kernels/zz_raster.cl (untracked probe): kernel 5 with groups launched in bands of
#    GROUP_M tile rows (8, 16). Predicted: fewer DRAM reads (B re-read 64/GROUP_M times
#    instead of ~16), a few watts.
# Registers, PTX and SASS counts (ptxas + cuobjdump of the PTX) of each build first; then
# 3 interleaved rounds at 8192^3 and 4096^3 (A K-major), with nvidia-smi sampling
# clock and power every 50 ms.
# Probe sources: results/h200/session6/probes/.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u; python3 -c "import time; print('epoch', time.time())"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv
which ptxas cuobjdump
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
python3 scripts/probe_s6.py --sizes 8192,4096 --rounds 3 --out $OUT 2>&1 | grep -v -i warn
kill $SMI
