"""Compile kernels with their defaults (or --param overrides) and report what the compiler
did: NVIDIA's -cl-nv-verbose log (registers, spills, shared memory) and, from the PTX in
program.binaries, the vector loads and FMAs.

    python3 scripts/inspect_ptx.py --kernels 3,4,5 [--param TSK=16] [--option -DEXACT]
        [--source FILE_UNDER_KERNELS] [--save-ptx DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import build, device, kernels  # noqa: E402

PATTERNS = ("ld.global.v4", "ld.global.nc.v4", "ld.global.v2", "ld.global.f32", "ld.shared.v4", "ld.shared.v2",
            "ld.shared.f32", "st.shared.v4", "st.shared.f32", "st.global.v4", "fma.rn.f32",
            "ld.local", "st.local", "bar.sync", "shfl.sync", "mma.sync", "cvt.rna.tf32")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="1,2,3,4,5")
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--option", action="append", default=[], help="extra build option")
    ap.add_argument("--source", default=None, help="another source file for the kernel(s)")
    ap.add_argument("--save-ptx", default=None)
    a = ap.parse_args()
    dev = device.select()
    ctx = cl.Context([dev])
    over = dict(p.split("=") for p in a.param)
    for key in a.kernels.split(","):
        k = kernels.get(key)
        if a.source:
            k = dataclasses.replace(k, source=a.source)
        p = k.resolve({n: v for n, v in over.items() if n in k.defaults})
        extra = tuple(a.option) + (("-cl-nv-verbose",) if "NVIDIA" in dev.platform.name else ())
        prg = build.compile_source(ctx, k, p, build.device_options(ctx, k) + extra)
        log = prg.get_build_info(dev, cl.program_build_info.LOG)
        ptx = prg.get_info(cl.program_info.BINARIES)[0].decode(errors="replace")
        counts = {pat: len(re.findall(re.escape(pat), ptx)) for pat in PATTERNS}
        regs = re.findall(r"Used (\d+) registers", log)
        spills = re.findall(r"(\d+) bytes spill stores", log)
        print(f"kernel {key} {k.source} {' '.join(a.option)} {p}")
        print(f"   registers {regs} spill stores {spills}  " +
              " ".join(f"{n}={c}" for n, c in counts.items() if c))
        if log.strip():
            print("   " + " | ".join(l.strip() for l in log.strip().splitlines()[-4:]))
        if a.save_ptx:
            Path(a.save_ptx).mkdir(parents=True, exist_ok=True)
            (Path(a.save_ptx) / f"kernel{key}.ptx").write_text(ptx)


if __name__ == "__main__":
    main()
