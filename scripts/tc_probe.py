"""Kernel 7 (tensor cores, three TF32 MMAs per product) at several parameter points against
kernel 5 as gemm() picks it, interleaved rounds at each size, every output verified against
float64 on fresh data (same seed for every contender in a round, so their errors compare),
then odd shapes verified with the first point. --source adds another source of kernel 7
(a candidate change) at every point.

    python3 scripts/tc_probe.py --sizes 4096,8192 --rounds 2 --out DIR \
        --point 128,128,16,64,32 --point 128,128,16,32,64
"""

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import device, kernels, verify  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402

ODD = [(1, 1, 1), (17, 29, 13), (131, 257, 65), (1000, 1001, 999), (4097, 8, 4096),
       (8, 4096, 4097), (2048, 2048, 7)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--point", action="append", default=[], help="TSM,TSN,TSK,WM,WN")
    ap.add_argument("--out", default=".")
    ap.add_argument("--source", default=None,
                    help="another source of kernel 7 under kernels/, timed at each point too")
    a = ap.parse_args()
    q = device.queue(device.select())
    if a.source:
        kernels.GEMM["7v"] = dataclasses.replace(kernels.get("7"), key="7v", source=a.source)
    names = ("TSM", "TSN", "TSK", "WM", "WN")
    points = [dict(zip(names, map(int, p.split(",")))) for p in a.point]
    rows = []
    for s in map(int, a.sizes.split(",")):
        for rnd in range(a.rounds):
            variants = ["7", "7v"] if a.source else ["7"]
            for label, kern, params in [("k5", "5", None)] + [
                    (f"k{v} {p}", v, p) for p in points for v in variants]:
                try:
                    r = run_gemm(q, s, s, s, kernel=kern, params=params, seed=100 * s + rnd,
                                 repeat=10 if s <= 4096 else 5)
                except Exception as e:  # a point that fails to build or launch: recorded
                    print(f"{s} {label}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                    rows.append({"size": s, "label": label, "error": str(e)[:2000]})
                    continue
                rows.append({"size": s, "label": label, **r})
                print(f"{s} r{rnd} {label}: {r['gflops']:.0f} GFLOPS err {r['rel_error']:.2e} "
                      f"verified={r['verified']}", flush=True)
    odd = []
    if points:
        for shape in ODD:
            r = run_gemm(q, *shape, kernel="7", params=points[0], repeat=3, seed=7)
            odd.append({"shape": shape, "verified": r["verified"], "rel_error": r["rel_error"],
                        "k5_rel_error": run_gemm(q, *shape, kernel="5", repeat=1, seed=7)["rel_error"]})
            print("odd", odd[-1], flush=True)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "tc_probe.json").write_text(json.dumps(verify.json_safe(
        {"runs": rows, "odd": odd}), indent=1))
    print("\nsize  contender  GFLOPS (median of rounds)  max rel_error")
    for s in map(int, a.sizes.split(",")):
        for label in dict.fromkeys(r["label"] for r in rows if r["size"] == s):
            ok = [r for r in rows if r["size"] == s and r["label"] == label and "gflops" in r]
            if ok:
                print(f"{s} {label}: {statistics.median(r['gflops'] for r in ok):.0f} "
                      f"{max(r['rel_error'] for r in ok):.2e} "
                      f"{'ok' if all(r['verified'] for r in ok) else 'FAILED'}")


if __name__ == "__main__":
    main()
