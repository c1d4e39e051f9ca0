# Session 2, the last device call: the exhaustive kernel 5 sweep at 4096^3 (EXACT builds,
# register cap, slow-configuration cutoff; resumable), then `clgemm bench` with that result
# in the database, against CLBlast (default and the anchor's tuned parameters) and cuBLAS.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
python3 scripts/tune_batch.py --workers 16 --out $OUT/tune_k5.json --job 5:4096:grid:0:270 \
  2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C /tmp/clgemm-home .
timeout 200 python3 -m clgemm bench --kernels 4,5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 | grep -v -i "warn\|lambda\|^ *$" | tail -40
