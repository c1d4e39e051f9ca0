# Session 7, call 3 (~5 minutes). Stream-K (kernel 5's new STREAM_K build + streamk_fixup):
# call 1 put the half-empty last wave at 8192^3 (4096 tiles over 264 resident groups) at
# 2.3% of the time. Groups per compute unit 0 (one group per tile), 1, 2, 3, as gemm()
# lays the product out, 2 interleaved rounds; then smaller shapes with 0 and 2.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 330 python3 -u scripts/streamk_probe.py --shapes 8192x8192x8192,8192x8448x8192 \
  --modes 0,1,2,3 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
mv $OUT/streamk.jsonl $OUT/streamk-8192.jsonl
timeout 200 python3 -u scripts/streamk_probe.py --shapes 4096x4096x4096,4000x4000x4000,2048x2048x2048,4096x1024x4096 \
  --modes 0,2 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
