"""Measure GEMM kernels at several square sizes with `clgemm run`'s own routine (fresh
random data, NaN-poisoned output verified against float64, profiling-event median after a
warm-up) and write results as JSON and a markdown table.

    python3 scripts/kernel_table.py --kernels 1,2,3,4,5 --sizes 1024,2048,4096,8192,4000 \
        --out results/h200/kernels [--params-from finalists.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import device, kernels  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="1,2,3,4,5")
    ap.add_argument("--sizes", default="1024,2048,4096,8192,4000")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--params-from", default=None, help="JSON files with best[kernel].params, comma-separated")
    ap.add_argument("--out", default="kernels")
    a = ap.parse_args()
    q = device.queue(device.select())
    chosen = {}
    for f in (a.params_from or "").split(","):
        if f:
            chosen |= json.loads(Path(f).read_text())["best"]
    rows = []
    for key in a.kernels.split(","):
        params = chosen.get(key, {}).get("params") or kernels.get(key).defaults
        for s in map(int, a.sizes.split(",")):
            r = run_gemm(q, s, s, s, kernel=key, params=params, repeat=a.repeat)
            rows.append(r)
            print(f"kernel {key} {s}^3: {r['gflops']:8.0f} GFLOPS  median {r['ms_median']:.3f} ms  "
                  f"verified={r['verified']} err={r['rel_error']:.1e}", flush=True)
    info = device.describe(q.device)
    doc = {"device": info, "date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv),
           "method": "profiling-event median of --repeat launches after a verified warm-up "
                     "launch; fresh uniform[-1,1) data; GFLOPS = 2MNK / median",
           "runs": rows}
    Path(a.out + ".json").write_text(json.dumps(doc, indent=1))
    sizes = list(dict.fromkeys(r["m"] for r in rows))
    lines = [f"# GEMM kernels on {info['name']} (driver {info['driver']}), {doc['date']}", "",
             f"Command: `{doc['command']}`", "", f"Method: {doc['method']}.", "",
             "| kernel | params | " + " | ".join(f"{s}³ GFLOPS" for s in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    for key in a.kernels.split(","):
        rs = {r["m"]: r for r in rows if r["kernel"] == key}
        p = " ".join(f"{n}={v}" for n, v in next(iter(rs.values()))["params"].items())
        lines.append(f"| {key} {kernels.get(key).name} | {p} | " +
                     " | ".join(f"{rs[s]['gflops']:.0f}" + ("" if rs[s]["verified"] else " (FAILED)")
                                for s in sizes) + " |")
    Path(a.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
