# Session 6, call 8 (~1 minute): call 7 again after one fix. Call 7 found the padding copies
# faster (A 0.092 -> 0.042 ms, B 0.081 -> 0.053 at 4000^3) but the launch span 0.5 ms longer
# than its steps: copy_rows went through pyopencl's kernel call (kernel object and arguments
# set on every launch); the step is now bound once (operands.bind_copy, build.bind).
# Call 6 found NVIDIA's clEnqueueCopyBufferRect at 1.6 TB/s,
# a flat copy at 3.8 and a float4 row-copy kernel at 2.8; operands.copy_rect now takes a
# flat copy when both sides are dense and the copy_rows kernel otherwise. 1. The padded
# launches again, step by step (4000^3, 8000^3). 2. The bench at 4096^3 and 4000^3, twice,
# against CLBlast (all parameter sets) and cuBLAS. 3. The copy tests on the H200.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for s in 4000x4000x4000 8000x8000x8000; do
  timeout 120 python3 -u scripts/pad_probe.py --shape $s --repeat 20 --json $OUT/pad-$s.json 2>&1 \
    | grep --line-buffered -v -i "warn\|lambda" | grep --line-buffered "GB/s\|step_ms\|span\|gflops" -A3
done
for r in 1 2; do
  timeout 150 python3 -m clgemm bench --kernels 5 --sizes 4096 --shapes 4000x4000x4000 \
    --against clblast,cublas --clblast-params results/h200/clblast-xgemm-h200.json --out $OUT/bench$r 2>&1 \
    | grep --line-buffered -v -i "warn\|lambda\|^ *$" | tail -14
done
timeout 120 python3 -m pytest -q tests/test_gemm_api.py 2>&1 | tail -2
