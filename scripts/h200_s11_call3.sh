# Session 11, call 3 (~6 minutes). The closing bench with everything landed: the database
# with the split stage's counts (calls 1-2) and kernel 6's entries of session 10, which no
# bench with peers had run. Same command as session 10's call 2.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
bash scripts/h200_bench.sh 5,6 520 40
