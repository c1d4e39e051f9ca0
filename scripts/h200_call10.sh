# Prepared for the next device session (not run yet): the tuned bests issue 5 lacks and the
# bench's odd shapes, into a database that the bench then uses, in one call (~8 minutes).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
python3 scripts/tune_batch.py --workers 16 --out $OUT/tune_all.json \
  --job 2:1024:grid:0:15 --job 2:2048:grid:0:15 --job 2:4096:grid:0:15 --job 2:8192:grid:0:20 \
  --job 3:1024:tpe:0:20 --job 3:2048:tpe:0:20 --job 3:4096:tpe:0:25 --job 3:8192:tpe:0:30 \
  --job 4:1024:tpe:0:20 --job 4:2048:tpe:0:20 --job 4:8192:tpe:0:30 \
  --job 5:1024:tpe:0:25 --job 5:8192:tpe:0:35 --job 5:512:tpe:0:15 --job 5:4000:tpe:0:25 \
  --job 5:1x4096x4096:tpe:0:15 --job 5:4096x4096x1:tpe:0:15 \
  2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C /tmp/clgemm-home .
timeout 90 python3 -m clgemm bench --kernels 3,4,5 --against clblast,cublas \
  --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench 2>&1 \
  | grep -v -i "warn\|lambda\|^ *$" | tail -45
