"""Which configuration GemmPlan picks on the H200 at given shapes, worked out on any machine:
a stand-in device with the H200's 132 compute units and limits, and the shipped database
(session 8 had no device time left to measure the last change of GemmPlan.wave_steps; its
picks are then looked up among the configurations call 8 measured).

    python3 scripts/choice_replay.py 1100,2100,3000x1000x3000
"""

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import db  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the H200 as GemmPlan sees it: compute units, limits, and an NVIDIA compute capability
H200 = SimpleNamespace(max_compute_units=132, local_mem_size=49152, max_work_group_size=1024,
                       max_work_item_sizes=[1024, 1024, 64], name="NVIDIA H200", type=4,
                       extensions="cl_nv_device_attribute_query",
                       compute_capability_major_nv=9, compute_capability_minor_nv=0)


def main() -> None:
    gemm_mod = importlib.import_module("clgemm.gemm")
    doc = json.loads((ROOT / "clgemm/tuned/nvidia-h200.json").read_text())
    entries = {key: {s: dict(e, shape=db.parse_shape(s)) for s, e in shapes.items()}
               for key, shapes in doc["entries"].items()}
    db.entries_for = lambda dev: entries
    queue = SimpleNamespace(device=H200, context=None)
    for s in sys.argv[1].split(","):
        m, n, k = db.parse_shape(s if "x" in s else "x".join([s] * 3))
        params = gemm_mod._tuned(queue, "5", (m, n, k))[1]["params"]
        near = db.near(H200, "5", m, n, k)[0][1]
        tuned_at = [sh for sh, e in entries["5"].items() if e["params"] == params]
        print(f"{s} nearest {db.shape_key(*near['shape'])} pick {params} (tuned at "
              f"{', '.join(tuned_at[:2])}){' switched' if params != near['params'] else ''}")


if __name__ == "__main__":
    main()
