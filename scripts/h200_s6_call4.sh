# Session 6, call 4 (~2 minutes). Call 3 found the rasterised builds 5% slower with 15% fewer
# register-reuse operands in their SASS: the FFMA schedule, not the launch order, may be
# what moved. kernels/zz_order.cl (untracked probe): the FFMAs of a k step written in
# other orders (ORDER 1 serpentine rows, 2 columns outer, 3 serpentine columns), shipped
# point, 8192^3 and 4096^3 (A K-major), 2 interleaved rounds; SASS counts of each build.
# Probe sources: results/h200/session6/probes/.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
timeout 300 python3 -u scripts/probe_s6.py --set order --sizes 8192,4096 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i warn
kill $SMI
tar czf $OUT/sass.tgz -C $OUT sass && rm -r $OUT/sass
