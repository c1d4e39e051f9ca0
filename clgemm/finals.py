"""A tune's last stage, after its search: the best five checked again on fresh data and
re-measured interleaved in one worker (with the registry defaults and what gemm() ran
before, for comparison), kernels with split-K timed with several slice counts of k (the
split stage), and the winner chosen, never one found wrong or slower than what gemm() had.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from . import db, kernels, pool, timing
from .pool import ask as _ask
from .tunelog import Result

if TYPE_CHECKING:          # for the annotations only: tune imports this module
    import pyopencl as cl

    from .tune import _Sweep

# the split stage takes the fewest slices within this factor of the fastest pair: a tie
# won by more slices carries badly to shapes near it (H200, 2026-12-02: 4 slices tied with
# 1 at 1152^3, and lost 18% at 1200^3, whose build has bounds checks)
SPLIT_MARGIN = 1.02
REFILLS = 3   # rounds of finalists, each the next best five where all of the last were left out


def finish(sweep: _Sweep, workers: pool.Pool, dev: cl.Device, kern: kernels.Kernel,
           shape: tuple[int, int, int], counts: dict, refs: dict, timeout: float) -> Result:
    """The finalists checked and re-measured (with the references), the split stage, the
    winner: the Result of the tune whose search `sweep` (tune._Sweep) ran. Only what this
    build checked can be recorded: a record resumed from a log was checked, if at all, by
    the build that wrote it."""
    records = sweep.log.records
    sweep.progress("finals")
    finalists, timed_refs, out = [], {}, []
    for _ in range(REFILLS):     # finalists left out: the next best, while some are left
        workers.revive()
        finalists, timed_refs, left_out = _remeasure(workers, records, timeout, shape, refs,
                                                     [r["params"] for r in out])
        for rec in left_out:      # found wrong, or failing, in this build: so logged
            out.append(sweep.log.append({**rec, "checked": "fresh data, in the finals"}))
        if finalists or not left_out:
            break
    winner, why_none = None, ""
    # where the re-measure did not run (its worker failed), the best this run measured
    # itself: a resumed record was never checked by this build
    excluded = [o["params"] for o in out]
    best = max((r for r in records[sweep.log.resumed:] if r["status"] == "ok"
                and r["params"] not in excluded),
               key=lambda r: r["gflops"], default=None)
    if finalists:
        winner = max(finalists, key=lambda f: f["gflops"])
    elif best is not None:
        winner = {"params": best["params"], "gflops": best["gflops"], "ms_median": best["ms_median"]}
    elif any(r["status"] == "ok" for r in records):
        why_none = (f"no correct record was checked by this build ({len(out)} found wrong or "
                    f"failing in the finals, or the finals' worker failed); a rerun with "
                    f"--fresh measures every configuration again")
    # the search ran every configuration with gemm()'s own split count: the finalists
    # (or the winner alone) now run with each count that could pay, all in one stage
    stage: list[dict] = []
    # (what the finals found wrong is in `records`, which _standing reads)
    wrong: list[dict] = []
    if winner is not None and kern.split_k:
        group = finalists or [winner]
        workers.revive()
        stage = _split_stage(workers, [f["params"] for f in group], timeout, shape)
        # a finalist the stage found wrong at any count is out (gemm() may launch it at
        # another count elsewhere); one it could not judge (failed, timed out, one count
        # where none had two) competes with its re-measured time
        wrong += [r["params"] for r in stage if r["status"] == "wrong"]
        ok = [r for r in stage if r["status"] == "ok" and r["params"] not in wrong]
        judged = [r["params"] for r in ok] + wrong
        pairs = ok + [f for f in group if f["params"] not in judged]
        top = pick_split(pairs) if pairs else None
        keep = ("params", "gflops", "ms_median", "ms_min", "ms_max") + \
            (() if top is None or top.get("only_count") else ("splits",))
        winner = None if top is None else {f: top[f] for f in keep if f in top}
    references, timed = {}, {}
    for role, ref in refs.items():
        # timed in the split stage's rounds, as the winner's figure is, where the stage ran
        # it as gemm() launches it; else beside the finalists; else as searched
        staged = next((r for r in stage if r["status"] == "ok" and r.get("unaided")
                       and r["params"] == ref["params"]), None)
        timed[role] = staged or timed_refs.get(role) or sweep.log.of(ref["params"])
        references[role] = {**ref, "gflops": timed[role]["gflops"] if timed[role] else None}
    # what gemm() launched here before stays where nothing measured beat it (a budget of
    # one recorded the registry's GPU defaults on pocl at 0.4x the CPU defaults it had):
    # recorded where this build checked it, else the database is left as it was
    had = timed.get("before" if "before" in refs else "defaults")
    kept = ""
    checked_now = ([f["params"] for f in finalists]
                   + [t["params"] for t in timed_refs.values() if t]
                   + [r["params"] for r in stage if r["status"] == "ok"])
    standing = had and _standing(had["params"], records, sweep.log.resumed, wrong, checked_now)
    if winner is not None and had and had["gflops"] > winner["gflops"] and standing != "wrong":
        if standing == "ok":
            winner = {f: had[f] for f in ("params", "gflops", "ms_median", "ms_min", "ms_max")
                      if f in had}
        else:
            what = (f"the entry tuned at {refs['before']['tuned_at']}" if "before" in refs
                    else "the defaults")
            kept = (f"what gemm() ran here before ({what}) timed faster than every "
                    f"configuration this tune checked, and was not checked here itself: the "
                    f"database is left as it was")
    return Result(kern.key, tuple(shape), db.device_key(dev), str(sweep.log.path), counts,
                  records, winner, finalists, sweep.seconds, sweep.new, split_stage=stage,
                  references=references, stopped_by=sweep.stopped_by, kept=kept,
                  why_none=why_none)


def _standing(params: dict, records: list[dict], resumed: int, wrong: list[dict],
              checked_now: list[dict]) -> str | None:
    """"wrong" where this build found `params` wrong (in the finals, the split stage or
    this run's search) or, never measuring it, the last record of it did; "ok" where this
    build checked it; else None: never measured here, or only by the build that wrote a
    resumed record."""
    fresh = [r["status"] for r in records[resumed:] if r["params"] == params]
    if params in wrong or "wrong" in fresh:
        return "wrong"
    if params in checked_now or (fresh and fresh[-1] == "ok"):
        return "ok"
    resumed_only = [r["status"] for r in records[:resumed] if r["params"] == params]
    return "wrong" if resumed_only and resumed_only[-1] == "wrong" else None


def pick_split(pairs: list[dict]) -> dict:
    """Of timed (configuration, slice count) pairs, those with "gflops" and, where the stage
    ran, "splits" (none: gemm()'s own count, 1 or so), the one with the fewest slices
    within SPLIT_MARGIN of the fastest; the faster on a tie."""
    fastest = max(p["gflops"] for p in pairs)
    return min((p for p in pairs if p["gflops"] >= fastest / SPLIT_MARGIN),
               key=lambda p: (p.get("splits", 1), -p["gflops"]))


def _step_deadline(timeout: float) -> float:
    """How long a whole-device task may go without a report: each step (a compile and
    check, or a round of timings) reports in, so a hung one is given up after this, however
    many steps the task has (one deadline per finalist and count took 45 minutes once)."""
    return 2 * timeout + 10


def _remeasure(workers: pool.Pool, records, timeout, shape, refs: dict,
               exclude: list[dict]) -> tuple[list[dict], dict, list[dict]]:
    """Check the best five (less `exclude`) again and time them, interleaved, in one worker
    (near-ties reorder under noise), with the references in the same rounds; without them
    if that fails (a reference that crashes its worker must not cost the finalists).
    (finalists, the references' timings, a record for each configuration left out: found
    wrong, or failing to build or run, in this build; Evaluator.remeasure); ([], {}, [])
    with no correct configuration, or where the worker failed."""
    ok = sorted((r for r in records if r["status"] == "ok" and r["params"] not in exclude),
                key=lambda r: -r["gflops"])[:5]
    params = [r["params"] for r in ok]
    extra = [r["params"] for r in refs.values() if r["params"] not in params]
    if not ok:
        return [], {}, []
    outcome: dict = {}
    payload = _ask(workers.slots, workers.inbox, ("remeasure", -1, params + extra),
                   _step_deadline(timeout), outcome)
    if extra and not outcome.get("timed_out") and (payload is None or "error" in payload):
        extra = []
        workers.revive()
        payload = _ask(workers.slots, workers.inbox, ("remeasure", -3, params),
                       _step_deadline(timeout))
    if payload is None or "error" in payload:
        return [], {}, []
    given = params + extra
    left_out = ([{"params": given[i], "status": "wrong", "rel_error": err}
                 for i, err in payload.get("wrong", [])]
                + [{"params": given[i], "status": status, "error": error}
                   for i, status, error in payload.get("failed", [])])
    timed = [_timed(shape, ms, params=p) for p, ms in zip(given, payload["ms"]) if ms]
    timed_refs = {role: next((t for t in timed if t["params"] == r["params"]), None)
                  for role, r in refs.items()}
    finalists = [t for t in timed if t["params"] in params]
    return sorted(finalists, key=lambda f: -f["gflops"]), timed_refs, left_out


def _split_stage(workers: pool.Pool, finalists: list[dict], timeout, shape) -> list[dict]:
    """The configurations with each slice count of k that could pay (Evaluator.split_counts),
    checked and timed interleaved: the tuner measures the split-K count where gemm()'s
    rule would guess it. [] where each has one count only; a record of status "failed" per
    configuration where the stage raised, "timeout" where it did not answer in time or lost
    its worker."""
    payload = _ask(workers.slots, workers.inbox, ("splits", -2, finalists), _step_deadline(timeout))
    if payload is None:
        return [{"params": p, "status": "timeout", "error": "no answer (timed out, or the worker died)"}
                for p in finalists]
    if "error" in payload:
        return [{"params": p, "status": "failed", "error": payload["error"]} for p in finalists]
    return [_timed(shape, r.pop("ms"), **r) if r["status"] == "ok" else r for r in payload["records"]]


def _timed(shape, ms: list[float], **fields) -> dict:
    m, n, k = shape
    med = statistics.median(ms)
    return {**fields, "ms_median": med, "ms_min": min(ms), "ms_max": max(ms), "runs": len(ms),
            "gflops": timing.gflops(m, n, k, med)}
