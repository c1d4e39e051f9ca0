# Session 9, call 1 (~8 minutes).
# (a) gemm()'s host time per call on device arrays, the package as it landed in session 8
#     (zz_old: `git archive 6f54076 clgemm kernels`) against this one (kernel objects pooled,
#     the database choice kept per database state, paths built without pathlib); with
#     device memory before and after 20 calls on fresh operands (pooled kernel objects
#     must not keep old buffers alive).
# (b) session 8's last wave_steps rule as a whole: its call 8, never run (the 25 untuned
#     shapes against the old database's nearest entry, and against the new one's nearest).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
# (c), first: the API and tuner tests on the H200 (the pool, the queue checks and the
# events are new)
timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_gemm_api.py tests/test_tune.py 2>&1 | tail -3
date -u
for w in zz_old:old .:new; do
  dir=${w%%:*} name=$OUT/overhead-${w##*:}
  mkdir -p $name
  timeout 120 python3 -u -c "
import sys; sys.path.insert(0, '$dir'); sys.argv = ['overhead_probe', '--memory', '--label', '$w', '--out', '$name']
import runpy; runpy.run_path('scripts/overhead_probe.py', run_name='__main__')" 2>&1 | grep --line-buffered -v -i "warn\|lambda"
done
date -u
bash scripts/h200_s8_call8.sh     # (b), as session 8 wrote it
