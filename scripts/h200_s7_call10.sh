# Session 7, call 10 (~2 minutes). Call 9's SASS shows ptxas moving the global loads of the
# next tile from the top of the step (where the PTX has them) to 70% of the way down in the
# shipped loop, and to the very end in the stream-K build, so their latency is hidden by at
# most ~290 instructions, or none. kernels/zz_rp.cl (untracked probe): loads prefetched two
# tiles ahead into a second register set (RP=1; tile loop unrolled twice so the sets are
# static), so a load has a whole step before its store; RP=0 is the shipped loop written
# through the probe's COMPUTE macro (control). 8192^3 and 4096^3, A K-major, 2 rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u
timeout 300 python3 -u scripts/probe_s7.py --set rp --sizes 8192,4096 --rounds 2 --out $OUT 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda"
tar czf $OUT/sass.tgz -C $OUT sass && rm -r $OUT/sass
