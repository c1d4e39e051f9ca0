# Session 10, call 2 (~7 minutes). The closing bench of issue 6 with the code as it lands
# (session 9's host-side changes: pooled kernel objects, the kept choice; the database with
# session 10's shallow entries, which no bench shape reaches), kernels 5 and 6.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
bash scripts/h200_bench.sh 5,6 520 40
