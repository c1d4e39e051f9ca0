"""Session 7 probes of kernel 5 (untracked kernels/zz_u2.cl and zz_rp.cl, kept in
results/h200/session7/probes/) against the shipped kernel at its tuned points, interleaved
rounds, A K-major; registers and SASS counts of each build.

    python3 scripts/probe_s7.py --set u2 --sizes 8192,4096 --rounds 3 [--small]
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from clgemm import device, kernels  # noqa: E402
from clgemm.kernels import Param  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402
from probe_s6 import arguments, describe_builds, interleaved  # noqa: E402

k5 = kernels.get("5")
kernels.GEMM["5u"] = dataclasses.replace(
    k5, key="5u", source="zz_u2.cl", split_k=False,
    params=k5.params + (Param("U2", 0, (0, 1)), Param("PB", 0, (0, 1)), Param("KU", 0, (0, 1, 2, 4))))
kernels.GEMM["5p"] = dataclasses.replace(
    k5, key="5p", source="zz_rp.cl", split_k=False, params=k5.params + (Param("RP", 0, (0, 1)),))
SETS = {
    "u2": [("5", {}), ("5u", dict(U2=1)), ("5u", dict(PB=1)), ("5u", dict(U2=1, PB=1))],
    "rp": [("5", {}), ("5p", {}), ("5p", dict(RP=1))],
    "loop": [("5", {}), ("5u", {}), ("5u", dict(U2=1)), ("5u", dict(PB=1)), ("5u", dict(KU=1)),
             ("5u", dict(KU=2)), ("5u", dict(KU=4))],
}


def main() -> None:
    a = arguments(SETS, "u2")
    q = device.queue(device.select())
    out = Path(a.out)
    points = SETS[a.set]
    if a.small:
        P = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=1)
        for key, extra in points:
            for m, n, k in ((96, 160, 64), (64, 32, 8), (64, 96, 136), (32, 64, 16)):
                r = run_gemm(q, m, n, k, kernel=key, params={**P, **extra}, repeat=2,
                             trans_a=True, transposed_by="kernel")
                print(key, extra, (m, n, k), "verified", r["verified"], f"{r['rel_error']:.2e}", flush=True)
                assert r["verified"] and r["read_as_they_lie"][0], r
        return
    sizes = [int(s) for s in a.sizes.split(",")]
    describe_builds(q, points, out)
    # A given K-major and read as it lies: the 8192^3 layout without its transpose
    interleaved(q, sizes, points, a.rounds, out / f"probe-{a.set}.jsonl",
                lambda s: dict(trans_a=True, transposed_by="kernel"),
                lambda s: 60 if s == 8192 else 300)

if __name__ == "__main__":
    main()
