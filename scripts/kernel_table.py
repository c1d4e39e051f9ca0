"""The kernels table: GEMM kernels at square sizes, each run through `clgemm run --json`
(fresh uniform[-1, 1) data, NaN-poisoned output verified against float64 after the
warm-up launch, profiling-event median of --repeat launches). Writes OUT.json (every
run, the device, the date, the commit and the command) and OUT.md (the table).

    python3 scripts/kernel_table.py --kernels 1-8 --sizes 1024,2048,4096,8192,4000 --out kernels

By default every kernel runs at its registry defaults (the `#ifndef` values of its .cl
file, passed as --param); --params tuned lets `clgemm run` take the tuning database's
entry instead, as gemm() would.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from clgemm import GEMM, store

ROOT = Path(__file__).resolve().parents[1]


def kernel_list(text: str) -> list[str]:
    keys = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        keys += [str(i) for i in range(int(lo), int(hi or lo) + 1)]
    unknown = [k for k in keys if k not in GEMM]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown kernels {unknown} (known: {', '.join(GEMM)})")
    return keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--kernels", type=kernel_list, default="1-8", help="e.g. 1-8 or 3,5 [default: 1-8]")
    ap.add_argument("--sizes", default="1024,2048,4096,8192,4000", help="M = N = K, comma-separated")
    ap.add_argument("--params", choices=("defaults", "tuned"), default="defaults")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--device", help="passed to clgemm run --device")
    ap.add_argument("--out", default="kernels", help="writes OUT.json and OUT.md [default: kernels]")
    a = ap.parse_args()
    kernels = a.kernels
    sizes = [int(s) for s in a.sizes.split(",")]
    rows, info = [], {}
    for key in kernels:
        given = [f"--param={n}={v}" for n, v in GEMM[key].defaults.items()] \
            if a.params == "defaults" else []
        for s in sizes:
            cmd = [sys.executable, "-m", "clgemm", "run", "--kernel", key, "--size", str(s),
                   "--repeat", str(a.repeat), "--json", *given] + (["--device", a.device] if a.device else [])
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode == 0 or p.stdout.strip().startswith("{"):
                r = json.loads(p.stdout)
                info = info or {"device": r["device"], "driver": r["driver"]}
                print(f"kernel {key} {s}^3: {r['gflops']:8.0f} GFLOPS  median {r['ms_median']:.3f} ms  "
                      f"verified={r['verified']} err={r['rel_error']:.1e}", flush=True)
            else:
                r = {"kernel": key, "m": s, "error": (p.stderr.strip().splitlines() or ["?"])[-1]}
                print(f"kernel {key} {s}^3: not run: {r['error']}", flush=True)
            rows.append(r)
    doc = {**info, "date": time.strftime("%Y-%m-%d"), "commit": store.commit(ROOT),
           "command": shlex.join(["python3", "scripts/kernel_table.py", *sys.argv[1:]]),
           "method": "clgemm run --json: profiling-event median of --repeat launches after a "
                     "verified warm-up launch; fresh uniform[-1,1) data; GFLOPS = 2MNK / median",
           "runs": rows}
    Path(a.out + ".json").write_text(json.dumps(doc, indent=1))
    lines = [f"# GEMM kernels on {info.get('device', '?')} (driver {info.get('driver', '?')}), "
             f"{doc['date']}, commit {doc['commit']}", "", f"Command: `{doc['command']}`", "",
             f"Method: {doc['method']}.", "",
             "| kernel | params | " + " | ".join(f"{s}³ GFLOPS" for s in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    for key in kernels:
        rs = {r["m"]: r for r in rows if r["kernel"] == key}
        ran = [r for r in rs.values() if "gflops" in r]
        params = " ".join(f"{n}={v}" for n, v in (ran[0]["params"] if ran else GEMM[key].defaults).items())
        cells = ["–" if "gflops" not in rs[s] else
                 f"{rs[s]['gflops']:.0f}" + ("" if rs[s]["verified"] else " (FAILED)") for s in sizes]
        lines.append(f"| {key} {GEMM[key].name} | {params} | " + " | ".join(cells) + " |")
    Path(a.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
