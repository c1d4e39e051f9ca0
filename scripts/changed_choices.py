#!/usr/bin/env python3
"""The shapes at which two versions of clgemm launch kernel 5 differently, without a GPU.

A rule that chooses among tuned entries (heuristics.choose_entry and its thresholds) or a
build (reads_floats, loads) changes some shapes' launches and leaves the rest alone: the A/B run
on a GPU need only time the shapes that change. This asks each version, in a process of
its own with that version first on PYTHONPATH, which entry of a device's shipped
database it takes at each shape, in how many slices of k, whether it reads unaligned
rows in place, which build of the tile loads it takes (over k padded to whole tiles
where it has heuristics.pads_depth) and, where it has heuristics.peel, the rows and
columns of C it launches in whole tiles apart from the rest, for a device of
--compute-units units, then prints
the shapes whose answer differs (and a comma-separated list for scripts/plans_versions.py
--shapes); with --launches, only those whose launch differs, not those that take another
entry of the same parameters (1360^3's and 2240^3's entries are both 64x128x16 with 16x4):

    python3 scripts/changed_choices.py --versions before=DIR,after=. --random 400 \\
        --seed 20261206

--random N draws N shapes with m and n log-uniform in [500, 7943] and k in [63, 7943],
keeping those of at most 2^36 multiply-adds (the draw behind
results/h100/raw/plans-versions-latency-random-2026-12-06.txt: 391 shapes, 62 changed);
--sizes LO:HI, --depths LO:HI and --max-volume widen it (the whole range a user may bring:
--sizes 16:8192 --depths 16:8192 --max-volume 0), and --pick N prints, last, N of the
changed shapes chosen at random with the same seed: the shapes a GPU run can afford,
unbiased among those that change:

    python3 scripts/changed_choices.py --versions before=DIR,after=. --random 2000 \
        --sizes 16:8192 --depths 16:8192 --max-volume 0 --seed 20261212 --pick 40

A version is a directory holding clgemm/ (`git archive COMMIT clgemm kernels scripts`).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

from clgemm import entries
from plans_versions import versions   # (scripts/ comes first on the path)

# run inside each version: its own heuristics, database helpers and shipped file
_ASK = r"""
import inspect, json, math, sys
from clgemm import db, heuristics as H, kernels, operands
from clgemm.thresholds import DEFAULTS, Facts
doc = json.load(open(sys.argv[1]))
f = Facts(int(sys.argv[2]), thresholds={**DEFAULTS, **doc.get("thresholds", {})})
k5 = kernels.get("5")
every = []
for key, e in doc["entries"]["5"].items():
    e = dict(e, shape=tuple(map(int, key.split("x"))))
    every.append(("5", e))
out = {}
for text in sys.argv[3].split(","):
    s = tuple(map(int, text.split("x")))
    ranked = sorted(every, key=lambda ke: (round(db.distance(ke[1]["shape"], s), 6),
                                           -ke[1]["gflops"]))
    _, e = H.choose_entry(ranked, "5", s, f)
    p, width = e["params"], e["params"].get("WIDTH", 1)
    at = H.launched(k5, p, s, f)
    copied = (s[2] % width != 0, s[1] % width != 0)    # row-major A (rows of k), B (of n)
    floats = any(copied) and H.reads_floats(k5, p, s, f, "auto", copied)
    # the entry's resident groups and the build, where this version's splits() takes them
    more = ({"residents": e.get("resident"), "floats": bool(floats)}
            if "residents" in inspect.signature(H.splits).parameters else {})
    slices = H.splits(k5, p, at, f, tuned=H.entry_split(e), **more)
    # C's edges apart (heuristics.peel), where this version has the rule
    cut = (H.peel(k5, p, s, f, e.get("resident"), H.entry_split(e))
           if hasattr(H, "peel") and not floats else None)
    slices = 1 if cut else slices                       # a peeled launch's main is unsplit
    # copies padded along k alone (heuristics.pads_depth), where this version has the rule
    deep = (hasattr(H, "pads_depth") and at == s
            and H.pads_depth(k5, p, s, f, floats=bool(floats), copied=copied, slices=slices))
    point = " ".join(f"{k}={v}" for k, v in sorted(p.items()))
    # the tile loads' build (heuristics.loads) of the launch, over the padded depth
    depth = k5.whole_tiles(p, *s)[2] if deep else at[2]
    build = H.loads(k5, p, (*at[:2], depth), bool(floats))
    # C's rows staged (heuristics.stages_c) for a dense C of n floats a row, where this
    # version has the rule (the build's resident groups, also asked, need the compiler)
    rows = (hasattr(H, "stages_c") and slices == 1 and not cut and s[1] % width != 0
            and H.stages_c(k5, p, (*at[:2], depth), f))
    out[text] = (["x".join(map(str, e["shape"])), slices, bool(floats), point, build]
                 + ([list(cut)] if cut else []) + (["k padded"] if deep else [])
                 + (["C rows"] if rows else []))
