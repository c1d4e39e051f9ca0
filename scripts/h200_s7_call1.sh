# Session 7, call 1 (~5 minutes). (a) The wave tail at 8192^3: the shipped 128 x 128 tiles
# give 4096 groups over 264 resident slots (2 per multiprocessor), 15.5 waves; 8192 x 7936
# (15.03 waves) and 8192 x 8448 (16.0) show what the half-empty last wave costs, for
# clgemm and cuBLAS alike. (b) kernels/zz_u2.cl (untracked probe): the tile loop unrolled
# twice so each step's buffer is a constant (U2), and global load indices bumped per tile
# (PB), against the shipped kernel at 8192^3 and 4096^3, 3 interleaved rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 100 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
timeout 150 python3 -u -m clgemm bench --kernels 5 --against cublas --repeat 20 \
  --shapes 8192x7936x8192,8192x8192x8192,8192x8448x8192 --out $OUT/tail 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -8
timeout 330 python3 -u scripts/probe_s7.py --set u2 --sizes 8192,4096 --rounds 3 --out $OUT 2>&1 \
  | grep --line-buffered -v -i warn
kill $SMI
tar czf $OUT/sass.tgz -C $OUT sass && rm -r $OUT/sass
