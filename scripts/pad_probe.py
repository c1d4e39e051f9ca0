"""Where the time of a padded product goes: each launch of gemm()'s plan for M x N x K
(device-resident operands, as `clgemm run` and `bench` time it) with its own profiling
interval and the gaps between them, and the padding copies against a flat copy of the
same bytes and a one-line OpenCL row copy.

    python3 scripts/pad_probe.py --shape 4000x4000x4000 [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import device, operands, timing, verify  # noqa: E402
from clgemm.gemm import GemmPlan, prepare  # noqa: E402

ROWCOPY = """
__kernel void rowcopy(const int cols4, const __global float4* src, const int lds4,
                      __global float4* dst, const int ldd4) {
    const int c = get_global_id(0), r = get_global_id(1);
    if (c < cols4) dst[r * ldd4 + c] = src[r * lds4 + c];
}
"""


def med(xs):
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="4000x4000x4000")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    m, n, k = map(int, a.shape.split("x"))
    q = device.queue(device.select())
    rng = np.random.default_rng(1)
    ha, hb = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
    plan = GemmPlan(q, None, shape=(m, n, k))
    prep = prepare(plan, cla.to_device(q, ha), cla.to_device(q, hb), None, 1.0, 0.0)
    cl.wait_for_events(prep.launch())
    runs = []
    for _ in range(a.repeat):
        evs = prep.launch()
        cl.wait_for_events(evs)
        runs.append([(e.profile.start, e.profile.end) for e in evs])
    steps = len(runs[0])
    out = {"shape": [m, n, k], "params": plan.params, "padded": prep.padded, "steps": steps,
           "step_ms": [med([(r[i][1] - r[i][0]) * 1e-6 for r in runs]) for i in range(steps)],
           "gap_ms": [med([(r[i + 1][0] - r[i][1]) * 1e-6 for r in runs]) for i in range(steps - 1)],
           "span_ms": med([(r[-1][1] - r[0][0]) * 1e-6 for r in runs])}
    out["gflops_span"] = timing.gflops(m, n, k, out["span_ms"])
    # the padding copies alone, against a flat copy of the same bytes and a kernel copy
    rows, cols = k, n                       # B: k x n into k x round(n)
    ldd = -(-n // 128) * 128
    src = operands.raw(q, cla.to_device(q, hb), 1)
    dst = operands.zeros(q, rows, cols, ldd)
    flat = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, rows * cols * 4)
    prg = cl.Program(q.context, ROWCOPY).build()
    kern = prg.rowcopy
    cands = {
        "copy_rect (ld %d -> %d)" % (cols, ldd): lambda: operands.copy_rect(q, src.buf, cols, dst.buf, ldd, rows, cols),
        "copy_rect (same ld)": lambda: operands.copy_rect(q, src.buf, cols, flat, cols, rows, cols),
        "enqueue_copy flat": lambda: cl.enqueue_copy(q, flat, src.buf, byte_count=rows * cols * 4),
    }
    if cols % 4 == 0:
        cands["row-copy kernel float4"] = lambda: kern(q, (-(-cols // 4 // 64) * 64, rows), (64, 1),
                                                        np.int32(cols // 4), src.buf, np.int32(cols // 4),
                                                        dst.buf, np.int32(ldd // 4))
    out["copies_ms"] = {}
    for name, f in cands.items():
        t = timing.profile(f, repeat=a.repeat)
        out["copies_ms"][name] = t.median
        print(f"{name:32s} {t.median:.4f} ms  {timing.gbps(8 * rows * cols, t.median):6.0f} GB/s", flush=True)
    got = np.empty((rows, ldd), np.float32)
    cl.enqueue_copy(q, got, dst.buf)
    assert np.array_equal(got[:, :cols], hb) and not got[:, cols:].any()
    print(json.dumps(out, indent=1, default=str))
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1, default=str)


if __name__ == "__main__":
    main()
