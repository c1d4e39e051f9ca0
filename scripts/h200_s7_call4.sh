# Session 7, call 4 (~4 minutes). (a) Call 3 measured the plain build at 4096^3 at 47.0
# TFLOPS against 48.5-48.9 in session 6's bench: an A/B of kernel 5's source before this
# session's stream-K edit (zz_prev.cl) against the current one, shipped point, stream-K off.
# (b) The STREAM_K build now runs its k loop from depth 0 of A and B moved to the segment's
# first k (call 3's, with the offset inside the addresses, ran at 40.4 against 51.1 TFLOPS);
# registers of both builds, then 8192^3 with 0 and 2 groups per compute unit.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
git show HEAD:kernels/5_double_buffered.cl > kernels/zz_prev.cl
P="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4 --param PAD=1"
timeout 120 python3 -u scripts/ab_source.py --kernel 5 --source zz_prev.cl --size 4096 --rounds 3 $P 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda"
timeout 300 python3 -u scripts/streamk_probe.py --shapes 8192x8192x8192,4096x4096x4096 \
  --modes 0,2 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
