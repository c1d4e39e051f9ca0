"""Kernels 5 and 7 on operands that float handles at its edges: rows scaled near the top
and bottom of float's range, and one Inf and one NaN in A. Prints, per kernel, the
relative error of the finite rows and what the Inf and NaN rows of C hold.

    python3 scripts/tc_special.py [--size 256]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import clgemm  # noqa: E402
from clgemm import device, verify  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=256)
    s = ap.parse_args().size
    q = device.queue(device.select())
    rng = np.random.default_rng(5)
    a, b = verify.random_matrix(rng, s, s), verify.random_matrix(rng, s, s)
    a[2] *= np.float32(1e30)     # products near 1e30, sums well inside float's range
    a[3] *= np.float32(1e-30)    # products near 1e-30: their TF32 remainders stay normal
    a[4] *= np.float32(1e-36)    # remainders below float's smallest normal (1.2e-38)
    a[0, 0], a[1, 1] = np.inf, np.nan
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for key in ("5", "7"):
        c = clgemm.gemm(q, a, b, kernel=key)
        errs = {r: verify.rel_error(c[r:r + 1], ref[r:r + 1]) for r in (2, 3, 4, 5)}
        print(f"kernel {key}: row 0 (Inf in A) {np.unique(np.sign(c[0][np.isfinite(c[0])]))} "
              f"finite {np.isfinite(c[0]).sum()}/{s}, inf {np.isinf(c[0]).sum()}, "
              f"nan {np.isnan(c[0]).sum()}; row 1 (NaN) nan {np.isnan(c[1]).sum()}/{s}; "
              f"row errors x1e30 {errs[2]:.2e}, x1e-30 {errs[3]:.2e}, x1e-36 {errs[4]:.2e}, "
              f"plain {errs[5]:.2e}", flush=True)


if __name__ == "__main__":
    main()
