"""What the tuning database gives a launch on a device: its facts for the heuristics, with
the database's thresholds (facts), and the tuned entry a launch at a shape takes
(tuned_entry): the entries near it that can launch here (db.near), the fastest of each
tuned shape, and heuristics.choose_entry's pick among them, kept per database state.
GemmPlan (launch.py) asks it for both."""

from __future__ import annotations

import pyopencl as cl

from . import db, entries, heuristics, kernels, thresholds
from .thresholds import Facts


def facts(dev: cl.Device) -> Facts:
    """The device's facts for the heuristics, with its database's thresholds; kept per
    database state, since gemm()'s uncached path asks for every new shape."""
    key = (dev.int_ptr, db.version(dev))
    found = _facts.get(key)
    if found is None:
        if len(_facts) > 64:
            _facts.clear()
        found = _facts[key] = thresholds.facts(dev, db.thresholds(dev, thresholds.LIMITS))
    return found


_facts: dict[tuple, Facts] = {}


def tuned_entry(queue: cl.CommandQueue, kernel: str | None, shape: tuple[int, int, int],
                f: Facts) -> tuple[str, dict] | None:
    """(kernel, entry) of the tuning database to launch at `shape` (heuristics.choose_entry
    with the device's facts `f`, facts()), kept per database state: choosing plans
    every near entry."""
    dev = queue.device
    key = (db.stamp(dev), dev.int_ptr, kernel, tuple(shape))
    if key in _chosen:
        return _chosen[key]
    # a kernel's own entries and, on a tie or where it has none as near, those of kernels
    # whose parameters mean the same (siblings); without a kernel, every GEMM kernel's but
    # the ones taken only by name (opt_in)
    keys = None if kernel is None else [kernel, *kernels.siblings(kernel)]
    every = db.near(dev, keys, *shape, within=float("inf"),
                    usable=lambda k, e: (kernel is not None or (k in kernels.GEMM
                                                                and not kernels.get(k).opt_in))
                    and _fits(dev, kernel or k, k, e))
    if kernel is None:     # where several kernels were tuned at one shape, the fastest speaks,
        # among this device's own entries before another device's (db "tuned_on"): speeds
        # measured on two devices do not compare, and a user's own tune must count
        best: dict[tuple, tuple[str, dict]] = {}

        def rank(e: dict) -> tuple[bool, float]:
            return "tuned_on" not in e, e["gflops"]
        for ke in every:
            seen = best.get(ke[1]["shape"])
            if seen is None or rank(ke[1]) > rank(seen[1]):
                best[ke[1]["shape"]] = ke
        every = [ke for ke in every if best[ke[1]["shape"]] is ke]
    choice = heuristics.choose_entry(every, kernel, shape, f)
    if len(_chosen) > 4096:
        _chosen.clear()
    _chosen[key] = choice
    return choice


_chosen: dict[tuple, tuple[str, dict] | None] = {}


def _fits(dev: cl.Device, kernel: str, key: str, entry: dict) -> bool:
    """Whether an entry's parameters (tuned for kernel `key`) can launch `kernel` here: a
    hand-edited or foreign entry beyond the device's limits is passed over with a warning;
    a sibling's entry that breaks this kernel's own constraints, silently."""
    bad = kernels.get(kernel).violations(entry["params"], dev)
    if bad and key == kernel:
        entries.passed_over(key, entry, "; ".join(bad))
    return not bad
