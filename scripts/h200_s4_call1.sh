# Session 4, call 1 (~7 minutes).
# 1. The shuffle transpose's new design (32 x 32 warp tiles, one exchange, 128-byte rows
#    both ways) at 8192^2: every point of its space, against the design before it
#    (kernels/zz_prev_shuffle.cl, untracked: transpose_shuffle.cl as of 65791d0, at its
#    defaults WARPS=2 TILES=8 WIDE=1) and the padded local transpose, two rounds.
# 2. Kernel 5's global loads: does the PTX already use ld.global.nc? Registers of the
#    SPLIT_K build against the plain one. An A/B of kernels/zz_nc.cl (untracked: tile loads
#    through inline-PTX ld.global.nc.v4) at 4096^3 and 8192^3.
# 3. A read K-major (given transposed, read as it lies) against plain NN at 8192^3.
# 4. Kernel 5 tunes resumed with the warm start (results/NOTES.md, "For the next device
#    session"), each against the defaults.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0 CLGEMM_HOME=/tmp/clgemm-home
mkdir -p $CLGEMM_HOME && tar xzf .gpu/tune-home-call14.tgz -C $CLGEMM_HOME
python3 - <<'PY' 2>&1 | grep -v -i warn
import dataclasses, json, os
from clgemm import device, kernels
from clgemm.kernels import Geometry, Param
from clgemm.run import run_transpose
q = device.queue(device.select())
sh = kernels.get("shuffle", "transpose")
kernels.TRANSPOSE["prev"] = dataclasses.replace(
    sh, key="prev", name="prev", source="zz_prev_shuffle.cl",
    params=(Param("WARPS", 2, (2,)), Param("TILES", 8, (8,)), Param("WIDE", 1, (1,))),
    geometry=Geometry(tile=lambda p: (128, 32), local=lambda p: (32, 2), local_bytes=lambda p: 256))
points = [("local", {}), ("prev", {})] + [("shuffle", p) for p in sh.space() if not sh.violations(p, q.device)]
rows = []
with open(os.environ["OUT"] + "/transposes.jsonl", "w") as f:
    for rnd in range(2):
        for key, p in points:
            r = run_transpose(q, 8192, 8192, kernel=key, params=p, repeat=10)
            r["round"] = rnd
            f.write(json.dumps(r) + "\n")
            rows.append(r)
            print(f"{rnd} {key:8s} {r['params']}: {r['gbps']:6.0f} GB/s copy {r['copy_gbps']:.0f} "
                  f"ratio {r['ratio_to_copy']:.3f} ok={r['verified']}", flush=True)
PY
P16="--param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 --param WIDTH=4 --param PAD=1"
python3 scripts/inspect_ptx.py --kernels 5 $P16 --option=-DEXACT 2>&1 | grep -v -i warn | head -3
python3 scripts/inspect_ptx.py --kernels 5 $P16 --option=-DEXACT --option=-DSPLIT_K 2>&1 | grep -v -i warn | head -3
python3 scripts/inspect_ptx.py --kernels 5 $P16 --option=-DEXACT --source zz_nc.cl 2>&1 | grep -v -i warn | head -3
for s in 4096 8192; do
  timeout 120 python3 scripts/ab_source.py --kernel 5 --source zz_nc.cl --size $s --rounds 2 $P16 2>&1 | grep -i "GFLOPS\|error" | head -6
done
for rnd in 1 2; do
  for t in "" "--trans-a"; do
    timeout 60 python3 -m clgemm run --kernel 5 --size 8192 $t --json >> $OUT/akmajor8192.jsonl
  done
done
python3 -c "
import json
for r in map(json.loads, open('$OUT/akmajor8192.jsonl')):
    print('trans_a', r['trans_a'], r['transposed_by'], r['launches'], round(r['gflops']), r['verified'], r['params'])"
timeout 300 python3 scripts/tune_batch.py --workers 16 --compare --out $OUT/tune_k5.json \
  --job 5:8192:tpe:0:60 --job 5:512:tpe:0:20 --job 5:1024:tpe:0:20 --job 5:1x4096x4096:tpe:0:12 \
  --job 5:4096x4096x1:tpe:0:10 --job 5:256x8192x8192:tpe:0:20 2>&1 | grep -v -i "warn\|lambda\|^ *$"
tar czf $OUT/tune-home.tgz -C $CLGEMM_HOME .
