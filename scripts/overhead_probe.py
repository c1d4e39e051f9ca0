"""Host time of one gemm() call on device-resident operands, against the device time of the
launches it makes. A user calling clgemm.gemm(queue, a, b) in a loop pays both; before
session 9 every call also re-chose parameters from the database, created new kernel
objects (pyopencl fetches each one's argument setter from a disk cache) and re-read paths.

Each round, for each size: `--calls` gemm() calls back to back, then queue.finish(); the
wall time per call, and the median device span of the same product by events. Outputs are
checked against float64 on the first call. With --memory (torch on a CUDA device), device
memory in use before and after 20 calls on fresh 4096^2 operands, to see that pooled kernel
objects do not keep old buffers alive.

    python3 scripts/overhead_probe.py --sizes 64,256,1024 --out DIR
    PYTHONPATH=zz_old python3 scripts/overhead_probe.py ...   # the package as it was
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import pyopencl.array as cla

import clgemm
from clgemm import device, timing
from clgemm.gemm import GemmPlan, prepare
from clgemm.verify import rel_error


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64,256,512,1024,2048")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device")
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--label", default=str(Path(clgemm.__file__).parent))
    ap.add_argument("--out")
    args = ap.parse_args()
    q = device.queue(device.select(args.device))
    rng = np.random.default_rng(9)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        da, db_ = cla.to_device(q, a), cla.to_device(q, b)
        err = rel_error(clgemm.gemm(q, da, db_).get(), a.astype(np.float64) @ b)
        prep = prepare(GemmPlan(q, None, None, shape=(n, n, n)), da, db_, None, 1.0, 0.0)
        span = timing.profile(prep.launch, repeat=20, warmup=2).median
        walls = []
        for _ in range(args.rounds):
            q.finish()
            t = time.perf_counter()
            for _ in range(args.calls):
                clgemm.gemm(q, da, db_)
            q.finish()
            walls.append((time.perf_counter() - t) / args.calls * 1e3)
        wall = statistics.median(walls)
        rows.append({"n": n, "rel_error": err, "span_ms": span, "wall_ms": wall,
                     "walls_ms": walls, "host_ms": wall - span})
        print(f"{n:>5}  err {err:.1e}  span {span * 1e3:8.1f} us  wall/call {wall * 1e3:8.1f} us"
              f"  difference {(wall - span) * 1e3:8.1f} us", flush=True)
    mem = None
    if args.memory:
        import torch
        q.finish()
        used = lambda: (lambda f, t: t - f)(*torch.cuda.mem_get_info())  # noqa: E731
        before = used()
        results = []
        for _ in range(20):
            x = cla.to_device(q, rng.standard_normal((4096, 4096), dtype=np.float32))
            results[:] = [clgemm.gemm(q, x, x)]      # the newest result stays alive
        q.finish()
        del x
        mem = {"before_mb": before / 2**20, "after_mb": used() / 2**20,
               "note": "one 64 MB result kept alive; 20 x 64 MB operands and results dropped"}
        print(f"device memory in use: {mem['before_mb']:.0f} MB before, {mem['after_mb']:.0f} MB "
              f"after 20 calls on fresh 4096^2 operands", flush=True)
        del results
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "overhead.json").write_text(json.dumps(
            {"package": args.label, "device": device.describe(q.device), "calls": args.calls,
             "rounds": args.rounds, "rows": rows, "memory": mem}, indent=1, default=str))
    print("method: wall = median over rounds of (calls back to back + finish) / calls; "
          "span = median device span of the same launches by events")


if __name__ == "__main__":
    main()
