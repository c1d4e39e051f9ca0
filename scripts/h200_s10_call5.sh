# Session 10, call 5 (~1 minute). The closing bench once more, with everything this session
# landed: kernel 6 and 8192x8192x256 tuned (call 4), the input checks. Kernel 5 unchanged.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout 300 python3 -m clgemm bench --kernels 5,6 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep --line-buffered -i "wrote\|error\|skipped" | tail -8
date -u
