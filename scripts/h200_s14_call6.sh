# Session 14, call 6 (~6 minutes). (a) Kernels 5 and 7 at float's edges
# (scripts/tc_special.py): Inf and NaN in A, rows scaled by 1e30, 1e-30 and 1e-36.
# (b) The whole test suite on the H200, kernel 7's real MMAs included (its small
# parameter sets at the odd shapes, the opt-in choice, the accuracy test).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
python3 scripts/tc_special.py --size 1024 2>&1 | grep kernel | tee $OUT/special.txt
python3 scripts/tc_special.py --size 64 2>&1 | grep kernel | tee -a $OUT/special.txt
CLGEMM_HOME=$(mktemp -d) timeout 420 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -12 | tee $OUT/pytest.txt
date -u
