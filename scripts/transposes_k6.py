"""H200 measurements for the transposes, kernel 6 against kernel 5, and transposed
operands: one call, JSON out.

    python3 scripts/transposes_k6.py --out transposes_k6.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import device, kernels  # noqa: E402
from clgemm.run import run_gemm, run_transpose  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--gemm-size", type=int, default=4096)
    ap.add_argument("--out", default="transposes_k6.json")
    a = ap.parse_args()
    q = device.queue(device.select())
    out = {"device": device.describe(q.device), "date": time.strftime("%Y-%m-%d"),
           "command": " ".join(sys.argv), "transpose": [], "k6_vs_k5": [], "trans_ops": []}
    s = a.size
    # every point of each transpose's space
    for key in kernels.TRANSPOSE:
        k = kernels.get(key, "transpose")
        for p in k.space():
            if k.violations(p, q.device):
                continue
            r = run_transpose(q, s, s, kernel=key, params=p, repeat=10)
            out["transpose"].append(r)
            print(f"transpose {key:8s} {p}: {r['gbps']:7.0f} GB/s  copy {r['copy_gbps']:.0f}  "
                  f"ratio {r['ratio_to_copy']:.3f}  ok={r['verified']}", flush=True)
    # kernel 6 against kernel 5 at the same parameters, interleaved per configuration
    g = a.gemm_size
    base = kernels.get("5").defaults
    configs = [base] + [dict(base, WIDTH=w, PAD=pad) for w, pad in itertools.product((1, 2), (0, 1))] + [
        dict(TSM=128, TSN=128, TSK=8, WPTM=8, WPTN=8, WIDTH=w, PAD=0) for w in (1, 2, 4)]
    for p in configs:
        row = {"params": p}
        for key in ("5", "6"):
            if kernels.get(key).violations(p, q.device):
                row[key] = None
                continue
            r = run_gemm(q, g, g, g, kernel=key, params=p, repeat=10)
            row[key] = {"gflops": r["gflops"], "verified": r["verified"]}
        out["k6_vs_k5"].append(row)
        print(f"k5 vs k6 {p}: " + "  ".join(
            f"k{key} {row[key]['gflops']:.0f}" if row[key] else f"k{key} invalid" for key in ("5", "6")),
            flush=True)
    # transposed operands: device transposes (or the C^T identity) against kernel 5 reading
    # them as they lie (A_KMAJOR / B_NMAJOR builds), interleaved per combination
    for ta, tb in itertools.product((False, True), repeat=2):
        for by in ("transpose", "kernel"):
            r = run_gemm(q, g, g, g, kernel="5", trans_a=ta, trans_b=tb, repeat=10, transposed_by=by)
            out["trans_ops"].append(r)
            print(f"trans_a={ta} trans_b={tb} by {by}: {r['gflops']:.0f} GFLOPS, "
                  f"{r['launches']} launches, ok={r['verified']}", flush=True)
    Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
