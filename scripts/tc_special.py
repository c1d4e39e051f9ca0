"""Kernels 5 and 7 (or 8) on operands at float's edges: rows of A scaled near the top and the
bottom of float's range, and one Inf and one NaN in A. Prints, per kernel, what the Inf
and NaN rows of C hold and the relative error (against float64) of the scaled rows.
Kernel 7 alone (guard=False): its TF32 split gives NaN where float gives Inf (Inf - Inf),
and operands below about 1e-34 keep only TF32's precision; gemm()'s guarded kernel 7
hands such products to kernel 5 (clgemm/guard.py), so its rows match kernel 5's (the
line says whether its whole output is kernel 5's, bit for bit). Kernel 8 likewise.

    python3 scripts/tc_special.py [--size 1024] [--kernels 7,8]

The device is PYOPENCL_CTX's, else the first GPU, else the first CPU device (where
kernel 7 is emulated: slow, so keep --size small there).
"""

from __future__ import annotations

import argparse

import numpy as np
import pyopencl as cl

import clgemm


def pick_device() -> cl.Device:
    """PYOPENCL_CTX if set, else the first GPU, else the first CPU device (as clgemm's CLI)."""
    try:
        return clgemm.select_device()
    except clgemm.DeviceNotFound as e:
        raise SystemExit(str(e)) from None


def gemm_kernels(text: str) -> list[str]:
    """--kernels: comma-separated GEMM kernels, each checked as call_overhead.py's --kernel."""
    from call_overhead import gemm_kernel      # scripts/call_overhead.py
    return [gemm_kernel(k.strip()) for k in text.split(",")]


def rel_error(c: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--size", type=int, default=256, help="M = N = K [default: 256]")
    ap.add_argument("--kernels", default="7", type=gemm_kernels,
                    help="tensor-core kernels, comma-separated [7]")
    args = ap.parse_args()
    s = args.size
    queue = cl.CommandQueue(cl.Context([pick_device()]))
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (s, s)).astype(np.float32)
    b = rng.uniform(-1, 1, (s, s)).astype(np.float32)
    a[2] *= np.float32(1e30)     # products near 1e30, sums well inside float's range
    a[3] *= np.float32(1e-30)    # products near 1e-30: their TF32 remainders stay normal
    a[4] *= np.float32(1e-36)    # remainders below float's smallest normal (1.2e-38)
    a[0, 0], a[1, 1] = np.inf, np.nan
    ref = a.astype(np.float64) @ b.astype(np.float64)
    runs = [("5", True, "5")] + [(key, guard, f"{key} {'guarded' if guard else 'alone'}")
                                 for key in args.kernels for guard in (False, True)]
    c5 = None
    for key, guard, name in runs:
        c = clgemm.gemm(queue, a, b, kernel=key, guard=guard)
        c5 = c if c5 is None else c5
        errs = {r: rel_error(c[r:r + 1], ref[r:r + 1]) for r in (2, 3, 4, 5)}
        print(f"kernel {name}: row 0 (Inf in A) finite {np.isfinite(c[0]).sum()}/{s}, "
              f"inf {np.isinf(c[0]).sum()}, nan {np.isnan(c[0]).sum()}; "
              f"row 1 (NaN) nan {np.isnan(c[1]).sum()}/{s}; "
              f"row errors x1e30 {errs[2]:.2e}, x1e-30 {errs[3]:.2e}, x1e-36 {errs[4]:.2e}, "
              f"plain {errs[5]:.2e}; kernel 5's bit for bit: "
              f"{np.array_equal(c, c5, equal_nan=True)}", flush=True)


if __name__ == "__main__":
    main()
