"""Time two or more versions of clgemm against each other, interleaved, through the CLI.

Each round runs every version in turn, in its own processes, at every shape:
`clgemm bench --against none` gives the device span of one whole call (as the bench
times every contender), and `clgemm run --json` the profiling-event time of launches
queued back to back (as the tuner times them). Every output is verified against float64
by the CLI itself; a version whose product is wrong stops the comparison. Prints the
medians over rounds and the last version's ratio to the first.

A version is a directory holding a `clgemm` package and its `kernels/` (this checkout is
`.`; an older one: `git archive COMMIT clgemm kernels | tar -x -C DIR`). Each runs with
that directory first on PYTHONPATH and an empty CLGEMM_HOME, so its own shipped
database decides its parameters. `--source FILE` adds a version "source": the first
version with the kernel's .cl file replaced by FILE (a probe of a kernel change).

    python3 scripts/ab_versions.py --versions before=DIR,after=. --kernel 5 \\
        --shapes 1x4096x4096,256x8192x8192 --rounds 2 --out ab.jsonl
    python3 scripts/ab_versions.py --versions tree=. --source probe.cl --kernel 7 \\
        --shapes 4096x4096x4096,8192x8192x8192
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from clgemm import GEMM, entries
from plans_versions import versions as parse_versions   # (scripts/ comes first on the path)


def kernel_file(key: str) -> str:
    for k in GEMM.values():
        if key in (k.key, k.name):
            return k.source
    raise SystemExit(f"no GEMM kernel {key!r} (known: {', '.join(GEMM)})")


def with_source(base: Path, kernel: str, source: Path) -> Path:
    """A copy of version `base` (its clgemm/ and kernels/) with the kernel's file replaced."""
    where = Path(tempfile.mkdtemp(prefix="clgemm-source-"))
    shutil.copytree(base / "clgemm", where / "clgemm",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(base / "kernels", where / "kernels")
    shutil.copyfile(source, where / "kernels" / kernel_file(kernel))
    return where


def cli(where: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(where) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               CLGEMM_HOME=tempfile.mkdtemp(prefix="clgemm-home-"), PYOPENCL_COMPILER_OUTPUT="0")
    return subprocess.run([sys.executable, "-m", "clgemm", *args], cwd=where, env=env,
                          capture_output=True, text=True, timeout=900)


def measure(name: str, where: Path, kernel: str, shapes: list[str], repeat: int,
            device: str | None) -> list[dict]:
    dev = ["--device", device] if device else []
    out = tempfile.mkdtemp(prefix="clgemm-ab-")
    p = cli(where, "bench", "--kernels", kernel, "--shapes", ",".join(shapes), "--against", "none",
            "--repeat", str(repeat), "--out", out, *dev)
    files = glob.glob(f"{out}/*/bench-*.json")
    if p.returncode or not files:
        sys.exit(f"{name}: clgemm bench failed:\n{p.stderr[-3000:]}")
    rows = {f"{r['m']}x{r['n']}x{r['k']}": r for r in json.loads(Path(files[0]).read_text())["rows"]
            if r["contender"].startswith("clgemm-")}
    runs = []
    for s in shapes:
        m, n, k = s.split("x")
        q = cli(where, "run", "--kernel", kernel, "--m", m, "--n", n, "--k", k,
                "--repeat", str(repeat), "--json", *dev)
        if q.returncode:
            sys.exit(f"{name}: clgemm run {s} failed:\n{q.stderr[-3000:]}{q.stdout[-1000:]}")
        r, b = json.loads(q.stdout), rows.get(s)
        if b is None or not b.get("verified") or not r.get("verified"):
            sys.exit(f"{name}: {s} was not verified against float64; nothing is compared")
        runs.append({"shape": s, "splits": r["splits"], "params": r["params"],
                     "rel_error": r["rel_error"], "span_ms": b["ms_median"],
                     "b2b_ms": r["ms_median"]})
    return runs


def summarize(runs: list[dict], names: list[str], shapes: list[str]) -> None:
    ms = defaultdict(lambda: defaultdict(list))
    info = {}
    for r in runs:
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
        gf = {(v, how): 2.0 * m * n * k / (statistics.median(ms[s, v][how]) * 1e6)
              for v in names for how in ("span", "b2b")}
        row = " ".join(f"{gf[v, 'span']:>11.0f} ({info[s, v]:>2}) {gf[v, 'b2b']:>12.0f}" for v in names)
        rs = [gf[last, how] / gf[first, how] for how in ("span", "b2b")]
        for how, x in zip(("span", "b2b"), rs):
            ratios[how].append(x)
        print(f"{s:>16} {row}  x{rs[0]:.3f}  x{rs[1]:.3f}")
    print("geomean: span x{:.3f}, back to back x{:.3f}".format(
        statistics.geometric_mean(ratios["span"]), statistics.geometric_mean(ratios["b2b"])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--versions", default="tree=.", help="NAME=DIR,NAME=DIR,... [default: tree=.]",
                    type=functools.partial(parse_versions, holds=("clgemm/", "kernels/"), least=1))
    ap.add_argument("--source", type=Path, help="add a version: the first one with --kernel's "
                                                ".cl file replaced by this file")
    ap.add_argument("--kernel", default="5", help="GEMM kernel number or name [default: 5]")
    ap.add_argument("--shapes", required=True, help="MxNxK,...")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10, help="timed calls per measurement")
    ap.add_argument("--device", help="passed to the CLI's --device")
    ap.add_argument("--out", help="write every run here as JSON lines")
    args = ap.parse_args()
    try:
        args.shapes = ["x".join(map(str, dims)) for dims in entries.shape_list(args.shapes)]
    except ValueError as e:
        ap.error(f"--shapes: {e}")
    versions = args.versions
    if args.source:
        versions.append(("source", with_source(versions[0][1], args.kernel, args.source.resolve())))
    if len(versions) < 2:
        ap.error("compare at least two versions (--versions A=DIR,B=DIR, or one and --source)")
    runs = []
    for rnd in range(args.rounds):
        for name, where in versions:
            for r in measure(name, where, args.kernel, args.shapes, args.repeat, args.device):
                runs.append({"round": rnd, "version": name, **r})
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in runs))
    summarize(runs, [n for n, _ in versions], args.shapes)


if __name__ == "__main__":
    main()
