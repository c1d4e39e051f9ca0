# Session 7, call 2 (~4 minutes). Call 1 measured U2 and PB together only (the probe's
# #ifdef took -DU2=0 as defined): -3.1% at 8192^3, -5.3% at 4096^3. Now each alone, the
# restructured loop with neither (control), and the k loop of a tile step unrolled KU = 1,
# 2 or 4 times instead of 8 (the shipped loop is 1120 instructions, ~18 KB: more than an
# L0 instruction cache holds, if Hopper's is Volta's 12-16 KB), 2 interleaved rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u
timeout 420 python3 -u scripts/probe_s7.py --set loop --sizes 8192,4096 --rounds 2 --out $OUT 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda"
tar czf $OUT/sass.tgz -C $OUT sass && rm -r $OUT/sass
