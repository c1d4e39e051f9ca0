# Session 8, call 6 (~6 minutes). With the code as it lands (the database of call 5 with
# resident counts, the wave prediction, padding from k >= 256 and min(m, n) >= 1024):
# (a) before/after at the shapes the padding rule decides (call 5 had k >= 768, which lost
#     5-7% at 2100x2100x512 and 2600x2600x600), 2 rounds;
# (b) the API and tuner tests on the H200; (c) the closing bench of issue 6.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 200 python3 -u scripts/choice_probe.py --old-db results/h200/session8/db-before.json --rounds 2 --out $OUT --shapes \
2100x2100x512,2600x2600x600,2000x2000x540,4000x4000x135,3000x3000x240,1000x1000x2150,999x3333x2222,4000x4000x1000 \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -10
timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_gemm_api.py tests/test_tune.py 2>&1 | tail -3
timeout 250 python3 -m clgemm bench --kernels 5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -3
date -u
