"""Tune a kernel at several shapes into a scratch database (`clgemm tune`, in a process of
its own with an empty CLGEMM_HOME), then put each winner into the shipped database of
this device (clgemm/tuned/<device>.json) with a note giving its provenance: the date,
the exact command and the commit of the code it was tuned with.

    python3 scripts/tune_into_shipped.py --kernel 7 --shapes 8192x8192x8192,4096x4096x4096 \
        --budget 60 --out $OUT

The commit is --commit, else $CLGEMM_COMMIT, else `git rev-parse --short HEAD` of this
checkout (with "+changes" when the tree differs from it): clgemm.store.commit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clgemm import db, entries, store

ROOT = Path(__file__).resolve().parents[1]


def positive(text: str) -> int:
    """An integer >= 1; argparse names a bad one."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return int(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--kernel", required=True,
                    help="GEMM kernel number (1-8), or matvec-sweep or matvec-dot")
    ap.add_argument("--shapes", required=True, help="MxNxK,...")
    ap.add_argument("--budget", type=positive, default=100, help="evaluations per shape")
    ap.add_argument("--timeout", type=positive, default=150, help="seconds per tune")
    ap.add_argument("--workers", type=positive, default=8, help="compiling worker processes")
    ap.add_argument("--commit", default=None,
                    help="the commit the code was at [default: from git, else 'unknown']")
    ap.add_argument("--shipped", default=str(ROOT / "clgemm/tuned/nvidia-h200.json"),
                    help="the database to update [default: clgemm/tuned/nvidia-h200.json]")
    ap.add_argument("--home", default=None,
                    help="the CLGEMM_HOME the tunes write their database into, kept for a later "
                         "run to use [default: a fresh temporary folder]")
    ap.add_argument("--out", default=None,
                    help="also write each tune's JSON report and the updated database here")
    a = ap.parse_args()
    try:
        a.shapes = entries.shape_list(a.shapes)
    except ValueError as e:
        ap.error(f"--shapes: {e}")
    commit = a.commit or store.commit(ROOT)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)    # before the first tune, not after it
    home = a.home or tempfile.mkdtemp(prefix="clgemm-tune-")
    Path(home).mkdir(parents=True, exist_ok=True)
    try:
        shipped = json.loads(Path(a.shipped).read_text())
    except (OSError, ValueError) as e:
        ap.error(f"--shipped {a.shipped}: cannot read a database from it ({e})")
    for m, n, k in (map(str, dims) for dims in a.shapes):
        shape = f"{m}x{n}x{k}"
        cmd = [sys.executable, "-m", "clgemm", "tune", "--kernel", a.kernel, "--m", m, "--n", n,
               "--k", k, "--budget", str(a.budget), "--workers", str(a.workers), "--json"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout,
                               env=dict(os.environ, CLGEMM_HOME=home), cwd=ROOT)
        except subprocess.TimeoutExpired:
            print(f"tune {shape}: over {a.timeout} s, not shipped", flush=True)
            continue
        if p.returncode != 0:
            print(f"tune {shape}: failed: {p.stderr.strip()[-500:]}", flush=True)
            continue
        report = json.loads(p.stdout)
        if a.out:
            Path(a.out, f"tune-{shape}.json").write_text(p.stdout)
        best = report["best"]
        print(f"tune {shape}: {round(report['seconds'])} s, {best['params']} splits "
              f"{best.get('splits')} {round(best['gflops'])} GFLOPS", flush=True)
        for f in report["finalists"]:
            print("  finalist", round(f["gflops"]), f["params"], flush=True)
        tuned = json.loads(Path(report["database"]).read_text())   # the tuned device's file
        if db.device_name(tuned["device"]) != db.device_name(shipped.get("device", "")):
            # a winner on another device (an H100 for the H200's file) is not this file's fact
            print(f"tune {shape}: tuned on {tuned['device']!r}, but {a.shipped} is the "
                  f"database of {shipped.get('device')!r}: not shipped", flush=True)
            continue
        entry = tuned["entries"][a.kernel][shape]
        entry["note"] = (f"{time.strftime('%Y-%m-%d')}: `clgemm tune --kernel {a.kernel} --m {m} "
                         f"--n {n} --k {k} --budget {a.budget} --workers {a.workers}` at commit {commit}")
        shipped["entries"].setdefault(a.kernel, {})[shape] = entry
        # written after each winner, so that a job stopped mid-way keeps the tunes it made
        text = json.dumps(shipped, indent=1, sort_keys=True)
        Path(a.shipped).write_text(text)
        if a.out:
            Path(a.out, Path(a.shipped).name).write_text(text)


if __name__ == "__main__":
    main()
