# Session 6, call 3 (~2 minutes). Two questions left by call 2 (where a 16 x 8 tile step of
# the 8192^3 point goes; kernels/zz_strip.cl, untracked):
# 1. The ceiling of the register tile alone: NOLDS now reads one k-row of fragments once
#    and reuses it (call 2's NOLDS kept TSK rows live and spilled: 0.7 TFLOPS), with NOG,
#    NOSTS, NOBAR: FFMA only. Against LDS + FFMA (NOG NOSTS NOBAR: 53.4 TFLOPS, 583 W).
# 2. Call 1's rasterisation cut power 685 -> 631 W but lost 5%. Narrower row bands
#    (GROUP_M = 2, 4) and bands of tile columns (COLBANDS=1, 4 and 16): one that keeps the
#    saving without the loss? kernels/zz_raster.cl (untracked).
# 8192^3, 2 interleaved rounds, nvidia-smi every 50 ms.
# Probe sources: results/h200/session6/probes/.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>$OUT/smi.err &
SMI=$!
timeout 300 python3 -u scripts/probe_s6.py --set ceiling --sizes 8192 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i warn
kill $SMI
tar czf $OUT/sass.tgz -C $OUT sass && rm -r $OUT/sass
