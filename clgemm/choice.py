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
    stamp = db.stamp(dev)
    key = (stamp, dev.int_ptr, kernel, tuple(shape))
    if key in _chosen:
        return _chosen[key]
    found, own = _candidates(dev, kernel, stamp, f)
    ranked = db.nearest_first(found, tuple(shape))
    choice = heuristics.choose_entry(ranked, kernel, shape, f, own)
    if len(_chosen) > 4096:
        _chosen.clear()
    _chosen[key] = choice
    return choice


_chosen: dict[tuple, tuple[str, dict] | None] = {}


def _candidates(dev: cl.Device, kernel: str | None, stamp: tuple,
                f: Facts) -> tuple[list[tuple[int, str, dict]], dict[int, float]]:
    """The entries `kernel` may launch with on `dev` (_usable_entries), kept per database
    state, and choose_entry's `own` steps of each at its tuned shape, kept with them for as
    long as the facts `f` are the same (a new shape's plan predicted each near entry at its
    own shape again, half of the predictions). Which entries fit the device does not
    depend on the shape, and asking each entry (kernel_spec.violations) for every new
    shape took most of a new plan's host time (855-1528 us a Plan with the H200's
    entries on pocl's host against 202-832 since:
    results/pocl/plan-new-2026-12-07-0d7c0cf.txt)."""
    key = (stamp, dev.int_ptr, kernel)
    kept = _usable.get(key)
    if kept is None or kept[1] is not f:
        if len(_usable) > 64:
            _usable.clear()
        found = _usable_entries(dev, kernel) if kept is None else kept[0]
        kept = _usable[key] = (found, f, {})
    return kept[0], kept[2]


_usable: dict[tuple, tuple[list[tuple[int, str, dict]], Facts, dict[int, float]]] = {}


def _usable_entries(dev: cl.Device, kernel: str | None) -> list[tuple[int, str, dict]]:
    """(order, kernel, entry) of the entries `kernel` may launch with on `dev`, for
    db.nearest_first. A kernel's own entries come first and, on a tie or where it has none
    as near, those of kernels whose parameters mean the same (siblings); without a kernel,
    every GEMM kernel's but the ones taken only by name (opt_in)."""
    def usable(k: str, e: dict) -> bool:
        allowed = kernel is not None or (k in kernels.GEMM and not kernels.get(k).opt_in)
        return allowed and _fits(dev, kernel or k, k, e)
    keys = None if kernel is None else [kernel, *kernels.siblings(kernel)]
    found = db.candidates(dev, keys, usable)
    if kernel is None:     # where several kernels were tuned at one shape, the fastest speaks,
        # among this device's own entries before another device's (db "tuned_on"): speeds
        # measured on two devices do not compare, and a user's own tune must count
        best: dict[tuple, tuple[int, str, dict]] = {}

        def rank(e: dict) -> tuple[bool, float]:
            return "tuned_on" not in e, e["gflops"]
        for t in found:
            seen = best.get(t[2]["shape"])
            if seen is None or rank(t[2]) > rank(seen[2]):
                best[t[2]["shape"]] = t
        found = [t for t in found if best[t[2]["shape"]] is t]
    return found


def forget() -> None:
    """Forget the facts, entries and choices kept per database state: they are kept per
    state, not per thresholds, so a caller that changes the thresholds in process (a
    benchmark of variants, a test) makes the next plan work them out again, as a new
    shape's first call does."""
    _facts.clear()
    _chosen.clear()
    _usable.clear()


def _fits(dev: cl.Device, kernel: str, key: str, entry: dict) -> bool:
    """Whether an entry's parameters (tuned for kernel `key`) can launch `kernel` here: a
    hand-edited or foreign entry beyond the device's limits is passed over with a warning;
    a sibling's entry that breaks this kernel's own constraints, silently."""
    bad = kernels.get(kernel).violations(entry["params"], dev)
    if bad and key == kernel:
        entries.passed_over(key, entry, "; ".join(bad))
    return not bad
