# Session 4, call 6 (~1 minute): the shuffle transpose with each warp's tiles side by side
# along the columns (kernels/zz_cols.cl, untracked: transpose_shuffle.cl with tile t at
# columns 32t instead of rows 32t, so a work-group reads 32*TILES contiguous floats of each
# input row, 256 bytes at TILES=2 as the local transpose does), against the shipped one
# and the local transpose, 8192^2, two rounds.
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
python3 - <<'PY' 2>&1 | grep -v -i warn
import dataclasses, json, os
from clgemm import device, kernels
from clgemm.kernels import Geometry
from clgemm.run import run_transpose
q = device.queue(device.select())
sh = kernels.get("shuffle", "transpose")
kernels.TRANSPOSE["cols"] = dataclasses.replace(
    sh, key="cols", name="cols", source="zz_cols.cl",
    geometry=Geometry(tile=lambda p: (32 * p["WARPS"], 32 * p["TILES"]),
                      local=lambda p: (32, p["WARPS"]), local_bytes=lambda p: 128 * p["WARPS"]))
points = [("local", {}), ("shuffle", {})] + [("cols", dict(WARPS=w, TILES=t))
                                             for w, t in ((1, 2), (1, 4), (2, 2), (2, 1), (4, 2))]
with open(os.environ["OUT"] + "/transposes_cols.jsonl", "w") as f:
    for rnd in range(2):
        for key, p in points:
            r = run_transpose(q, 8192, 8192, kernel=key, params=p, repeat=10)
            r["round"] = rnd
            f.write(json.dumps(r) + "\n")
            print(f"{rnd} {key:8s} {r['params']}: {r['gbps']:6.0f} GB/s copy {r['copy_gbps']:.0f} "
                  f"ratio {r['ratio_to_copy']:.3f} ok={r['verified']}", flush=True)
PY
