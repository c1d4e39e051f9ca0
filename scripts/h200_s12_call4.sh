# Session 12, call 4 (~6 minutes). The closing bench, as in session 11's call 3: kernels 5
# and 6 with the shipped database against CLBlast (its default database and the parameters
# from its own tuner) and cuBLAS; then why tests/test_install.py failed in call 3 (pip's
# wheel build on this offline machine).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
bash scripts/h200_bench.sh 5,6 480 40
timeout 60 python3 -m pip wheel --no-deps -q -w $(mktemp -d) . 2>&1 | tail -4
date -u
