"""Session 6 probes of kernel 5 (untracked kernels/zz_async.cl, zz_raster.cl): cp.async
tile loads STAGES deep, and work-group rasterisation, against the shipped kernel at its
tuned points, interleaved; registers and SASS instruction counts of each build.

    python3 scripts/probe_s6.py --sizes 8192,4096 --rounds 3 [--small] [--sass DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import build, device, kernels  # noqa: E402
from clgemm.kernels import Param, _vector_tile_bytes  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402

k5 = kernels.get("5")
kernels.GEMM["5a"] = dataclasses.replace(
    k5, key="5a", source="zz_async.cl", shuffle=True, split_k=False,
    params=k5.params + (Param("STAGES", 3, (2, 3, 4)), Param("GROUP_M", 0, (0, 4, 8, 16, 32))),
    geometry=dataclasses.replace(k5.geometry, local_bytes=lambda p: p["STAGES"] * _vector_tile_bytes(p)))
kernels.GEMM["5r"] = dataclasses.replace(
    k5, key="5r", source="zz_raster.cl", split_k=False,
    params=k5.params + (Param("GROUP_M", 0, (0, 2, 4, 8, 16, 32)), Param("COLBANDS", 0, (0, 1))))
kernels.GEMM["5o"] = dataclasses.replace(
    k5, key="5o", source="zz_order.cl", params=k5.params + (Param("ORDER", 0, (0, 1, 2, 3)),))
kernels.GEMM["5s"] = dataclasses.replace(
    k5, key="5s", source="zz_strip.cl", split_k=False,
    params=k5.params + tuple(Param(n, 0, (0, 1)) for n in ("NOG", "NOSTS", "NOBAR", "NOLDS")))
SETS = {
    "levers": [("5", {}), ("5r", dict(GROUP_M=8)), ("5r", dict(GROUP_M=16)),
               ("5a", dict(STAGES=2)), ("5a", dict(STAGES=3)), ("5a", dict(STAGES=4)),
               ("5a", dict(STAGES=3, GROUP_M=16))],
    "strip": [("5", {}), ("5s", dict(NOG=1)), ("5s", dict(NOBAR=1)), ("5s", dict(NOLDS=1)),
              ("5s", dict(NOG=1, NOSTS=1, NOBAR=1)), ("5s", dict(NOG=1, NOSTS=1, NOBAR=1, NOLDS=1)),
              ("5", dict(TSK=16))],
    "order": [("5", {}), ("5o", dict(ORDER=1)), ("5o", dict(ORDER=2)), ("5o", dict(ORDER=3))],
    "ceiling": [("5", {}), ("5r", dict(GROUP_M=2)), ("5r", dict(GROUP_M=4)),
                ("5r", dict(GROUP_M=4, COLBANDS=1)), ("5r", dict(GROUP_M=16, COLBANDS=1)),
                ("5s", dict(NOG=1, NOSTS=1, NOBAR=1)), ("5s", dict(NOG=1, NOSTS=1, NOBAR=1, NOLDS=1))],
}


def sass_counts(ptx: str, tag: str, outdir: Path) -> dict:
    """ptxas + cuobjdump on the PTX the OpenCL compiler made (approximates the driver's JIT)."""
    if not shutil.which("ptxas"):
        return {}
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / f"{tag}.ptx").write_text(ptx.replace("\0", ""))
    cub = outdir / f"{tag}.cubin"
    v = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(outdir / f"{tag}.ptx"), "-o", str(cub)],
                       capture_output=True, text=True)
    sass = subprocess.run(["cuobjdump", "--dump-sass", str(cub)], capture_output=True, text=True).stdout
    (outdir / f"{tag}.sass").write_text(sass)
    ins = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);", sass)
    ops = [op.split(".")[0] for _, op, _ in ins]
    reuse = sum(".reuse" in rest for _, _, rest in ins)
    c = {o: ops.count(o) for o in ("FFMA", "LDS", "LDG", "LDGSTS", "STS", "BAR", "IMAD", "IADD3", "LEA", "MOV")}
    c.update(total=len(ops), reuse_operands=reuse, ptxas=v.stderr.strip().splitlines()[-2:])
    return c


