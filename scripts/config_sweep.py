"""Every distinct tuned configuration of kernel 5 at shapes the database was not tuned at
(session 8): which one wins, against the one the nearest-shape lookup picks, and each
build's registers and local memory (NVIDIA's -cl-nv-verbose), so that the number of
work-groups resident per multiprocessor can be worked out.

    python3 scripts/config_sweep.py --shapes 1300,2100x2100x512 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from clgemm import build, db, device, kernels  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402
from choice_probe import shape  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    a = ap.parse_args()
    q = device.queue(device.select())
    k5 = kernels.get("5")
    configs = []
    for e in db.entries_for(q.device).get("5", {}).values():
        p = k5.resolve(e["params"])
        if p not in configs:
            configs.append(p)
    builds = []
    for i, p in enumerate(configs):
        for exact in (False, True):
            opts = build.device_options(q.context, k5) + (("-DEXACT",) if exact else ()) + ("-cl-nv-verbose",)
            try:
                log = build.compile_source(q.context, k5, p, opts).get_build_info(q.device, cl.program_build_info.LOG)
            except Exception as err:  # not an NVIDIA device: no register counts
                log = str(err)
            regs = re.findall(r"Used (\d+) registers", log)
            smem = re.findall(r"(\d+) bytes smem", log)
            builds.append(dict(config=i, params=p, exact=exact, registers=regs, smem=smem,
                               threads=k5.geometry.local_size(p)))
            print(f"config {i} exact={exact} {p} threads={k5.geometry.local_size(p)} registers={regs} smem={smem}", flush=True)
    rows = []
    for rnd in range(a.rounds):
        for s in a.shapes.split(","):
            m, n, k = shape(s)
            near = k5.resolve(db.lookup(q.device, "5", m, n, k)[1])
            for i, p in enumerate(configs):
                r = run_gemm(q, m, n, k, kernel="5", params=p)
                r.update(round=rnd, config=i, nearest=p == near)
                rows.append(r)
                print(f"{rnd} {s:>16} config {i} {'(nearest)' if p == near else '         '} padded={r['padded']!s:5} "
                      f"splits={r['splits']} {r['gflops']:7.0f} GFLOPS ok={r['verified']}", flush=True)
    (Path(a.out) / "config_sweep.json").write_text(json.dumps(dict(builds=builds, rows=rows), default=str))
    print("\nshape: nearest config GFLOPS / best config GFLOPS")
    for s in a.shapes.split(","):
        m, n, k = shape(s)
        rs = [r for r in rows if (r["m"], r["n"], r["k"]) == (m, n, k)]
        near = max(r["gflops"] for r in rs if r["nearest"])
        best = max(rs, key=lambda r: r["gflops"])
        print(f"{s:>16}: {near:7.0f} / {best['gflops']:7.0f} (config {best['config']}) x{best['gflops'] / near:.2f}")


if __name__ == "__main__":
    main()
