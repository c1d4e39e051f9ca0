# Session 2, device call 4: finish the kernel 5 grid at 4096^3 (resumed from call 3's log in
# results/h200/tune/home), a TPE tune of kernel 5 at 2048^3, and `clgemm bench` again.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
mkdir -p $CLGEMM_HOME && cp -r results/h200/tune/home/. $CLGEMM_HOME/
python3 scripts/tune_batch.py --workers 16 --out $OUT/tune_k5b.json --job 5:4096:grid:0:100 \
  --job 5:2048:tpe:0:40 2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C /tmp/clgemm-home .
timeout 60 python3 -m clgemm bench --kernels 4,5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 | grep -v -i "warn\|lambda\|^ *$" | tail -3