def arguments(sets: dict, default: str) -> argparse.Namespace:
    """The probe scripts' command line: which set of points, sizes, rounds, where to write."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192,4096")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--set", default=default, choices=sorted(sets))
    ap.add_argument("--small", action="store_true", help="CPU check: small tiles, small shapes")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    return ap.parse_args()


def main() -> None:
    a = arguments(SETS, "levers")
    q = device.queue(device.select())
    out = Path(a.out)
    if a.small:
        P = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=1)
        for key, extra in (("5s", dict(NOG=1, NOSTS=1, NOBAR=1, NOLDS=1)), ("5a", dict(STAGES=2)), ("5a", dict(STAGES=3)), ("5a", dict(STAGES=4, GROUP_M=4)),
                           ("5r", dict(GROUP_M=4)), ("5r", dict(GROUP_M=8)),
                           ("5o", dict(ORDER=1)), ("5o", dict(ORDER=3)),
                           ("5r", dict(GROUP_M=2, COLBANDS=1)), ("5r", dict(GROUP_M=4, COLBANDS=1))):
            for m, n, k in ((96, 160, 64), (256, 64, 8), (64, 320, 136)):
                r = run_gemm(q, m, n, k, kernel=key, params={**P, **extra}, repeat=2, trans_a=key == "5a",
                             transposed_by="kernel" if key == "5a" else "auto")
                print(key, extra, (m, n, k), "verified", r["verified"], f"{r['rel_error']:.2e}", flush=True)
                assert r["verified"] or key == "5s"
        return
    sizes = [int(s) for s in a.sizes.split(",")]
    points = SETS[a.set]
    describe_builds(q, points, out)
    # A K-major at both sizes: as gemm() lays it out at 8192^3 (transpose timed), given
    # transposed and read as it lies at 4096^3
    interleaved(q, sizes, points, a.rounds, out / f"probe-{a.set}.jsonl",
                lambda s: dict(trans_a=True, transposed_by="kernel") if s < 8192 else {},
                lambda s: 100 if s == 8192 else 300)


DB = "clgemm/tuned/nvidia-h200.json"


def describe_builds(q, points, out: Path) -> None:
    """Registers, shared memory and SASS counts of each probe build at the 8192^3 point."""
    ctx, dev = q.context, q.device
    base = json.load(open(DB))["entries"]["5"]["8192x8192x8192"]["params"]
    for key, extra in points:
        k = kernels.GEMM[key]
        prg = build.compile_source(ctx, k, k.resolve({**base, **extra}),
                                   build.device_options(ctx, k) + ("-DEXACT", "-DA_KMAJOR", "-cl-nv-verbose"))
        log = prg.get_build_info(dev, cl.program_build_info.LOG)
        ptx = prg.get_info(cl.program_info.BINARIES)[0].decode(errors="replace")
        tag = key + "".join(f"_{n}{v}" for n, v in extra.items())
        sc = sass_counts(ptx, tag, out / "sass")
        print(tag, "registers", re.findall(r"Used (\d+) registers", log), "smem",
              re.findall(r"(\d+) bytes smem", log), "cp.async in PTX", ptx.count("cp.async.cg"), sc, flush=True)


def interleaved(q, sizes, points, rounds: int, path: Path, layout, repeat) -> list[dict]:
    """Each point at each size in turn, `rounds` times, at the size's tuned parameters with
    the point's changes, laid out as layout(size) says; rows to `path`, then the medians."""
    db = json.load(open(DB))["entries"]["5"]
    rows = []
    with open(path, "w") as f:
        for rnd in range(rounds):
            for s in sizes:
                P = db[f"{s}x{s}x{s}"]["params"]
                for key, extra in points:
                    t0 = time.time()
                    r = run_gemm(q, s, s, s, kernel=key, params={**P, **extra}, repeat=repeat(s), **layout(s))
                    r.update(round=rnd, probe=extra, t0=t0, t1=time.time())
                    f.write(json.dumps(r, default=str) + "\n")
                    f.flush()
                    rows.append(r)
                    print(f"{rnd} {s} {key:3s} {str(extra):28s} {r['gflops']:8.0f} GFLOPS ok={r['verified']} "
                          f"kmajor={r['a_kmajor']} read={r['read_as_they_lie']}", flush=True)
    print("\nmedian of rounds (GFLOPS):")
    for s in sizes:
        for key, extra in points:
            g = sorted(r["gflops"] for r in rows if r["m"] == s and r["kernel"] == key and r["probe"] == extra)
            print(f"{s} {key:3s} {str(extra):28s} {g[len(g) // 2]:8.0f}  range {g[0]:.0f}-{g[-1]:.0f}")
    return rows

if __name__ == "__main__":
    main()
