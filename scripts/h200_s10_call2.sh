# Session 10, call 2 (~7 minutes). The closing bench of issue 6 with the code as it lands
# (session 9's host-side changes: pooled kernel objects, the kept choice; the database with
# session 10's shallow entries, which no bench shape reaches), kernels 5 and 6.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout 520 python3 -m clgemm bench --kernels 5,6 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -40
date -u
