# Session 8, call 2 (~3 minutes). Call 1 found kernel 5 unpadded at 1230^3 (ld 1232 after
# gemm's rounding to 4 floats) at 31 TFLOPS and at 1260^3 (ld 1260) and 1290^3 (ld 1292) at
# 17-19, same parameters and build. Is it the leading dimension's alignment? Unpadded, ld
# rounded to 4 (as shipped) or 32 floats (scripts/ld_probe.py), 1224-1304 step 8, then
# larger shapes; and the padded launches at the same shapes for comparison.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 240 python3 -u scripts/ld_probe.py --sizes 1224,1232,1240,1248,1256,1264,1272,1280,1288,1296,1304 \
  --aligns 4,8,16,32 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
timeout 200 python3 -u scripts/ld_probe.py --sizes 1260,1290,2000,3000,4000x4000x135,1000x1000x2150,2000x2000x540 \
  --aligns 4,32 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
timeout 100 python3 -u scripts/ld_probe.py --sizes 1260,1290,2000,3000,4000x4000x135,1000x1000x2150,2000x2000x540 \
  --aligns 4 --rounds 1 --pad yes --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
date -u
