"""Stream-K against one work-group per tile, through run_gemm (gemm()'s own layout, device
operands, every launch timed), interleaved rounds; the resident-group estimate, registers
and k-loop SASS of the STREAM_K build. Stream-K was not adopted (results/NOTES.md, session
7): this runs on the tree with results/h200/session7/probes/streamk-hybrid.patch applied
(calls 8, 9; streamk.patch for calls 3, 4).

    python3 scripts/streamk_probe.py --shapes 8192x8192x8192,4096x4096x4096 --modes 0,2,auto
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

import sys

import pyopencl as cl

from clgemm import build, device
from clgemm.gemm import GemmPlan
from clgemm.run import run_gemm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_s6 import sass_counts  # noqa: E402
from sass_loop import loop_mix  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192x8192x8192,4096x4096x4096")
    ap.add_argument("--modes", default="0,2,auto", help="stream_k values: groups per CU or auto")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--kernel", default="5")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    a = ap.parse_args()
    q = device.queue(device.select())
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")]
    modes = [m if m == "auto" else int(m) for m in a.modes.split(",")]
    for shape in shapes:
        plan = GemmPlan(q, a.kernel, shape=shape)
        km = plan.kmajor_a(*shape)
        info = {}
        for streamed in (False, True):
            prg = plan.compiled(*shape, km, streamed=streamed)
            kern = cl.Kernel(prg, "gemm")
            info[streamed] = kern.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, q.device)
        print(shape, plan.params, "kmajor", km, "largest group plain/streamed", info,
              "resident", plan.resident(*shape, km), "auto groups", plan.streams(*shape, km), flush=True)
        if q.device.vendor.startswith("NVIDIA"):
            for opts in (("-DSTREAM_K",), ()):
                opts += ("-DEXACT",) * plan.exact(*shape) + ("-DA_KMAJOR",) * km
                prg = build.compile_source(q.context, plan.kernel, plan.params,
                                           build.device_options(q.context, plan.kernel) + opts + ("-cl-nv-verbose",))
                log = prg.get_build_info(q.device, cl.program_build_info.LOG)
                print("  ", opts, re.findall(r"Used \d+ registers|\d+ bytes spill \w+", log), flush=True)
                tag = "x".join(map(str, shape)) + "".join(opts)
                ptx = prg.get_info(cl.program_info.BINARIES)[0].decode(errors="replace")
                if sass_counts(ptx, tag, Path(a.out) / "sass"):
                    mix = loop_mix((Path(a.out) / "sass" / f"{tag}.sass").read_text())
                    print("   loop:", {k: v for k, v in mix.items() if k != "ops"},
                          dict(list(mix["ops"].items())[:12]), flush=True)
    rows = []
    with open(Path(a.out) / "streamk.jsonl", "w") as f:
        for rnd in range(a.rounds):
            for shape in shapes:
                for mode in modes:
                    t0 = time.time()
                    r = run_gemm(q, *shape, kernel=a.kernel, stream_k=mode,
                                 repeat=40 if shape[0] * shape[1] * shape[2] >= 2**39 else 100)
                    r.update(round=rnd, mode=mode, t0=t0, t1=time.time())
                    f.write(json.dumps(r, default=str) + "\n")
                    f.flush()
                    rows.append(r)
                    print(f"{rnd} {'x'.join(map(str, shape)):16s} stream_k={str(mode):5s} groups={r['streams']:4d} "
                          f"{r['gflops']:8.0f} GFLOPS {r['ms_median']:.4f} ms ok={r['verified']} "
                          f"launches={r['launches']} padded={r['padded']}", flush=True)
    print("\nmedian of rounds (GFLOPS):")
    for shape in shapes:
        for mode in modes:
            g = sorted(r["gflops"] for r in rows if (r["m"], r["n"], r["k"]) == shape and r["mode"] == mode)
            print(f"{'x'.join(map(str, shape)):16s} stream_k={str(mode):5s} {g[len(g) // 2]:8.0f}  "
                  f"range {g[0]:.0f}-{g[-1]:.0f}")


if __name__ == "__main__":
    main()
