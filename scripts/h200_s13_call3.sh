# Session 13, call 3 (~4 minutes). Call 2's carried slice counts lost at 8x8192x8192 (x0.79)
# and 64x4096x4096 (x0.72), which took the new 16x4096x4096 entry (fewer slices by the
# same total of work-groups). (a) `clgemm tune --kernel 5` at 8x8192x8192 and 64x4096x4096
# (budget 100 each) into a scratch database; (b) their entries put into this copy's shipped
# database ($OUT/nvidia-h200.json); (c) before (zz_before, the session's start) / after1
# (zz_after1, call 2's "after") / after2 (this tree), 2 interleaved rounds, kernel 5 at 22
# skinny and control shapes, kernel 6 at 5.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
python3 scripts/tune_into_shipped.py --kernel 5 --budget 100 --timeout 150 --out $OUT \
  --shapes 8x8192x8192,64x4096x4096 \
  --note "session 13 call 3 (scripts/h200_s13_call3.sh)" 2>&1 | grep -v -i warn
date -u
timeout 300 python3 scripts/ab_versions.py --versions before=zz_before,after1=zz_after1,after2=. \
  --kernel 5 --rounds 2 --out $OUT/ab5.jsonl \
  --shapes 1x4096x4096,1x8192x8192,1x2000x3000,1x1024x1024,1x4096x16384,2x4096x4096,3x5000x7000,4x4096x4096,4x8192x8192,8x4096x4096,8x8192x8192,16x2048x2048,16x4096x4096,32x4096x4096,32x8192x8192,48x3000x3000,64x4096x4096,128x4096x4096,256x8192x8192,256x256x256,768x768x768,1200x1200x1200 \
  2>&1 | grep -v -i warn | tee $OUT/ab5.txt
date -u
timeout 120 python3 scripts/ab_versions.py --versions before=zz_before,after2=. --kernel 6 --rounds 2 \
  --out $OUT/ab6.jsonl --shapes 1x4096x4096,4x4096x4096,8x8192x8192,16x2048x2048,32x4096x4096,64x4096x4096 \
  2>&1 | grep -v -i warn | tee $OUT/ab6.txt
date -u
