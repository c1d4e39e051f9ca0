# Session 4, call 7 (~1 minute): the padded path with A turned K-major on the GPU (a
# transpose straight into the zero-padded K x M buffer), at 8000^3 (padded to 8064 x 8064 x
# 8000 by the 128 x 128 tiles, N >= 4096): auto against --pad no and against row-major A;
# and at 4096^3 the 16 x 8 point with PAD=0 against PAD=1 (results/NOTES.md), two rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home-empty
for opts in "" "--pad no" "--transposed-by transpose"; do
  timeout 60 python3 -m clgemm run --kernel 5 --size 8000 $opts --json >> $OUT/s8000.jsonl
done
P16="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4"
for rnd in 1 2; do
  for pad in 0 1; do
    timeout 60 python3 -m clgemm run --kernel 5 --size 4096 $P16 --param PAD=$pad --json >> $OUT/pad4096.jsonl
  done
done
python3 -c "
import json
for f in ('s8000', 'pad4096'):
    for r in map(json.loads, open('$OUT/' + f + '.jsonl')):
        print(f, r['m'], 'padded', r['padded'], 'a_kmajor', r['a_kmajor'], r['transposed_by'], r['launches'], round(r['gflops']), r['verified'], r['params'])"
