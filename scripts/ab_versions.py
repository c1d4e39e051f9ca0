"""Two (or more) checkouts of clgemm timed against each other, interleaved: each round runs
every version in turn in its own process, at every shape, as `clgemm bench` times a
contender (the device span of one call between markers, verified against float64) and
also back to back (`timing.profile`: launches queued one after another, as the tuner times
them). Prints a table of medians and the last version's ratio to the first.

    python3 scripts/ab_versions.py --versions before=zz_before,after=. --kernel 5 \\
        --shapes 1x4096x4096,256x8192x8192 --rounds 2 --out $OUT/ab.jsonl

A version is a directory holding a `clgemm` package; each process runs with that
directory first on PYTHONPATH and an empty CLGEMM_HOME, so the version's shipped
database decides its parameters.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

RUNNER = """
import json, sys
import numpy as np
from clgemm import bench, device, timing
from clgemm.gemm import GemmPlan, prepare
q = device.queue(device.select(None))
rng = np.random.default_rng()
kernel, repeat = sys.argv[1], int(sys.argv[2])
for s in sys.argv[3:]:
    m, n, k = map(int, s.split("x"))
    p = bench.Problem(q, m, n, k, rng)
    r = bench.run_clgemm(p, kernel, repeat)
    span = r["timing"][0]
    prep = prepare(GemmPlan(q, kernel, shape=p.shape), p.dev_a, p.dev_b, None, 1.0, 0.0)
    b2b = timing.profile(prep.launch, repeat=repeat, warmup=1)
    print(json.dumps({"shape": s, "splits": r["splits"], "params": r["params"],
                      "rel_error": float(r["rel_error"]),
                      "span_ms": span.median if span else None, "b2b_ms": b2b.median}),
          flush=True)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", required=True, help="name=dir,name=dir,...")
    ap.add_argument("--kernel", default="5")
    ap.add_argument("--shapes", required=True, help="MxNxK,...")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--out", help="JSON lines of every run")
    args = ap.parse_args()
    versions = [v.split("=", 1) for v in args.versions.split(",")]
    shapes = args.shapes.split(",")
    runs = []
    for rnd in range(args.rounds):
        for name, where in versions:
            where = str(Path(where).resolve())
            env = dict(os.environ, PYTHONPATH=where + os.pathsep + os.environ.get("PYTHONPATH", ""),
                       CLGEMM_HOME=tempfile.mkdtemp(), PYOPENCL_COMPILER_OUTPUT="0")
            p = subprocess.run([sys.executable, "-c", RUNNER, args.kernel, str(args.repeat), *shapes],
                               cwd=where, env=env, capture_output=True, text=True, timeout=600)
            if p.returncode:
                sys.exit(f"{name} failed:\n{p.stderr[-3000:]}")
            for line in p.stdout.splitlines():
                runs.append({"round": rnd, "version": name, **json.loads(line)})
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in runs))
    summarize(runs, [n for n, _ in versions], shapes)


def summarize(runs: list[dict], names: list[str], shapes: list[str]) -> None:
    ms = defaultdict(lambda: defaultdict(list))
    info = {}
    for r in runs:
        assert r["rel_error"] < 1e-4, r       # a wrong product is never timed as a result
        for how in ("span", "b2b"):
            ms[r["shape"], r["version"]][how].append(r[f"{how}_ms"])
        info[r["shape"], r["version"]] = r["splits"]
    first, last = names[0], names[-1]
    print(f"GFLOPS, medians over rounds (slices); ratio {last}/{first}")
    print(f"{'shape':>16} " + " ".join(f"{n + ' span':>16} {n + ' b2b':>12}" for n in names)
          + "  span x   b2b x")
    ratios = defaultdict(list)
    for s in shapes:
        m, n, k = map(int, s.split("x"))
        gf = {}
        for v in names:
            for how in ("span", "b2b"):
                gf[v, how] = 2.0 * m * n * k / (statistics.median(ms[s, v][how]) * 1e6)
        row = " ".join(f"{gf[v, 'span']:>11.0f} ({info[s, v]:>2}) {gf[v, 'b2b']:>12.0f}" for v in names)
        rs = [gf[last, how] / gf[first, how] for how in ("span", "b2b")]
        for how, x in zip(("span", "b2b"), rs):
            ratios[how].append(x)
        print(f"{s:>16} {row}  x{rs[0]:.3f}  x{rs[1]:.3f}")
    print("geomean: span x{:.3f}, back to back x{:.3f}".format(
        statistics.geometric_mean(ratios["span"]), statistics.geometric_mean(ratios["b2b"])))


if __name__ == "__main__":
    main()
