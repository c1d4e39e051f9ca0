#!/usr/bin/env python3
"""Shapes to tune so that a database's entries lie nearer the shapes users bring.

gemm() launches the tuned entry nearest a shape (db.distance: the sum of |log| of the
dimensions' ratios, then heuristics.choose_entry among those near it). Where every entry
is far, it runs a configuration tuned for another kind of product: on an H100 at 7ae3210,
20 drawn shapes ran at 0.53-1.11x cuBLAS's call, the deep and narrow losses (0.53-0.70x)
2.3-4.2 from their nearest entry (results/h100/README.md, "Odd shapes at 7ae3210"). This draws a sample of
shapes (m and n log-uniform in [10^2, 10^3.9], k in [10^1.2, 10^3.9], as that draw was,
kept between --min-volume and --max-volume multiply-adds) and picks, one at a time,
the shape of a grid (powers of two) whose entry would most lower the sample's mean
distance to its nearest entry, without looking at any measured shape:

    python3 scripts/cover_shapes.py --count 14 --seed 7 --min-volume 268435456

The database's entries counted are those gemm() takes with no kernel named (GEMM
kernels that are not opt-in). Prints the picks in order with the mean distance after
each, then a space-separated list for `bash scripts/gpu_job.sh tune-and-ship 5 ...`.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from clgemm import db, entries, kernels

ROOT = Path(__file__).resolve().parents[1]
Shape = tuple[int, int, int]


def sample(count: int, seed: int, low: float, high: float) -> list[Shape]:
    """`count` shapes of the draw, kept between `low` and `high` multiply-adds (a range
    too narrow for the draw to land in, within 1000 tries a shape, is a ValueError)."""
    rng = random.Random(seed)
    shapes: list[Shape] = []
    for _ in range(1000 * count):
        if len(shapes) == count:
            break
        m, n = (round(10 ** rng.uniform(2, 3.9)) for _ in range(2))
        k = round(10 ** rng.uniform(1.2, 3.9))
        if low <= m * n * k <= high:
            shapes.append((m, n, k))
    if len(shapes) < count:
        raise ValueError(f"{len(shapes)} of {count} drawn shapes fell between {low:g} and "
                         f"{high:g} multiply-adds in {1000 * count} tries: widen the range")
    return shapes


def grid(low: float, high: float) -> list[Shape]:
    """Candidate shapes: m, n from 128 to 4096 and k from 32 to 8192, powers of two."""
    sides = [2 ** e for e in range(7, 13)]
    depths = [2 ** e for e in range(5, 14)]
    return [(m, n, k) for m in sides for n in sides for k in depths if low <= m * n * k <= high]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--database", default=str(ROOT / "clgemm/tuned/nvidia-h200.json"))
    ap.add_argument("--count", type=int, default=10, help="shapes to pick")
    ap.add_argument("--sample", type=int, default=3000, help="shapes drawn")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--min-volume", type=float, default=2.0 ** 28,
                    help="least multiply-adds of a drawn shape (below, the call's fixed "
                         "cost weighs more than the entry)")
    ap.add_argument("--max-volume", type=float, default=2.0 ** 35)
    a = ap.parse_args()
    if a.count < 1 or a.sample < 1 or not 0 < a.min_volume <= a.max_volume:
        ap.error("--count and --sample must be >= 1, and 0 < --min-volume <= --max-volume")
    try:
        doc = json.loads(Path(a.database).read_text())
        tuned = doc["entries"]
        usable = [key for key in tuned if key in kernels.GEMM and not kernels.get(key).opt_in]
        have = {shape for key in usable if tuned[key]
                for shape in entries.shape_list(",".join(tuned[key]))}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        ap.error(f"--database {a.database}: not a tuning database with MxNxK entries "
                 f"({type(e).__name__}: {e})")
    if not have:
        ap.error(f"{a.database}: no entries of a GEMM kernel gemm() takes unnamed")
    try:
        drawn = sample(a.sample, a.seed, a.min_volume, a.max_volume)
    except ValueError as e:
        ap.error(f"--min-volume/--max-volume: {e}")
    nearest = [min(db.distance(s, e) for e in have) for s in drawn]
    print(f"{len(have)} entries; mean distance of {len(drawn)} drawn shapes to the "
          f"nearest: {sum(nearest) / len(nearest):.3f}")
    picks = []
    # each candidate's distance to each drawn shape, once: the picks only take minima
    far = {g: [db.distance(s, g) for s in drawn]
           for g in grid(a.min_volume, a.max_volume) if g not in have}
    for _ in range(min(a.count, len(far))):
        best = min(far, key=lambda g: sum(map(min, nearest, far[g])))
        nearest = list(map(min, nearest, far.pop(best)))
        picks.append(best)
        print(f"  {'x'.join(map(str, best)):<16} mean distance {sum(nearest) / len(nearest):.3f}")
    print(" ".join("x".join(map(str, p)) for p in picks))


if __name__ == "__main__":
    main()
