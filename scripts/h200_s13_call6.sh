# Session 13, call 6 (~6 minutes). The closing bench with this session's database (six new
# skinny entries) and gemm()'s tile-waste rule: kernels 5 and 6 against CLBlast (its
# default database and the parameters from its own tuner) and cuBLAS, as in session 12's
# call 4. (Call 4, the whole test suite, was refused a device and not run.)
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
bash scripts/h200_bench.sh 5,6 400 40
