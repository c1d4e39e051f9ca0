"""What the OpenCL compiler made of a kernel build: on NVIDIA, the -cl-nv-verbose report
(registers, spills) and, from the PTX in the program binary, counts of the instructions
that matter here (vector loads, FMAs, shuffles, MMAs); elsewhere whatever the binary shows.

    python3 scripts/inspect_ptx.py --kernels 5,7 [--param TSK=16] [--option=-DEXACT]
        [--source probe.cl] [--save-ptx DIR]

Each kernel is built from its file in kernels/ with its registry defaults (--param
overrides them) and the device options clgemm's build adds: SHUFFLE (the sub-group
mechanism) for kernel 6, MMA (whether the TF32 MMA exists) for kernel 7. The device is
PYOPENCL_CTX's, else the first GPU, else the first CPU device.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pyopencl as cl

import clgemm
from clgemm import GEMM

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
PATTERNS = ("ld.global.v4", "ld.global.nc.v4", "ld.global.v2", "ld.global.f32", "ld.shared.v4",
            "ld.shared.v2", "ld.shared.f32", "st.shared.v4", "st.shared.f32", "st.global.v4",
            "fma.rn.f32", "ld.local", "st.local", "bar.sync", "shfl.sync", "mma.sync",
            "cvt.rna.tf32")


def pick_device() -> cl.Device:
    """PYOPENCL_CTX if set, else the first GPU, else the first CPU device (as clgemm's CLI)."""
    try:
        return clgemm.select_device()
    except clgemm.DeviceNotFound as e:
        raise SystemExit(str(e)) from None


def device_options(dev: cl.Device, kernel) -> list[str]:
    """The options clgemm's build derives from the device (shuffle mechanism, TF32 MMA)."""
    nvidia = "NVIDIA" in dev.platform.name
    cc = (dev.compute_capability_major_nv, dev.compute_capability_minor_nv) \
        if "cl_nv_device_attribute_query" in dev.extensions else None
    ext = dev.extensions.split()
    opts = []
    if kernel.shuffle:
        code = 1 if nvidia or cc else 2 if "cl_khr_subgroup_shuffle" in ext \
            else 3 if "cl_intel_subgroups" in ext else 0
        opts.append(f"-DSHUFFLE={code}")
    if kernel.mma:
        opts.append(f"-DMMA={int(cc is not None and cc >= (8, 0))}")
    return opts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--kernels", default="5", help="GEMM kernel numbers, comma-separated")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--option", action="append", default=[], help="extra build option (repeatable)")
    ap.add_argument("--source", type=Path, help="build this file instead of the kernel's own")
    ap.add_argument("--save-ptx", type=Path, metavar="DIR")
    a = ap.parse_args()
    dev = pick_device()
    ctx = cl.Context([dev])
    over = dict(p.split("=", 1) for p in a.param)
    for key in a.kernels.split(","):
        k = GEMM[key]
        params = k.resolve({n: int(v) for n, v in over.items() if n in k.defaults})
        source = (a.source or KERNELS / k.source).read_text()
        opts = [f"-D{n}={v}" for n, v in params.items()] + [f"-I{KERNELS}"] \
            + device_options(dev, k) + a.option
        if "NVIDIA" in dev.platform.name:
            opts.append("-cl-nv-verbose")
        prg = cl.Program(ctx, source).build(options=opts)
        log = prg.get_build_info(dev, cl.program_build_info.LOG)
        ptx = prg.get_info(cl.program_info.BINARIES)[0].decode(errors="replace")
        counts = {pat: len(re.findall(re.escape(pat), ptx)) for pat in PATTERNS}
        regs = re.findall(r"Used (\d+) registers", log)
        spills = re.findall(r"(\d+) bytes spill stores", log)
        print(f"kernel {key} {a.source or k.source} {' '.join(a.option)} {params}")
        print(f"   registers {regs} spill stores {spills}  "
              + " ".join(f"{n}={c}" for n, c in counts.items() if c))
        if log.strip():
            print("   " + " | ".join(line.strip() for line in log.strip().splitlines()[-4:]))
        if a.save_ptx:
            a.save_ptx.mkdir(parents=True, exist_ok=True)
            (a.save_ptx / f"kernel{key}.ptx").write_text(ptx)


if __name__ == "__main__":
    main()
