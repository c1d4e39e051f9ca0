"""gemm()'s choices at untuned shapes before and after session 8, interleaved on one device:
"before" takes the nearest entry of the old database (--old-db) and the old padding rule
(M*N*K >= 2^31, at most 15% more work), or with --nearest the current database's nearest
entry and padding rule (what the wave prediction alone adds); "after" is GemmPlan as it
stands (entries near the shape predicted by their waves, padding also asking for depth
and width).

    python3 scripts/choice_probe.py --old-db results/h200/session8/db-before.json --shapes 2100,1300x4000x1300
    python3 scripts/choice_probe.py --nearest --shapes 2100

With --db FILE, "before" is GemmPlan's own choice (the same rules) with FILE as the
shipped database, which shows what new entries in the shipped one change (session 9).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clgemm import db, device, kernels  # noqa: E402
from clgemm.gemm import GemmPlan  # noqa: E402
from clgemm.run import run_gemm  # noqa: E402


def shape(s: str) -> tuple[int, int, int]:
    """N (a cube) or MxNxK; the session 8 probe scripts share it."""
    dims = db.parse_shape(s if "x" in s else "x".join([s] * 3))
    if dims is None:
        raise SystemExit(f"{s!r} is not N or MxNxK")
    return dims


def before(old: dict, m: int, n: int, k: int) -> tuple[dict, str]:
    k5 = kernels.get("5")
    near = min(old["entries"]["5"].items(),
               key=lambda se: (db.distance(shape(se[0]), (m, n, k)), -se[1]["gflops"]))
    p = k5.resolve(near[1]["params"])
    mp, np_, kp = k5.whole_tiles(p, m, n, k)
    pads = (mp, np_, kp) != (m, n, k) and m * n * k >= 2**31 and mp * np_ * kp <= 1.15 * m * n * k
    return p, "yes" if pads else "no"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old-db", help="before: this database's nearest entry, the old padding rule")
    ap.add_argument("--nearest", action="store_true",
                    help="before: the current database's nearest entry, the current padding rule")
    ap.add_argument("--db", help="before: GemmPlan's choice with this file as the shipped database")
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    a = ap.parse_args()
    q = device.queue(device.select())
    if (bool(a.old_db) + a.nearest + bool(a.db)) != 1:
        ap.error("give one of --old-db, --nearest, --db")
    old = json.loads(Path(a.old_db).read_text()) if a.old_db else None
    rows = []
    for rnd in range(a.rounds):
        for s in a.shapes.split(","):
            m, n, k = shape(s)
            if old:
                p_old, pad_old = before(old, m, n, k)
            elif a.db:
                shipped, db._shipped = db._shipped, lambda: [Path(a.db)]
                p_old, pad_old = GemmPlan(q, "5", shape=(m, n, k)).params, "auto"
                db._shipped = shipped
            else:
                p_old, pad_old = db.lookup(q.device, "5", m, n, k)[1], "auto"
            new = GemmPlan(q, "5", shape=(m, n, k))
            for which, kw in (("before", dict(kernel="5", params=p_old, pad=pad_old)), ("after", dict(plan=new))):
                r = run_gemm(q, m, n, k, **kw)
                r.update(round=rnd, which=which, shape=s)
                rows.append(r)
                print(f"{rnd} {s:>16} {which:6} padded={r['padded']!s:5} splits={r['splits']} "
                      f"{r['gflops']:7.0f} GFLOPS ok={r['verified']} {r['params']}", flush=True)
    (Path(a.out) / "choice_probe.json").write_text(json.dumps(rows, default=str))
    print("\nshape: before / after GFLOPS (median of rounds)")
    ratios = []
    for s in a.shapes.split(","):
        g = {w: statistics.median(r["gflops"] for r in rows if r["shape"] == s and r["which"] == w)
             for w in ("before", "after")}
        ratios.append(g["after"] / g["before"])
        print(f"{s:>16}: {g['before']:7.0f} / {g['after']:7.0f}  x{ratios[-1]:.2f}")
    print(f"geometric mean x{statistics.geometric_mean(ratios):.3f}, min x{min(ratios):.2f}, max x{max(ratios):.2f}")


if __name__ == "__main__":
    main()
