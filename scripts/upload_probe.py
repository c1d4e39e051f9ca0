"""Host-to-device upload of a numpy operand: a dense write into a buffer of its own size
against operands.raw's rectangular write into a larger zero-padded buffer (what gemm()
does for a padded shape), wall-clock medians including the zero fill.

    python3 scripts/upload_probe.py --rows 4000 --cols 4000 --padded 4096x4096
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyopencl as cl

from clgemm import device, operands


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--cols", type=int, default=4000)
    ap.add_argument("--padded", default="4096x4096")
    ap.add_argument("--repeat", type=int, default=9)
    a = ap.parse_args()
    q = device.queue(device.select())
    x = np.random.default_rng(0).standard_normal((a.rows, a.cols), dtype=np.float32)
    shape = tuple(int(v) for v in a.padded.split("x"))

    def dense():
        buf = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, x.nbytes)
        cl.enqueue_copy(q, buf, x, is_blocking=True)

    def padded():
        operands.raw(q, x, 4, shape)
        q.finish()

    out = {}
    for name, fn in (("dense write", dense), ("padded rect write", padded)) * 2:
        fn()
        ts = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        out.setdefault(name, []).append(statistics.median(ts))
    got = operands.to_host(q, operands.raw(q, x, 4, shape))
    assert np.array_equal(got[: a.rows, : a.cols], x) and not got[a.rows:].any() and not got[:, a.cols:].any()
    for name, ms in out.items():
        print(f"{name:18s} {a.rows}x{a.cols} -> {shape}: best round median {1e3 * min(ms):.2f} ms "
              f"({x.nbytes / min(ms) / 1e9:.1f} GB/s of the matrix), rounds {[round(1e3 * v, 2) for v in ms]}")


if __name__ == "__main__":
    main()
