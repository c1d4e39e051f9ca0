"""Clock and power of each timed run of a probe: the nvidia-smi samples (taken every 50 ms
beside it) in the last ~2 s of each run's window, as medians, with the throttled samples
counted and energy per FLOP.

    python3 scripts/smi_windows.py PROBE.jsonl SMI.csv [--json OUT]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics


def samples(path: str) -> list[tuple[float, float, float, str]]:
    out = []
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
            out.append((t.timestamp(), float(f[1].split()[0]), float(f[2].split()[0]), f[3]))
        except (ValueError, IndexError):
            continue   # header or a cut-off last line
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("probe")
    ap.add_argument("smi")
    ap.add_argument("--json")
    a = ap.parse_args()
    smi = samples(a.smi)
    rows = []
    for line in open(a.probe):
        r = json.loads(line)
        w = [s for s in smi if r["t1"] - 2.0 <= s[0] <= r["t1"] - 0.2]   # the timed launches
        if not w:
            continue
        watts = statistics.median(s[2] for s in w)
        rows.append(dict(round=r["round"], m=r["m"], kernel=r["kernel"], probe=r["probe"],
                         gflops=round(r["gflops"]), verified=r["verified"], samples=len(w),
                         mhz=statistics.median(s[1] for s in w), watts=round(watts, 1),
                         throttled=sum(int(s[3], 16) != 0 for s in w),
                         pj_per_flop=round(watts / r["gflops"] * 1000, 2)))
        print(" ".join(f"{k}={v}" for k, v in rows[-1].items()))
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
