"""Where the time of one gemm() call goes at small sizes: the kernels' own span (profiling
events, first start to last end), the span between markers around the call (the bench's
method, which adds the host's enqueue time), and the host time to enqueue, for the launch
bound once (GemmPlan.bind) and for one that sets its twelve arguments on every call.

    python3 scripts/span_probe.py --sizes 512,1024,4096 --out span.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import bench, device, operands, timing, verify  # noqa: E402
from clgemm.gemm import GemmPlan  # noqa: E402

REPEAT = 30


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="512,1024,4096")
    ap.add_argument("--kernel", default="5")
    ap.add_argument("--out", default="span.json")
    a = ap.parse_args()
    q = device.queue(device.select())
    rng = np.random.default_rng()
    rows = []
    for s in map(int, a.sizes.split(",")):
        x, y = verify.random_matrix(rng, s, s), verify.random_matrix(rng, s, s)
        plan = GemmPlan(q, a.kernel, shape=(s, s, s))
        al = plan.align
        xm, ym = operands.raw(q, x, al), operands.raw(q, y, al)
        cm = operands.empty(q, s, s, operands.rounded(s, al))
        bound = plan.bind(xm, ym, cm)
        # the same launch with its arguments set on every call (GemmPlan.launch until now)
        knl = cl.Kernel(plan.compiled(s, s, s), "gemm")
        g = plan.kernel.geometry.global_size(plan.params, s, s) + (1,)
        unbound = lambda: [knl(q, g, plan.local + (1,), np.int32(s), np.int32(s),  # noqa: E731
                               np.int32(s), np.float32(1.0), xm.buf, np.int32(xm.ld), ym.buf,
                               np.int32(ym.ld), np.float32(0.0), cm.buf, np.int32(cm.ld))]
        for name, call in (("bound", bound), ("unbound", unbound)):
            kern = timing.profile(call, repeat=REPEAT, warmup=2)
            span, host = bench.measure(call, bench.OpenCLSpan(q), REPEAT)
            q.finish()
            t0 = time.perf_counter()
            for _ in range(REPEAT):
                call()
            enq = (time.perf_counter() - t0) / REPEAT * 1e6
            q.finish()
            r = {"size": s, "launch": name, "params": plan.params, "splits": plan.splits(s, s, s),
                 "kernel_ms": kern.median, "span_ms": span.median if span else None,
                 "host_ms": host.median, "enqueue_us": enq,
                 "kernel_gflops": timing.gflops(s, s, s, kern.median),
                 "span_gflops": timing.gflops(s, s, s, span.median) if span else None}
            rows.append(r)
            print(f"{s:5d} {name:8s} kernel {r['kernel_ms'] * 1e3:8.1f} us  span "
                  f"{(r['span_ms'] or 0) * 1e3:8.1f} us  host {r['host_ms'] * 1e3:8.1f} us  "
                  f"enqueue {enq:6.1f} us  ({r['kernel_gflops']:.0f} / {r['span_gflops'] or 0:.0f} "
                  f"GFLOPS)", flush=True)
    Path(a.out).write_text(json.dumps({"device": device.describe(q.device), "rows": rows,
                                       "command": " ".join(sys.argv)}, indent=1))


if __name__ == "__main__":
    main()
