# Session 14, call 7 (~3 minutes). Kernel 7's fresh sums folded in once a tile instead of
# once per 8-deep step (kernels/zz_k7f.cl, an untracked probe, carried; to rerun:
# patch -o kernels/zz_k7f.cl kernels/7_tensor_cores.cl \
#   results/h200/session14/probes/k7_sums_once_a_tile.patch): B's fragments of the whole
# tile split up front, then per
# MMA row i the TSK/8 steps' MMAs into one fresh sum. Predicted: half (TSK=16) or a quarter
# (TSK=32) of the float adds and of the waits on a finished sum, error ~3F*2^-24 (F steps),
# still under float's; some of call 2's 21% back. Same points with both sources, 1 round.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
date -u
for p in 128,64,16,64,32 64,256,16,64,64 64,64,32,32,32; do
  IFS=, read tsm tsn tsk wm wn <<< "$p"
  python3 scripts/inspect_ptx.py --kernels 7 --source zz_k7f.cl --param TSM=$tsm --param TSN=$tsn \
    --param TSK=$tsk --param WM=$wm --param WN=$wn --option=-DEXACT 2>&1 | grep registers
done
timeout 300 python3 scripts/tc_probe.py --sizes 8192,4096 --rounds 1 --out $OUT --source zz_k7f.cl \
  --point 128,64,16,64,32 --point 64,256,16,64,64 --point 128,128,16,64,64 --point 64,64,32,32,32 \
  2>&1 | grep -v -i "warn\|lambda" | grep -v "^odd"
date -u
