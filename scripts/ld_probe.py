"""Does the leading dimension's alignment explain the unpadded cliff between 1230^3
(31 TFLOPS) and 1260^3 (17-19) on the H200 (session 8, call 1)? Kernel 5 with --pad no at
each size, its operands laid out with leading dimensions rounded to `align` floats
(gemm's own rounding is the kernel's vector width, 4), interleaved rounds.

    python3 scripts/ld_probe.py --sizes 1224,1232,1240 --aligns 4,32 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from clgemm import device  # noqa: E402
from clgemm.gemm import GemmPlan  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402
from choice_probe import shape  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", required=True, help="N (cube) or MxNxK, comma-separated")
    ap.add_argument("--aligns", default="4,32")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pad", default="no")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    a = ap.parse_args()
    q = device.queue(device.select())
    with open(Path(a.out) / "ld_probe.jsonl", "a") as f:
        for rnd in range(a.rounds):
            for s in a.sizes.split(","):
                m, n, k = shape(s)
                for al in (int(x) for x in a.aligns.split(",")):
                    plan = GemmPlan(q, "5", shape=(m, n, k), pad=a.pad)
                    plan.align = al
                    r = run_gemm(q, m, n, k, plan=plan)
                    r.update(round=rnd, align=al)
                    f.write(json.dumps(r, default=str) + "\n")
                    print(f"{rnd} {s:>14} align={al:<3} padded={r['padded']!s:5} {r['gflops']:7.0f} GFLOPS "
                          f"{r['ms_median']:.4f} ms ok={r['verified']} {r['params']}", flush=True)


if __name__ == "__main__":
    main()
