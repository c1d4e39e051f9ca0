# Session 6, call 5 (~5 minutes). gemm() now uploads a numpy operand straight into its
# zero-padded buffer, and `clgemm run` / `bench` start from device-resident operands (so
# padding copies stay in the timed launches). 1. The gemm API tests on the H200. 2. The
# whole bench (kernel 5, default sizes and shapes) against CLBlast (default and the tuned
# parameter sets) and cuBLAS, for the closing table of issue 6.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 150 python3 -m pytest -q tests/test_gemm_api.py 2>&1 | tail -2
timeout 380 python3 -m clgemm bench --kernels 5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -40
