"""A GEMM build's PTX (scripts/inspect_ptx.py --save-ptx) launched through CUDA, so that
Nsight Compute, which profiles CUDA launches and not OpenCL ones, can read the hardware
counters of the very code the OpenCL driver compiles; or cuBLAS (torch, TF32 off) at the
same shape, to compare. Each output is checked against float64 on sampled rows.

    ncu --clock-control none --section WarpStateStats -k gemm \
        python3 scripts/ncu_ptx.py --ptx out/ptx/kernel5.ptx --kernel 5 \
        --param TSM=128 --param TSN=128 --param TSK=8 --param WPTM=16 --param WPTN=8 \
        --param PAD=1 --shape 4096x4096x4096
    ncu ... python3 scripts/ncu_ptx.py --cublas --shape 4096x4096x4096

The PTX must be an EXACT build without GUARD (the plain argument list of kernels 5-8:
M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) of a shape its tiles divide, with at most
48 KB of static local arrays: a CUDA launch takes more only as dynamic shared memory,
which kernels 7 and 8 at their tuned points would need their PTX rewritten for.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np


def check(c: np.ndarray, a: np.ndarray, b: np.ndarray, rows: np.ndarray) -> float:
    """Largest relative error of the sampled rows against float64."""
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    return float(np.abs(c[rows] - ref).max() / np.abs(ref).max())


def _clean(path: Path, ptx: bytes) -> Path:
    out = path.with_suffix(".clean.ptx")
    out.write_bytes(ptx)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--ptx", type=Path)
    ap.add_argument("--kernel", default="5")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--shape", default="4096x4096x4096", help="MxNxK")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cublas", action="store_true", help="torch a @ b instead of the PTX")
    a = ap.parse_args()
    if not a.cublas and (a.ptx is None or not a.ptx.is_file()):
        ap.error(f"--ptx: {a.ptx or 'a PTX file'} is needed (unless --cublas) and was not found")
    dims = a.shape.split("x")
    if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
        ap.error(f"--shape {a.shape!r} is not MxNxK")
    m, n, k = (int(x) for x in dims)
    rng = np.random.default_rng(0)
    ha = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    hb = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    rows = rng.choice(m, size=min(m, 64), replace=False)
    if a.cublas:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        da, db = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
        for _ in range(a.repeat):
            dc = da @ db
        torch.cuda.synchronize()
        print(f"cublas {a.shape}: rel. error {check(dc.cpu().numpy(), ha, hb, rows):.2e}")
        return

    from clgemm import GEMM
    if a.kernel not in GEMM:
        ap.error(f"--kernel {a.kernel!r}: kernels are {', '.join(GEMM)}")
    kern = GEMM[a.kernel]
    bad = [p for p in a.param if "=" not in p]
    if bad:
        ap.error(f"--param {bad[0]!r} is not NAME=VALUE")
    try:
        params = kern.resolve(dict(p.split("=", 1) for p in a.param))
    except ValueError as e:         # an unknown name or a value outside the space
        ap.error(f"--param: {e}")
    try:
        import cupy as cp
    except ImportError:
        raise SystemExit("ncu_ptx.py launches through CuPy, which is not installed here "
                         "(the GPU machines' image has it)") from None
    geo = kern.geometry
    lx, ly = geo.local(params)
    gx, gy = geo.global_size(params, m, n)
    # the OpenCL binary ends in a NUL; its %envreg0-2 (the NDRange's global offset, which
    # the OpenCL driver sets and a CUDA launch does not) read as 0
    ptx = re.sub(rb"%envreg[0-2]\b", b"0", a.ptx.read_bytes().rstrip(b"\0"))
    fn = cp.RawModule(path=str(_clean(a.ptx, ptx))).get_function("gemm")
    local_bytes = geo.local_bytes(params)
    da, db = cp.asarray(ha), cp.asarray(hb)
    dc = cp.full((m, n), np.nan, dtype=np.float32)
    args = (np.int32(m), np.int32(n), np.int32(k), np.float32(1.0), da, np.int32(k), db,
            np.int32(n), np.float32(0.0), dc, np.int32(n))
    for _ in range(a.repeat):
        fn((gx // lx, gy // ly, 1), (lx, ly, 1), args)
    cp.cuda.runtime.deviceSynchronize()
    err = check(cp.asnumpy(dc), ha, hb, rows)
    print(f"kernel {a.kernel} {params} {a.shape}: grid {gx // lx}x{gy // ly}, block {lx}x{ly},"
          f" {local_bytes} local bytes, rel. error {err:.2e}")
    if not err < 1e-5:
        raise SystemExit("wrong output: the launch does not match the build")


if __name__ == "__main__":
    main()
