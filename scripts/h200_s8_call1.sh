# Session 8, call 1 (~5 minutes).
# (a) NVIDIA OpenCL build options on kernel 5 at 8192^3 and 4096^3 (scripts/probe_s8.py):
#     -cl-nv-opt-level=2 and 1 against the default 3, and -cl-denorms-are-zero (info only).
# (b) The padding threshold (gemm.PAD_MIN_VOLUME = 2^31, about 1290^3) where session 7 left
#     it unmeasured: 1230^3, 1260^3, 1290^3, and non-cubic shapes of about 2^31 whose
#     padding copies are large next to the product (small k) or lopsided, --pad yes vs no.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 PATH=$PATH:/usr/local/cuda/bin
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout 300 python3 -u scripts/probe_s8.py --sizes 8192,4096 --rounds 2 --out $OUT 2>&1 \
  | grep --line-buffered -v -i "warn\|lambda"
rm -rf $OUT/sass
for r in 1 2; do
  for s in 1230x1230x1230 1260x1260x1260 1290x1290x1290 4000x4000x135 2000x2000x540 \
           1000x1000x2150 300x300x24000 24000x300x300 4000x140x4000 3000x3000x240; do
    IFS=x read m n k <<< "$s"
    for p in no yes; do
      timeout 60 python3 -m clgemm run --kernel 5 --m $m --n $n --k $k --pad $p --json 2>/dev/null \
        | tee -a $OUT/pad.jsonl \
        | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print('$r $s pad=$p', 'padded', r['padded'], round(r['gflops']), 'GFLOPS', round(r['ms_median'],4), 'ms ok', r['verified'])"
    done
  done
done
date -u
