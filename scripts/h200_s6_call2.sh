# Session 6, call 2 (~3 minutes). Where does a tile step of the shipped 8192^3 point go?
# Call 1: its loop is 1120 SASS instructions per tile, 1024 of them FFMA (91%), yet it
# runs at 76% of the FP32 peak, at 1980 MHz, not throttled. kernels/zz_strip.cl
# (untracked probe) leaves parts of the loop out (outputs wrong; timing only): NOG no global
# loads, NOSTS no local stores, NOBAR no barrier, NOLDS fragments read once before the loop.
# Also the shipped point with TSK=16 (half the barriers). 8192^3, 3 interleaved rounds,
# nvidia-smi every 50 ms; registers and SASS counts of each build.
# Probe sources: results/h200/session6/probes/.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
python3 scripts/probe_s6.py --set strip --sizes 8192 --rounds 3 --out $OUT 2>&1 | grep -v -i warn
kill $SMI
tar czf $OUT/sass.tgz -C $OUT sass && rm -r $OUT/sass
