# Session 6, call 9 (~1 minute). The whole bench with the code as it lands (operands on the
# device, padding copies by flat copy / copy_rows bound once), twice: the closing table of
# issue 6. Kernel 5, default sizes and shapes, against CLBlast (default and the two tuned
# parameter sets) and cuBLAS.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for r in 1 2; do
  timeout 200 python3 -m clgemm bench --kernels 5 --against clblast,cublas \
    --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench$r 2>&1 \
    | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -3
done
