"""Instruction mix of the hottest loop of a SASS listing (cuobjdump --dump-sass): the
longest backward branch's body, by opcode, with the operands tagged .reuse.

    python3 scripts/sass_loop.py FILE.sass [FILE.sass ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import re

INS = re.compile(r"\s+/\*([0-9a-f]{4,6})\*/\s+(.*?);")
BRA = re.compile(r"BRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))")


def loop_mix(text: str) -> dict:
    # addresses restart at 0 in each function of a listing, so loops are found per function
    loops = []
    for part in re.split(r"\n\s*Function : \S+", text):
        ins = [(int(m.group(1), 16), m.group(2).strip()) for m in map(INS.match, part.splitlines()) if m]
        back = [(int(b.group(1), 16), a) for a, t in ins if (b := BRA.search(t)) and b.group(1)
                and int(b.group(1), 16) < a]
        loops += [(lo, hi, ins) for lo, hi in back]
    lo, hi, ins = max(loops, key=lambda r: r[1] - r[0])
    body = [t for a, t in ins if lo <= a <= hi]
    ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0] for t in body)
    return {"loop_bytes": [hex(lo), hex(hi)], "instructions": len(body), "FFMA": ops["FFMA"],
            "ffma_fraction": round(ops["FFMA"] / len(body), 3),
            "reuse_tagged": sum(".reuse" in t for t in body), "ops": dict(ops.most_common())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args()
    out = {}
    for f in a.files:
        out[f] = r = loop_mix(open(f).read())
        print(f"{f}: {r['instructions']} instructions, FFMA {r['FFMA']} ({r['ffma_fraction']:.1%}), "
              f"reuse-tagged {r['reuse_tagged']}; " +
              " ".join(f"{k}={v}" for k, v in list(r["ops"].items())[1:10]))
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
