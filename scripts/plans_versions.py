#!/usr/bin/env python3
"""Whole calls of scripts/plans.py's variants in two or more versions of clgemm, in turn.

A launch decision (a heuristics rule, a kernel's build) is measured as users meet it by
timing gemm()'s own choices with the package before the change and after it, each in
processes of its own, alternating, beside cuBLAS's call:

    python3 scripts/plans_versions.py --versions before=DIR,after=. --runs 2 \\
        -- --shapes 767x767x767,1151x1151x1151 --variant gemm: --rounds 2

A version is a directory holding clgemm/, kernels/ and scripts/ (an older commit: `git
archive COMMIT clgemm kernels scripts | tar -x -C DIR`); its own scripts/plans.py runs
with DIR first on PYTHONPATH and an empty CLGEMM_HOME, so that its own shipped database
and rules decide. Each run times every version once, in the order given; the arguments
after -- go to plans.py. Prints, for each shape and variant, each version's median over
the runs, the last version's speed over the first's, both against cuBLAS's call (its
median over every run), and the slices of k each version took; --out writes the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def versions(text: str, holds: tuple[str, ...] = ("clgemm/", "kernels/", "scripts/plans.py"),
             least: int = 2) -> list[tuple[str, Path]]:
    """NAME=DIR,... (an argparse type, also for scripts/ab_versions.py and
    changed_choices.py): each DIR a version of the package holding `holds` (folders end in
    /), at least `least` of them, with distinct names. A DIR without its own clgemm/ would
    run the installed package instead: another version timed as this one, with no word."""
    out = []
    for item in text.split(","):
        name, eq, path = item.partition("=")
        where = Path(path).resolve()
        if not eq or not name or not all(
                (where / h).is_dir() if h.endswith("/") else (where / h).is_file() for h in holds):
            tops = " ".join(dict.fromkeys(h.split("/")[0] for h in holds))
            listed = ", ".join(holds[:-1]) + " and " + holds[-1] if len(holds) > 1 else holds[0]
            raise argparse.ArgumentTypeError(
                f"{item!r}: a version is NAME=DIR, DIR holding {listed} (an older commit: "
                f"git archive COMMIT {tops} | tar -x -C DIR)")
        out.append((name, where))
    if len(out) < least or len({n for n, _ in out}) < len(out):
        raise argparse.ArgumentTypeError(
            f"give {'two' if least == 2 else least} or more versions with distinct names")
    return out


def run_plans(name: str, where: Path, args: list[str], out: Path) -> list[dict]:
    env = dict(os.environ, PYOPENCL_COMPILER_OUTPUT="0",
               CLGEMM_HOME=tempfile.mkdtemp(prefix="clgemm-home-"),
               PYTHONPATH=str(where) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, str(where / "scripts" / "plans.py"), "--json", str(out),
                        *args], env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode or not out.is_file():
        sys.exit(f"{name}: scripts/plans.py failed:\n{p.stderr[-3000:]}{p.stdout[-1000:]}")
    rows = json.loads(out.read_text())["rows"]
    failed = [r for r in rows if r.get("status") == "failed"]
    if failed:
        sys.exit(f"{name}: {len(failed)} variant(s) failed, first: {failed[0]['m']}x"
                 f"{failed[0]['n']}x{failed[0]['k']} {failed[0]['variant']}: "
                 f"{failed[0].get('reason')}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--versions", type=versions, required=True, help="NAME=DIR,NAME=DIR,...")
    ap.add_argument("--runs", type=int, default=2, help="rounds of every version in turn")
    ap.add_argument("--out", type=Path, help="write the rows (JSON) here")
    ap.add_argument("plans_args", nargs=argparse.REMAINDER, help="-- then plans.py's arguments")
    args = ap.parse_args()
    rest = args.plans_args[1:] if args.plans_args[:1] == ["--"] else args.plans_args
    if not rest or args.runs < 1:
        ap.error("give --runs >= 1 and, after --, scripts/plans.py's --shapes and --variant")
    work = Path(tempfile.mkdtemp(prefix="clgemm-plans-versions-"))
    rows = []
    for r in range(args.runs):
        for name, where in args.versions:
            for row in run_plans(name, where, rest, work / f"{name}-{r}.json"):
                rows.append(dict(row, version=name, run=r))
    names = [n for n, _ in args.versions]
    table: dict[tuple, dict[str, list]] = {}
    for row in rows:
        if "call_ms_median" in row:
            key = (f"{row['m']}x{row['n']}x{row['k']}", row["variant"])
            table.setdefault(key, {}).setdefault(row["version"], []).append(row)
    first, last = names[0], names[-1]
    print(f"whole calls, ms: median over {args.runs} run(s) of each version's median; x cuBLAS: "
          f"cuBLAS's call over ours; slices: {' / '.join(names)}")
    print(f"{'shape':<18} {'variant':<10} " + " ".join(f"{n:>10}" for n in names)
          + f" {last + ' x ' + first:>16} {'x cuBLAS':>17} {'slices':>8}")
    for (shape, variant), by in table.items():
        if variant == "cublas":
            continue
        cub = [x["call_ms_median"] for v in table.get((shape, "cublas"), {}).values() for x in v]
        ms = {n: statistics.median(x["call_ms_median"] for x in by[n]) for n in names if n in by}
        slices = "/".join(str((by[n][0].get("plan") or {}).get("splits", "-")) for n in names
                          if n in by)
        ratio = ms[first] / ms[last] if first in ms and last in ms else float("nan")
        vs = (" / ".join(f"{statistics.median(cub) / ms[n]:.3f}" for n in (first, last) if n in ms)
              if cub else "-")
        print(f"{shape:<18} {variant:<10} " + " ".join(f"{ms.get(n, float('nan')):10.4f}"
                                                      for n in names)
              + f" {ratio:16.3f} {vs:>17} {slices:>8}")
    if args.out:
        args.out.write_text(json.dumps({"command": " ".join(sys.argv), "versions": {
            n: str(w) for n, w in args.versions}, "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