print(json.dumps(out))
"""


SIZES, DEPTHS = (2.7, 3.9), (1.8, 3.9)      # log10 bounds of the draw of 2026-12-06


def draw(count: int, seed: int, sizes: tuple[float, float] = SIZES,
         depths: tuple[float, float] = DEPTHS,
         max_volume: int = 2 ** 36) -> list[tuple[int, int, int]]:
    """`count` shapes, m and n log-uniform between 10^sizes, k between 10^depths, those of
    at most `max_volume` multiply-adds (0: all) kept, each once."""
    rng = random.Random(seed)
    shapes = set()
    for _ in range(count):
        m, n = (round(10 ** rng.uniform(*sizes)) for _ in range(2))
        k = round(10 ** rng.uniform(*depths))
        if not max_volume or m * n * k <= max_volume:
            shapes.add((m, n, k))
    return sorted(shapes)


def log_range(text: str) -> tuple[float, float]:
    """LO:HI (whole numbers, 1 <= LO <= HI) as log10 bounds, for argparse."""
    try:
        lo, hi = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not LO:HI (two whole numbers)") from None
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError(f"'{text}': LO:HI needs 1 <= LO <= HI")
    return math.log10(lo), math.log10(hi)


def ask(where: Path, database: Path, units: int, shapes: str) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{where}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run = subprocess.run([sys.executable, "-c", _ASK, str(database), str(units), shapes],
                         env=env, capture_output=True, text=True, cwd=where)
    if run.returncode:
        sys.exit(f"{where}: {run.stderr.strip().splitlines()[-1] if run.stderr else 'failed'}")
    return json.loads(run.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--versions", required=True, help="NAME=DIR,NAME=DIR (two)",
                    type=functools.partial(versions, holds=("clgemm/",)))
    ap.add_argument("--shapes", help="MxNxK,...")
    ap.add_argument("--random", type=int, default=0, help="draw this many shapes")
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--sizes", type=log_range, default=SIZES, metavar="LO:HI",
                    help="m and n of the draw (default 501:7943)")
    ap.add_argument("--depths", type=log_range, default=DEPTHS, metavar="LO:HI",
                    help="k of the draw (default 63:7943)")
    ap.add_argument("--max-volume", type=int, default=2 ** 36,
                    help="drawn shapes of more multiply-adds are left out (0: none is)")
    ap.add_argument("--pick", type=int, default=0,
                    help="print last this many of the changed shapes, chosen at random")
    ap.add_argument("--database", default="clgemm/tuned/nvidia-h200.json",
                    help="the shipped file whose entries both versions choose from, as a "
                         "path inside each version")
    ap.add_argument("--compute-units", type=int, default=132)
    ap.add_argument("--launches", action="store_true",
                    help="count a shape as changed only where its launch differs (the "
                         "parameters, slices, float build, peel), not where another entry "
                         "with the same parameters is taken")
    args = ap.parse_args()
    if len(args.versions) != 2:
        ap.error("--versions takes two NAME=DIR items")
    if args.max_volume < 0 or args.pick < 0:
        ap.error("--max-volume and --pick take 0 or more")
    shapes = ["x".join(map(str, s))
              for s in draw(args.random, args.seed, args.sizes, args.depths, args.max_volume)]
    try:
        given = entries.shape_list(args.shapes) if args.shapes else []
    except ValueError as e:
        ap.error(f"--shapes: {e}")
    shapes += ["x".join(map(str, s)) for s in given if "x".join(map(str, s)) not in shapes]
    if not shapes:
        ap.error("give --shapes or --random N")
    answers = []
    for _, root in args.versions:
        answers.append(ask(root, root / args.database, args.compute_units, ",".join(shapes)))
    first = 1 if args.launches else 0        # the entry's tuned shape counts, or not
    changed = [s for s in shapes if answers[0][s][first:] != answers[1][s][first:]]
    (a, _), (b, _) = args.versions
    what = "" if args.launches else "entry's tuned shape, "
    print(f"{len(changed)} of {len(shapes)} shapes change ({what}slices, read in place, "
          f"parameters, build): {a} -> {b}")
    for s in changed:
        print(f"  {s:<18} {json.dumps(answers[0][s])} -> {json.dumps(answers[1][s])}")
    print(",".join(changed))
    if args.pick:
        picked = random.Random(args.seed).sample(changed, min(args.pick, len(changed)))
        print(f"{len(picked)} of them at random (--pick {args.pick}, --seed {args.seed}):")
        print(",".join(picked))


if __name__ == "__main__":
    main()
