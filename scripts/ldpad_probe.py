"""Do power-of-two leading dimensions cost kernel 5 at 8192^3? Rows 32 KB apart may map
a tile's loads onto few L2 slices or DRAM channels. gemm() allocates the K-major copy of A
itself, so its leading dimension is free to choose; B's and C's are the caller's.

Each variant pads the leading dimensions of (A, B, C) by (pa, pb, pc) floats; the kernel,
its tuned parameters and its build are the same. Kernel time from profiling events, median
of R launches, interleaved rounds; C poisoned, then checked against float64 on sampled
rows before any timing.

    python3 scripts/ldpad_probe.py --shapes 8192x8192x8192 --pads 0:0:0,32:0:0,32:32:32 --kmajor 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import device, operands, timing, verify  # noqa: E402
from clgemm.gemm import GemmPlan  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192x8192x8192")
    ap.add_argument("--pads", default="0:0:0,32:0:0,64:0:0,0:32:0,0:0:32,32:32:32,128:128:128")
    ap.add_argument("--kmajor", type=int, default=1, help="A stored K x M (as gemm() makes it)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    a = ap.parse_args()
    q = device.queue(device.select())
    rng = np.random.default_rng(7)
    pads = [tuple(int(v) for v in p.split(":")) for p in a.pads.split(",")]
    rows_out = []
    for s in a.shapes.split(","):
        m, n, k = (int(v) for v in s.lower().split("x"))
        plan = GemmPlan(q, "5", shape=(m, n, k))
        A, B = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
        rows = verify.sample_rows(rng, m, 64)
        ref = verify.reference(A[rows], B)
        launches = {}
        widths = {"A": (m if a.kmajor else k), "B": n, "C": n}
        for pad in pads:
            for (name, cols), extra in zip(widths.items(), pad):
                if (cols + extra) % plan.align:
                    sys.exit(f"{s}: {name}'s leading dimension {cols} + {extra} is not a multiple of "
                             f"the kernel's vector width {plan.align}")
        for pa, pb, pc in pads:
            # rows `pad` floats longer: ld = cols + pad (raw rounds cols up to a multiple of it)
            x = np.ascontiguousarray(A.T) if a.kmajor else A
            am = operands.raw(q, x, x.shape[1] + pa)
            bm = operands.raw(q, B, n + pb)
            cm = operands.poison(q, operands.zeros(q, m, n, n + pc))
            go = plan.bind(am, bm, cm, a_kmajor=bool(a.kmajor))
            cl.wait_for_events(go())
            host = np.empty((m, n + pc), np.float32)
            cl.enqueue_copy(q, host, cm.buf)
            err = verify.rel_error(host[rows, :n], ref)
            ok = bool(err <= verify.tolerance(k))
            print(f"{s} pads {pa}:{pb}:{pc} rel_error {err:.2e} ok={ok}", flush=True)
            launches[(pa, pb, pc)] = (go, ok, err)
        ms: dict = {p: [] for p in pads}
        for rnd in range(a.rounds):
            for p in pads:
                ms[p].extend(timing.profile(launches[p][0], repeat=a.repeat).ms)
        base = statistics.median(ms[pads[0]])
        for p in pads:
            med = statistics.median(ms[p])
            r = {"shape": s, "pads": p, "kmajor": a.kmajor, "params": plan.params,
                 "ms_median": med, "ms_min": min(ms[p]), "gflops": timing.gflops(m, n, k, med),
                 "vs_first": base / med, "verified": launches[p][1], "rel_error": launches[p][2],
                 "runs": len(ms[p])}
            rows_out.append(r)
    with open(Path(a.out) / "ldpad.jsonl", "a") as f:
        for r in rows_out:
            f.write(json.dumps(r) + "\n")
    print("shape            kmajor pads(A:B:C)   GFLOPS   x first  ok")
    for r in rows_out:
        print(f"{r['shape']:>16} {r['kmajor']:>6} {':'.join(map(str, r['pads'])):>12} "
              f"{r['gflops']:8.0f} {r['vs_first']:8.3f}  {r['verified']}")


if __name__ == "__main__":
    main()
