# Session 14, call 8 (~2 minutes). The closing bench again at this session's last code
# (kernel 7 unchanged since call 5; gemm()'s opt-in rule and the tuner's strategy do not
# touch the bench, which runs each kernel by name): a second sample of call 5's numbers,
# CLBlast's best among them.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout 300 python3 -m clgemm bench --kernels 5,7 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -5
date -u
