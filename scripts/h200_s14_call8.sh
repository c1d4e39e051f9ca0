# Session 14, call 8 (~2 minutes). The closing bench again at this session's last code
# (kernel 7 unchanged since call 5; gemm()'s opt-in rule and the tuner's strategy do not
# touch the bench, which runs each kernel by name): a second sample of call 5's numbers,
# CLBlast's best among them.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
bash scripts/h200_bench.sh 5,7 300 5
