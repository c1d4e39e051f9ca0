# Session 3, call 1 (~9 minutes): the tuned bests issue 5 still lacks (kernels 2-4 at
# 1024^3-8192^3, kernel 5 at 1024^3 and 8192^3), each against the defaults (--compare),
# and kernel 5 at the bench's other shapes, now with split-K "auto" in every launch.
# The database and logs land in $OUT/home (and /tmp/clgemm-home for the next call).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
mkdir -p $CLGEMM_HOME
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
timeout 560 python3 scripts/tune_batch.py --workers 16 --compare --out $OUT/tune_all.json \
  --job 2:1024:grid:0:10 --job 2:2048:grid:0:10 --job 2:4096:grid:0:10 --job 2:8192:grid:0:10 \
  --job 3:1024:tpe:0:15 --job 3:2048:tpe:0:15 --job 3:4096:tpe:0:20 --job 3:8192:tpe:0:20 \
  --job 4:1024:tpe:0:15 --job 4:2048:tpe:0:15 --job 4:8192:tpe:0:25 \
  --job 5:1024:tpe:0:20 --job 5:8192:tpe:0:30 \
  --job 5:512:tpe:0:15 --job 5:1x4096x4096:tpe:0:15 --job 5:4096x4096x1:tpe:0:10 \
  --job 5:4000:tpe:0:20 --job 5:256x8192x8192:tpe:0:15 \
  2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C $CLGEMM_HOME .
