# Session 7, call 8 (~4 minutes). Stream-K again, as a hybrid: call 3's build gave each of
# the 264 groups a contiguous 1/264 of all tile steps, so the groups running together
# worked on tiles ~15 apart all over C (each reading its own A and B panels: far more DRAM
# traffic than a plain launch's 264 neighbouring tiles) and lost 19-21%. Now the groups take
# whole tiles round-robin, as the plain launch's waves do, and only the part-filled last
# wave is cut into tile steps shared evenly. The plain builds' preprocessed source is
# unchanged (checked with cpp against HEAD). 8192 x 8448 (16 whole waves, nothing cut) shows
# what the persistent loop itself costs.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
timeout 280 python3 -u scripts/streamk_probe.py --shapes 8192x8192x8192,8192x8448x8192 \
  --modes 0,2 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
mv $OUT/streamk.jsonl $OUT/streamk-8192.jsonl
timeout 250 python3 -u scripts/streamk_probe.py --shapes 4096x4096x4096,4000x4000x4000,6000x6000x6000,3000x3000x3000 \
  --modes 0,2 --rounds 2 --out $OUT 2>&1 | grep --line-buffered -v -i "warn\|lambda"
