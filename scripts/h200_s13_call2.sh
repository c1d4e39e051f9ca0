# Session 13, call 2 (~6 minutes). Skinny products with the 4-row entry at 1x4096x4096
# (session 12, call 9's tune) and call 1's 16x4096x4096 entry shipped:
#   before  = zz_before: `git archive` of the session's starting commit (f72c2db);
#   entries = zz_entries: the same with the two entries in its shipped database;
#   after   = this tree: the entries, and tuned slice counts carried to other shapes with
#             slices down to half the tuned depth (gemm.SPLIT_THINNER = 2).
# scripts/ab_versions.py, 2 interleaved rounds, kernel 5 at 17 shapes, kernel 6 at 5.
# Then tests/test_install.py on this offline machine (its PYTHONPATH kept, hatchling in .gpu/).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 400 python3 scripts/ab_versions.py --versions before=zz_before,entries=zz_entries,after=. \
  --kernel 5 --rounds 2 --out $OUT/ab5.jsonl \
  --shapes 1x4096x4096,1x8192x8192,1x2000x3000,1x1024x1024,1x4096x16384,2x4096x4096,3x5000x7000,4x4096x4096,8x8192x8192,16x2048x2048,16x4096x4096,32x4096x4096,64x4096x4096,256x8192x8192,256x256x256,768x768x768,1200x1200x1200 \
  2>&1 | grep -v -i warn | tee $OUT/ab5.txt
date -u
timeout 120 python3 scripts/ab_versions.py --versions before=zz_before,after=. --kernel 6 --rounds 2 \
  --out $OUT/ab6.jsonl --shapes 1x4096x4096,4x4096x4096,8x8192x8192,16x2048x2048,32x4096x4096 \
  2>&1 | grep -v -i warn | tee $OUT/ab6.txt
date -u
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_install.py 2>&1 | tail -15
date -u
