# Session 7, call 9 (~2 minutes). Call 8's stream-K hybrid ran 29% slower than the plain
# launch even where nothing is cut (8192 x 8448: 36.9 against 52.2 TFLOPS, 231 registers
# against 223). Is it the code or the persistence? The same build with one group per tile
# (32 per compute unit = 4224 groups, each loop runs once) against 2 per compute unit and
# the plain build; SASS loop mix of both builds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u
timeout 280 python3 -u scripts/streamk_probe.py --shapes 8192x8448x8192 \
  --modes 0,2,32 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
tar czf $OUT/sass.tgz -C $OUT sass && rm -r $OUT/sass
