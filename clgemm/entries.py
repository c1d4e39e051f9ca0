"""What a tuning database's file may hold, as it is read: each entry's parameters (exactly
the kernel's, from its space, within its constraints), figures and shape checked, and
anything else dropped with a warning that names the file (DataWarning). The tune log's
records are checked with the same rules (clgemm.tunelog). Apart from clgemm.db, which
decides which files speak for a device and writes them, because none of it needs a
device or a file's place."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path

from . import kernels

SCHEMA = 1
MAX_SPLITS = 64   # the most slices of k the tuner's split stage times (an entry's "splits")
# the most digits a number given (a shape's side, an option's value; leading zeros aside
# for options) may have: no matrix has more rows, and int() refuses more than 4300 digits
# with a traceback
DIGITS_MAX = 18


class DataWarning(UserWarning):
    """A database entry or log line was ignored; the message names the file."""


def shape_key(m: int, n: int, k: int) -> str:
    return f"{m}x{n}x{k}"


def valid_params(kernel: kernels.Kernel, params: object) -> dict | None:
    """The parameters if they are exactly the kernel's names, each an int from its declared
    space, satisfying its constraints; otherwise None. Nothing else reaches the compiler."""
    return None if params_problem(kernel, params) else _in_order(kernel, params)


def _in_order(kernel: kernels.Kernel, params: Mapping[str, int]) -> dict:
    """Valid parameters as a dict of their own, in the kernel's order."""
    return {p.name: params[p.name] for p in kernel.params}


def params_problem(kernel: kernels.Kernel, params: object) -> str | None:
    """What makes `params` invalid for `kernel` (valid_params), in words; None if nothing."""
    if not isinstance(params, dict):
        return f"params {params!r} is not an object of name: value"
    if set(params) != set(kernel.defaults):
        names = set(kernel.defaults)
        missing, extra = sorted(names - set(params)), sorted(set(params) - names)
        return "params " + "; ".join(
            ([f"lack {', '.join(missing)}"] if missing else [])
            + ([f"name {', '.join(map(repr, extra))}, which kernel {kernel.key} does not take"]
               if extra else []))
    for p in kernel.params:
        v = params[p.name]
        if type(v) is not int or v not in p.space:
            return f"{p.name} = {v!r} is not one of {', '.join(map(str, p.space))}"
    bad = kernel.violations(dict(params))
    return "; ".join(bad) if bad else None


def is_number(x: object) -> bool:
    """A finite int or float, not a bool. A JSON integer may be too large for a float."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def is_positive(x: object) -> bool:
    """A timing or a speed: a zero would divide by zero, a negative would look fastest."""
    return is_number(x) and x > 0


def load(path: Path) -> dict:
    """{kernel key: {shape key: entry}} with every invalid entry dropped (with a warning)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as e:
        warnings.warn(f"{path}: tuning database ignored ({type(e).__name__}: {e})", DataWarning,
                      stacklevel=3)
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("entries"), dict):
        warnings.warn(f"{path}: tuning database ignored (not schema {SCHEMA})", DataWarning, stacklevel=3)
        return {}
    out: dict = {}
    for key, shapes in doc["entries"].items():
        try:
            kern = kernels.tunable(key)
        except ValueError:
            warnings.warn(f"{path}: unknown kernel {key!r} ignored", DataWarning, stacklevel=3)
            continue
        if not isinstance(shapes, dict):
            warnings.warn(f"{path}: kernel {key}'s entries ignored (not an object of shapes)",
                          DataWarning, stacklevel=3)
            continue
        for shape, entry in shapes.items():
            dims = parse_shape(shape)
            why = ("the shape is not MxNxK in positive integers" if dims is None
                   else f"the entry {entry!r} is not an object" if not isinstance(entry, dict)
                   else params_problem(kern, entry.get("params")))
            if why is None and not is_positive(entry.get("gflops")):
                why = f"gflops {entry.get('gflops')!r} is not a positive number"
            elif why is None and "ms_median" in entry and not is_positive(entry["ms_median"]):
                why = f"ms_median {entry['ms_median']!r} is not a positive number"
            if why:
                warnings.warn(f"{path}: entry kernel {key} shape {shape!r} ignored ({why})",
                              DataWarning, stacklevel=3)
                continue
            # an entry filed under the kernel's name, or under another spelling of its shape
            # ("064x64x64"), counts, but never over one under the key and the shape as a
            # tune writes them (such an entry shadowed a new tune)
            into = out.setdefault(kern.key, {})
            canon = shape_key(*dims)
            if (key != kern.key or shape != canon) and canon in into:
                continue
            shape = canon
            into[shape] = {"params": _in_order(kern, entry["params"]),   # checked above
                           "gflops": float(entry["gflops"]),
                           "shape": dims, "file": str(path)}
            splits = entry.get("splits")
            if _count(splits) and splits <= MAX_SPLITS:
                into[shape]["splits"] = splits
            elif splits is not None:
                warnings.warn(f"{path}: entry kernel {key} shape {shape!r}: splits {splits!r} "
                              f"ignored (want an integer from 1 to {MAX_SPLITS})", DataWarning,
                              stacklevel=3)
            resident = entry.get("resident")
            if _valid_residents(resident):
                into[shape]["resident"] = dict(resident)
            elif resident is not None:
                warnings.warn(f"{path}: entry kernel {key} shape {shape!r}: resident {resident!r} "
                              f"ignored (want {{\"checked\": n, \"exact\": n}}, n >= 1)",
                              DataWarning, stacklevel=3)
    return out


def passed_over(kernel: str, entry: dict, why: str) -> None:
    """Warn that a tuned entry this device cannot launch is passed over, naming its file: a
    hand edit, or an entry of a device of the same architecture (entries_for)."""
    warnings.warn(f"{entry.get('file', 'a tuning database')}: tuning database entry of kernel "
                  f"{kernel} at {shape_key(*entry['shape'])} skipped: {why}", DataWarning,
                  stacklevel=3)


def _count(x: object) -> bool:
    """An int >= 1, not a bool."""
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def _valid_residents(r: object) -> bool:
    """Work-groups per compute unit, as GemmPlan.residents gives them."""
    return (isinstance(r, dict) and set(r) == {"checked", "exact"}
            and all(_count(v) for v in r.values()))


def parse_shape(s: object) -> tuple[int, int, int] | None:
    """(m, n, k) from "MxNxK" (positive integers), else None."""
    if not isinstance(s, str):
        return None
    parts = s.lower().split("x")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) <= DIGITS_MAX and int(p) > 0
                                  for p in parts):
        return None
    return tuple(int(p) for p in parts)


def shape_list(text: str) -> list[tuple[int, int, int]]:
    """MxNxK,... (spaces around the commas allowed) as (m, n, k)s, each shape once, in the
    order given; ValueError names the first that is not a shape."""
    dims = []
    for part in text.split(","):
        shape = parse_shape(part.strip())
        if shape is None:
            raise ValueError(f"{part.strip()!r} is not MxNxK with positive integers")
        dims.append(shape)
    return list(dict.fromkeys(dims))
