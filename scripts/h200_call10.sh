# Session 2, device call 5: `clgemm bench` with device-span timing (markers / CUDA events),
# the tuned database shipped in clgemm/tuned, at the milestone's shapes.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
timeout 150 python3 -m clgemm bench --kernels 5 --sizes 2048,4096,8192 --shapes 4000x4000x4000 \
  --against clblast,cublas --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench \
  2>&1 | grep -v -i "warn\|lambda\|^ *$" | tail -30
