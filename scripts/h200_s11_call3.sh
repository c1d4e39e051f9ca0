# Session 11, call 3 (~6 minutes). The closing bench with everything landed: the database
# with the split stage's counts (calls 1-2) and kernel 6's entries of session 10, which no
# bench with peers had run. Same command as session 10's call 2.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout 520 python3 -m clgemm bench --kernels 5,6 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -40
date -u
