# Session 5, call 3 (~2 minutes). Call 2: the persistent pipelined shuffle transpose lost
# (0.81-0.84x), so idle memory between groups is not the gap. Two more questions, each an
# untracked probe copied from a shipped kernel:
# 1. kernels/zz_local4.cl with OCCB=32000 idle local bytes: the float4 local transpose
#    (0.945-0.949x at 64 warps per multiprocessor) capped at 4 groups = 32 warps. Is the
#    shuffle kernel's lower occupancy (97 registers: 19 warps) what holds it back?
# 2. kernels/zz_grid.cl: the shuffle kernel with each warp's TILES tiles laid out TC wide
#    along the columns, so that one warp reads and writes 256-byte runs of every row it
#    touches (TILES=4 TC=2: a 64 x 64 block per warp), as local4 does per instruction.
# 3. kernels/zz_ldc.cl: the shuffle kernel with its leading dimensions fixed at build time
#    (LDC=8192), so its 16 load and 16 store addresses can be immediates off two bases:
#    fewer registers, more resident warps for the same bytes per warp?
# 4. kernels/zz_w64.cl: a 32 x 64 warp tile whose loads read 2 rows x 256 bytes per
#    instruction (as local4), with a two-stage exchange (lane ^ 1, lane ^ 2; one shuffle per
#    float) so that each store still writes 4 whole 128-byte output rows.
# Probe sources (untracked kernels/zz_*.cl when this ran): results/h200/session5/probes/
# (README.md there says how to rebuild them in kernels/).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
python3 - <<'PY' 2>&1 | grep -v -i warn
import dataclasses, json, os, re
import pyopencl as cl
from clgemm import build, device, kernels
from clgemm.kernels import Geometry, Param
from clgemm.run import run_transpose
dev = device.select()
q = device.queue(dev)
sh, lo = kernels.get("shuffle", "transpose"), kernels.get("local", "transpose")
kernels.TRANSPOSE["grid"] = dataclasses.replace(
    sh, key="grid", name="grid", source="zz_grid.cl",
    params=sh.params + (Param("TC", 1, (1, 2, 4), "tiles along columns"),),
    geometry=Geometry(tile=lambda p: (32 * p["WARPS"] * p["TILES"] // p["TC"], 32 * p["TC"]),
                      local=lambda p: (32, p["WARPS"]), local_bytes=lambda p: 128 * p["WARPS"]))
kernels.TRANSPOSE["local4"] = dataclasses.replace(
    lo, key="local4", name="local4", source="zz_local4.cl", constraints=(),
    params=(Param("OCCB", 4, (4, 32000), "idle local bytes"),),
    geometry=Geometry(tile=lambda p: (64, 64), local=lambda p: (16, 16), local_bytes=lambda p: 64 * 65 * 4 + p["OCCB"]))
kernels.TRANSPOSE["ldc"] = dataclasses.replace(sh, key="ldc", name="ldc", source="zz_ldc.cl",
    params=sh.params + (Param("LDC", 8192, (8192,), "leading dimension fixed at build time"),))
kernels.TRANSPOSE["w64"] = dataclasses.replace(sh, key="w64", name="w64", source="zz_w64.cl",
    params=(Param("WARPS", 1, (1, 2, 4), "warps"),),
    geometry=Geometry(tile=lambda p: (32 * p["WARPS"], 64), local=lambda p: (32, p["WARPS"]),
                      local_bytes=lambda p: 128 * p["WARPS"]))
points = [("local", {}), ("local4", dict(OCCB=4)), ("local4", dict(OCCB=32000)), ("shuffle", {}),
          ("grid", dict(TILES=4, TC=2)), ("grid", dict(TILES=2, TC=2, WARPS=2)), ("grid", dict(TILES=4, TC=4)),
          ("grid", dict(TILES=4, TC=2, WARPS=2)), ("ldc", dict(LDC=8192)), ("ldc", dict(LDC=8192, TILES=4)),
          ("w64", dict(WARPS=1)), ("w64", dict(WARPS=2))]
for key, p in points:
    k = kernels.TRANSPOSE[key]
    prg = build.compile_source(q.context, k, k.resolve(p), build.device_options(q.context, k) + ("-cl-nv-verbose",))
    log = prg.get_build_info(dev, cl.program_build_info.LOG)
    print(key, p, "registers", re.findall(r"Used (\d+) registers", log), "smem", re.findall(r"(\d+) bytes smem", log), flush=True)
out = open(os.environ["OUT"] + "/transposes.jsonl", "w")
for rnd in range(3):
    for key, p in points:
        r = run_transpose(q, 8192, 8192, kernel=key, params=p, repeat=10)
        r["round"] = rnd
        out.write(json.dumps(r) + "\n"); out.flush()
        print(f"{rnd} {key:8s} {p}: {r['gbps']:6.0f} GB/s copy {r['copy_gbps']:.0f} "
              f"ratio {r['ratio_to_copy']:.3f} ok={r['verified']}", flush=True)
PY
