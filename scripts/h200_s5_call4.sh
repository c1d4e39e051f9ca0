# Session 5, call 4 (~1 minute). Call 3: capping the float4 local transpose at 32 warps per
# multiprocessor did not slow it (0.947-0.953x), and neither 256-byte load runs per
# instruction (zz_w64.cl), 64 x 64 warp blocks (zz_grid.cl) nor build-time leading
# dimensions (zz_ldc.cl) lifted the shuffle kernel above 0.895x. What local4 does and no
# shuffle variant has done is store 256 contiguous bytes of each output row per instruction.
# Probe kernels/zz_s256.cl (untracked): the shipped kernel with each warp's two tiles
# adjacent and a second exchange (t <-> lane bit 1, mask 2), so that each store
# instruction writes 2 output rows x 256 bytes. 8192^2, 3 rounds.
# Probe sources (untracked kernels/zz_*.cl when this ran): results/h200/session5/probes/
# (README.md there says how to rebuild them in kernels/).
source .gpu/activate.sh >/dev/null
export PYOPENCL_COMPILER_OUTPUT=0
python3 - <<'PY' 2>&1 | grep -v -i "warn\|lambda"
import dataclasses, json, os, re
import pyopencl as cl
from clgemm import build, device, kernels
from clgemm.kernels import Geometry, Param
from clgemm.run import run_transpose
dev = device.select()
q = device.queue(dev)
sh, lo = kernels.get("shuffle", "transpose"), kernels.get("local", "transpose")
kernels.TRANSPOSE["s256"] = dataclasses.replace(sh, key="s256", name="s256", source="zz_s256.cl",
    params=(Param("WARPS", 1, (1, 2, 4), "warps"),),
    geometry=Geometry(tile=lambda p: (64 * p["WARPS"], 32), local=lambda p: (32, p["WARPS"]),
                      local_bytes=lambda p: 128 * p["WARPS"]))
kernels.TRANSPOSE["local4"] = dataclasses.replace(
    lo, key="local4", name="local4", source="zz_local4.cl", constraints=(), params=(),
    geometry=Geometry(tile=lambda p: (64, 64), local=lambda p: (16, 16), local_bytes=lambda p: 64 * 65 * 4))
points = [("local", {}), ("local4", {}), ("shuffle", {}), ("s256", dict(WARPS=1)), ("s256", dict(WARPS=2)),
          ("s256", dict(WARPS=4))]
for key, p in points:
    k = kernels.TRANSPOSE[key]
    prg = build.compile_source(q.context, k, k.resolve(p), build.device_options(q.context, k) + ("-cl-nv-verbose",))
    log = prg.get_build_info(dev, cl.program_build_info.LOG)
    print(key, p, "registers", re.findall(r"Used (\d+) registers", log), flush=True)
out = open(os.environ["OUT"] + "/transposes.jsonl", "w")
for rnd in range(3):
    for key, p in points:
        r = run_transpose(q, 8192, 8192, kernel=key, params=p, repeat=10)
        r["round"] = rnd
        out.write(json.dumps(r) + "\n"); out.flush()
        print(f"{rnd} {key:8s} {p}: {r['gbps']:6.0f} GB/s copy {r['copy_gbps']:.0f} "
              f"ratio {r['ratio_to_copy']:.3f} ok={r['verified']}", flush=True)
PY
