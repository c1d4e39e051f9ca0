"""Session 8 probe: NVIDIA's OpenCL build options on kernel 5 at its tuned points, against
the shipped build, interleaved rounds, A K-major (the 8192^3 layout without its transpose).
-cl-nv-opt-level sets the front end's optimisation level (3 by default);
-cl-denorms-are-zero changes results for denormal inputs, so it is measured, not shippable.

    python3 scripts/probe_s8.py --sizes 8192,4096 --rounds 2
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from clgemm import build, device, kernels  # noqa: E402
from probe_s6 import arguments, describe_builds, interleaved  # noqa: E402

OPTIONS = {"5n2": ("-cl-nv-opt-level=2",), "5n1": ("-cl-nv-opt-level=1",),
           "5dz": ("-cl-denorms-are-zero",)}
k5 = kernels.get("5")
for key in OPTIONS:
    kernels.GEMM[key] = dataclasses.replace(k5, key=key)
_device_options = build.device_options
build.device_options = lambda ctx, k: _device_options(ctx, k) + OPTIONS.get(k.key, ())
SETS = {"opts": [("5", {})] + [(key, {}) for key in OPTIONS]}


def main() -> None:
    a = arguments(SETS, "opts")
    q = device.queue(device.select())
    out = Path(a.out)
    sizes = [int(s) for s in a.sizes.split(",")]
    describe_builds(q, SETS[a.set], out)
    interleaved(q, sizes, SETS[a.set], a.rounds, out / f"probe-{a.set}.jsonl",
                lambda s: dict(trans_a=True, transposed_by="kernel"),
                lambda s: 60 if s == 8192 else 300)


if __name__ == "__main__":
    main()
