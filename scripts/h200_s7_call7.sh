# Session 7, call 7 (~3 minutes). With the code as it lands (padding threshold 2^31; no
# kernel change this session): the API tests on the H200, then the closing bench of issue 6
# (kernel 5 against CLBlast's default and two tuned sets, and cuBLAS).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_gemm_api.py 2>&1 | tail -3
timeout 250 python3 -m clgemm bench --kernels 5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -3
