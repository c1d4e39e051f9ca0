"""A/B a registered kernel against another source file of the same kernel (an older
revision, a candidate change) at the same parameters, interleaved, on one device.

    git show 39fd8de:kernels/5_double_buffered.cl > kernels/zz_prev.cl
    python3 scripts/ab_source.py --kernel 5 --source zz_prev.cl --size 4096 --rounds 2 \
        --param TSM=64 --param TSN=128 --param TSK=16 --param WPTM=16 --param WPTN=4
"""

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import device, kernels  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="5")
    ap.add_argument("--source", required=True, help="file name under kernels/")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--param", action="append", default=[])
    a = ap.parse_args()
    q = device.queue(device.select())
    base = kernels.get(a.kernel)
    kernels.GEMM["B"] = dataclasses.replace(base, key="B", source=a.source)
    params = dict(p.split("=") for p in a.param)
    s = a.size
    for _ in range(a.rounds):
        for key in (base.key, "B"):
            r = run_gemm(q, s, s, s, kernel=key, params=params, repeat=10)
            print(f"{'registered' if key == base.key else a.source}: {r['gflops']:.0f} GFLOPS "
                  f"verified={r['verified']} {r['params']}", flush=True)


if __name__ == "__main__":
    main()
