# Session 13, call 5 (~4 minutes). Skinny products, a denser database and a choice that
# minds the tiles: (a) `clgemm tune --kernel 5` at 32x8192x8192 and 128x4096x4096 (budget
# 100 each) into a scratch database, their entries put into this copy's shipped database
# ($OUT/nvidia-h200.json), beside 1x4096x4096 (4-row tiles, session 12 call 9),
# 16x4096x4096 (call 1), 8x8192x8192 and 64x4096x4096 (call 3); gemm() passes over entries
# whose tiles compute over TILE_WASTE = 1.5 times the least padded C, and carried slice
# counts may be half the tuned depth (SPLIT_THINNER = 2). (b) before (zz_before: the
# session's commit 7fc73da, shipped database of session 12) / after (this tree), 2
# interleaved rounds (scripts/ab_versions.py), kernel 5 at 34 shapes (tuned ones, their
# neighbours, and controls), kernel 6 at 8.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
python3 scripts/tune_into_shipped.py --kernel 5 --budget 100 --timeout 150 --out $OUT \
  --shapes 32x8192x8192,128x4096x4096 \
  --note "session 13 call 5 (scripts/h200_s13_call5.sh)" 2>&1 | grep -v -i warn
date -u
timeout 330 python3 scripts/ab_versions.py --versions before=zz_before,after=. \
  --kernel 5 --rounds 2 --out $OUT/ab5.jsonl \
  --shapes 1x4096x4096,1x8192x8192,1x2000x3000,1x1024x1024,1x4096x16384,2x4096x4096,3x5000x7000,4x4096x4096,4x8192x8192,8x4096x4096,8x8192x8192,12x4096x4096,16x2048x2048,16x4096x4096,24x6000x6000,32x4096x4096,32x8192x8192,48x3000x3000,64x4096x4096,100x5000x5000,128x4096x4096,200x4096x4096,256x4096x4096,256x8192x8192,4096x1x4096,4096x8x4096,4096x4096x1,256x256x256,520x520x520,768x768x768,1200x1200x1200,2100x2100x2100,3000x3000x3000,1000x1000x2150 \
  2>&1 | grep -v -i warn | tee $OUT/ab5.txt
date -u
timeout 120 python3 scripts/ab_versions.py --versions before=zz_before,after=. --kernel 6 --rounds 2 \
  --out $OUT/ab6.jsonl --shapes 1x4096x4096,4x4096x4096,8x8192x8192,16x2048x2048,32x4096x4096,64x4096x4096,128x4096x4096,256x8192x8192 \
  2>&1 | grep -v -i warn | tee $OUT/ab6.txt
date -u
