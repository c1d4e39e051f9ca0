"""Probe runner: scripts/points.py with --source variants named ws* launched with one
producer warp more per group (probe/k5_ws.cl)."""
import dataclasses
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import points  # noqa: E402


def _local(p):
    rtsn = p["TSN"] // p["WPTN"]
    return (rtsn, p["TSM"] // p["WPTM"] + 32 // rtsn)


def _replace(obj, **kw):
    out = dataclasses.replace(obj, **kw)
    if kw.get("key", "").split("-")[-1].startswith("ws"):
        out = dataclasses.replace(out, geometry=dataclasses.replace(out.geometry, local=_local))
    return out


points.dataclasses = types.SimpleNamespace(replace=_replace)
points.main()
