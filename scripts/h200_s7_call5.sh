# Session 7, call 5 (~3 minutes). The padding threshold (gemm.PAD_MIN_VOLUME = 2^35, about
# 3250^3) was set from 4000^3 and 8000^3 while the copies into the padded buffers ran at
# 1.6 TB/s; they run 2-2.4x faster since session 6. `clgemm run --pad yes` against
# `--pad no` below the threshold, 2 interleaved rounds, kernel 5 with its tuned parameters.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for r in 1 2; do
  for s in 1000x1000x1000 1500x1500x1500 2000x2000x2000 2500x2500x2500 3000x3000x3000 \
           4000x4000x1000 3000x3000x6000; do
    IFS=x read m n k <<< "$s"
    for p in no yes; do
      timeout 60 python3 -m clgemm run --kernel 5 --m $m --n $n --k $k --pad $p --json 2>/dev/null \
        | tee -a $OUT/pad.jsonl \
        | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print('$r $s pad=$p', r['params'], 'padded', r['padded'], 'launches', r['launches'], round(r['gflops']), 'GFLOPS', r['ms_median'], 'ms ok', r['verified'])"
    done
  done
done
