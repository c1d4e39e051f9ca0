# Session 9, call 1 (~6 minutes).
# (a) gemm()'s host time per call on device arrays, the package as it landed in session 8
#     (zz_old: `git archive 6f54076 clgemm kernels`) against this one (kernel objects pooled,
#     the database choice kept per database state, paths built without pathlib); with
#     device memory before and after 20 calls on fresh operands (pooled kernel objects
#     must not keep old buffers alive).
# (b) session 8's last wave_steps rule as a whole (its call 8, never run): the 25 untuned
#     shapes against the old database's nearest entry, and against the new one's nearest.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for w in zz_old .; do
  mkdir -p $OUT/overhead-$w
  timeout 120 python3 -u -c "
import sys; sys.path.insert(0, '$w'); sys.argv = ['overhead_probe', '--memory', '--out', '$OUT/overhead-$w']
import runpy; runpy.run_path('scripts/overhead_probe.py', run_name='__main__')" 2>&1 | grep --line-buffered -v -i "warn\|lambda"
done
date -u
S=1100,1256,1300,1400,1500,1700,2100,2300,2600,3000,3300,5000,6000,2100x2100x512,1300x4000x1300,3000x1000x3000,4200,6144x6144x1024,1777,2999,3777x2222x1999,5555,999x3333x2222,1250x1250x4000,2600x2600x600
mkdir -p $OUT/old $OUT/nearest
timeout 200 python3 -u scripts/choice_probe.py --old-db results/h200/session8/db-before.json --rounds 2 --out $OUT/old --shapes $S \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -28
timeout 200 python3 -u scripts/choice_probe.py --nearest --rounds 2 --out $OUT/nearest --shapes $S \
  2>&1 | grep --line-buffered -v -i "warn\|lambda" | tail -28
date -u
