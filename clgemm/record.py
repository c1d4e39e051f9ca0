"""An opt-in record of the shapes an application multiplies, so that `clgemm tune
--recorded` can tune exactly those: run the application with CLGEMM_RECORD_SHAPES=1, tune,
run it again.

gemm() calls `note_shape` when it plans a shape it has not planned before in this
process; with the variable unset that costs one dictionary look-up (the environment is
read once per process). Each shape is written once per process, as one JSON line of
`shapes.jsonl` in the clgemm home, appended in a single write so that processes recording
at once do not mix their lines.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

from . import db, entries, kernels, matvec, store

ENV = "CLGEMM_RECORD_SHAPES"
FILE = "shapes.jsonl"

_enabled: bool | None = None
_noted: set[tuple] = set()
_warned = False


def enabled() -> bool:
    """Whether CLGEMM_RECORD_SHAPES is set to 1 (or yes, true, on); read once per process."""
    global _enabled
    if _enabled is None:
        _enabled = os.environ.get(ENV, "").strip().lower() in ("1", "yes", "true", "on")
    return _enabled


def path() -> Path:
    return store.home() / FILE


def note_shape(device, kernel: str, m: int, n: int, k: int) -> None:
    """Record that `kernel` ran at (m, n, k) on `device` (a pyopencl Device), where
    recording is enabled; nothing otherwise. Never raises for a file it cannot write: the
    application's product matters more than the record (a warning says so, once)."""
    if not enabled():
        return
    entry = (db.device_key(device), str(kernel), int(m), int(n), int(k))
    if entry in _noted:
        return
    _noted.add(entry)
    line = json.dumps({"device": entry[0], "kernel": entry[1], "m": entry[2], "n": entry[3],
                       "k": entry[4], "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n"
    try:
        where = path()
        where.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(where, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError as e:
        global _warned
        if not _warned:
            _warned = True
            warnings.warn(f"{ENV}: cannot record shapes in {path()} ({e})", RuntimeWarning,
                          stacklevel=2)


def recorded(device=None, kernel: str | None = None) -> list[tuple[str, int, int, int]]:
    """The recorded (kernel, m, n, k), each once, most often recorded first (then first
    recorded first); only `device`'s where given, only `kernel`'s where given. Lines that
    are not a record are skipped with a warning naming the file."""
    where = path()
    if not where.exists():
        return []
    want = None if device is None else db.device_key(device)
    counts: dict[tuple, int] = {}
    with open(where, "rb") as f:
        for no, raw in enumerate(f, 1):
            try:
                r = json.loads(raw)
                dims = (r["m"], r["n"], r["k"])
                # whole numbers only: 2.7 or true is no dimension, Infinity no integer
                if (not isinstance(r["device"], str)
                        or not all(type(d) is int and d >= 1 for d in dims)):
                    raise ValueError
                job = (kernels.tunable(r["kernel"]).key, *dims)
                if job[0] in kernels.MATVEC:     # a form at a shape it does not take
                    matvec.check_form(job[0], *dims[:2])
            except (ValueError, TypeError, KeyError, RecursionError):
                warnings.warn(f"{where}: line {no} ignored (not a recorded shape of a "
                              f"tunable kernel, at a shape it takes)", entries.DataWarning, stacklevel=2)
                continue
            if (want is None or r["device"] == want) and (kernel is None or job[0] == kernel):
                counts[job] = counts.get(job, 0) + 1
    # dicts keep insertion order and sorted() is stable: ties stay first recorded first
    return sorted(counts, key=lambda j: -counts[j])
