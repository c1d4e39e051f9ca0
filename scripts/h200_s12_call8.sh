# Session 12, call 8 (~3 minutes). The split stage's review fixes (a failing pair no longer
# sinks the stage, a finalist found wrong cannot win, the deadline counts per step from
# the worker's "alive" messages, one shared split-K workspace) on the H200: the tuner and
# API tests, and `clgemm tune` kernel 5 at 1x4096x4096 (budget 4) into a scratch database.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
CLGEMM_HOME=$(mktemp -d) timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_tune.py tests/test_gemm_api.py 2>&1 | tail -3 | tee $OUT/pytest.txt
date -u
CLGEMM_HOME=$OUT/home timeout 100 python3 -m clgemm tune --kernel 5 --m 1 --n 4096 --k 4096 --budget 4 --workers 8 2>/dev/null | tail -12 | tee $OUT/tune.txt
date -u
