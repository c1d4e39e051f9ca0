"""Probe: kernel 5 rebuilt from its own PTX with a performance-tuning directive added to
the gemm entry (.maxnreg N or .minnctapersm N), timed against the plain build through
scripts/points.py. A variant is a --source named rN (maxnreg) or cN (minnctapersm) of
the same kernel file."""
import re
import sys
from pathlib import Path

import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from clgemm import build  # noqa: E402
import points  # noqa: E402

_orig = build._compile


def _directive(ptx: str, text: str) -> str:
    ptx = ptx.rstrip("\0")
    at = ptx.index(".entry gemm(")
    body = ptx.index("\n{", at)
    return ptx[:body] + "\n" + text + ptx[body:]


def _compile(context, source, params, extra, what, tail=""):
    prg = _orig(context, source, params, extra, what, tail)
    m = re.search(r"kernel \d+-([rc])(\d+) ", what)
    if not m:
        return prg
    text = (f".maxnreg {m.group(2)}" if m.group(1) == "r" else f".minnctapersm {m.group(2)}")
    dev = context.devices[0]
    ptx = _directive(prg.get_info(cl.program_info.BINARIES)[0].decode(), text)
    return cl.Program(context, [dev], [ptx.encode()]).build(
        options=[o for o in extra if o.startswith("-cl-nv-")])


build._compile = _compile
points.main()
