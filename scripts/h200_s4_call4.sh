# Session 4, call 4 (~2 minutes): padding at 4000^3 again. Session 3's measurement (-11.5%)
# was taken while split-K was compiled into every build, which cost the 16 x 8 blocks
# 18-20%. Padded (EXACT build on zero-padded 4096^3 copies, copies counted) against not,
# for the database's 4000^3 point (128 x 128, 8 x 8) and the 4096^3 winner (16 x 8,
# PAD=1 and PAD=0), two rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home-empty
P16="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4"
for rnd in 1 2; do
  for P in "" "$P16 --param PAD=1" "$P16 --param PAD=0"; do
    for pad in no yes; do
      timeout 60 python3 -m clgemm run --kernel 5 --size 4000 --pad $pad $P --json >> $OUT/pad4000.jsonl
    done
  done
done
python3 -c "
import json
for r in map(json.loads, open('$OUT/pad4000.jsonl')):
    print('padded', r['padded'], r['launches'], round(r['gflops']), r['verified'], r['params'])"
