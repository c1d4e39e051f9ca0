"""The auto-tuner.

Worker processes (clgemm.pool), each with its own OpenCL context, compile configurations
in parallel; the parent hands a single device token to one worker at a time, so timings
never overlap. A strategy (clgemm.strategies) proposes what to measure next from a thread
of its own, ahead of the workers. A worker that crashes (a driver fault kills the whole
process) or hangs is replaced and its configuration recorded as `crashed` or `timeout`;
the sweep goes on. A worker that cannot set itself up stops the tune instead. Every
finished evaluation is appended to a JSON Lines log at once (clgemm.tunelog), so a rerun
resumes where a killed one stopped. At the end (clgemm.finals) the best five are checked
again and re-measured interleaved, kernels with split-K time each of them with several
slice counts of k, and the winner goes into the tuning database that gemm() and `clgemm
run` read.
"""

from __future__ import annotations

import queue as queue_mod
import time
from collections.abc import Callable, Sequence

import pyopencl as cl

from . import choice, db, finals, heuristics, kernels, matvec, pool, strategies
from . import device as devmod
from .build import BuildError
from .evaluate import Evaluator  # noqa: F401 - what an evaluator= class subclasses
from .pool import Terminated, WorkerSetupError  # noqa: F401 - Terminated: raised by tune()
from .strategies import MissingExtra  # noqa: F401 - raised by tune()
from .tunelog import Result, TuneBusy, TuneLog  # noqa: F401

STRATEGIES = strategies.NAMES
DEFAULT_EVALUATOR = "clgemm.evaluate:Evaluator"
MATVEC_EVALUATOR = "clgemm.evaluate:MatvecEvaluator"   # the default for kernels.MATVEC
CUTOFF = 3.0   # a first timed run this many times the best median so far ends the timing


def tune(kernel: str, m: int, n: int, k: int, *, device_spec: str | None = None,
         strategy: str | None = None, budget: int | None = None, time_limit: float | None = None,
         repeat: int = 5, workers: int | None = None, timeout: float = 60.0, fresh: bool = False,
         seed: int = 0, evaluator: str = DEFAULT_EVALUATOR, update_db: bool = True,
         on_progress: Callable[[dict], None] | None = None) -> Result:
    """Sweep `kernel` at (m, n, k) on one device; see the module docstring. Raises TuneBusy
    if the same tune runs elsewhere, MissingExtra if `strategy` needs a missing package."""
    kern = kernels.tunable(kernel)
    dev = devmod.select(device_spec)
    nworkers = workers or pool.default_workers(dev, m, n, k)
    pool.check_fits(dev, kern.key, m, n, k, nworkers)
    if kern.kind == "matvec" and evaluator == DEFAULT_EVALUATOR:
        evaluator = MATVEC_EVALUATOR
    db.check_writable(dev, database=update_db)
    valid = [p for p in kern.space() if not kern.violations(p, dev)]
    if not valid:     # say why, rather than start workers and find no winner
        why = "; ".join(kern.violations(kern.defaults_for(dev), dev)[:2])
        raise ValueError(f"no configuration of kernel {kern.key} can run on "
                         f"{db.device_key(dev)}; its defaults: {why}")
    name, note = strategies.choose(strategy, len(valid), budget)
    if kern.kind == "gemm" and heuristics.matvec((m, n, k), choice.facts(dev)):
        form = matvec.FORMS["sweep" if m == 1 else "dot"]
        note = " ".join(filter(None, (note, (
            f"note: gemm() with no kernel named runs {form} at {db.shape_key(m, n, k)}; "
            f"this tune serves calls that name kernel {kern.key} (`clgemm tune --kernel "
            f"{form}` tunes what gemm() runs)"))))
    stops = pool.StopSignals()
    with stops.installed(), TuneLog(dev, kern, (m, n, k)).open(fresh, timeout) as log:
        counts = {"raw": kern.space_size(), "valid": len(valid),
                  "rejected": kern.space_size() - len(valid), "resumed": log.resumed,
                  "strategy": name, "budget": min(budget, len(valid)) if budget else len(valid),
                  "workers": nworkers}
        refs = _references(dev, kern, (m, n, k))
        # what the winner is compared with is measured (and checked) in the search too, so
        # that a tune never records a configuration slower than the one gemm() had: kernel
        # 3 at 64^3 on pocl recorded one at 0.93x the CPU defaults (2026-12-03)
        first = [r["params"] for r in log.retried]
        first += [p for p in _winners(dev, kern, (m, n, k)) if p not in first]
        first += [r["params"] for r in refs.values() if r["params"] not in first]
        strat = strategies.make(name, valid, log.done(), seed, kern, dev, first=first)
        workers_pool = sweep = None
        try:
            workers_pool = pool.Pool(nworkers, device_spec, kern.key, (m, n, k), repeat, evaluator,
                                     held=stops.held)
            sweep = _Sweep(log, strat, counts["budget"], time_limit, timeout, on_progress,
                           (m, n, k), nworkers, note)
            sweep.run(workers_pool)
            res = finals.finish(sweep, workers_pool, dev, kern, (m, n, k), counts, refs, timeout)
        finally:
            with stops.held():
                if sweep is not None:
                    sweep.proposer.close()
                if workers_pool is not None:
                    workers_pool.stop()
        res.note = " ".join(filter(None, (note, res.kept)))
        res.unretried = log.unretried()
        if res.best is not None and update_db and not res.kept:
            extra = {"ms_median": res.best["ms_median"], "date": time.strftime("%Y-%m-%d"),
                     "strategy": name, "evaluated": len(res.records)}
            if "splits" in res.best:
                extra["splits"] = res.best["splits"]
            resident = _residents(dev, kern, res.best["params"])
            if resident:
                extra["resident"] = resident
            res.db = str(db.record_best(dev, kern.key, m, n, k, res.best["params"],
                                        res.best["gflops"], extra))
        return res


def tune_many(jobs: Sequence[tuple[str, int, int, int]], *, time_limit: float | None = None,
              on_start: Callable[[int, tuple], None] | None = None, **options) -> list[Result]:
    """Tune each (kernel, m, n, k) in turn, `time_limit` bounding their searches together
    (as it bounds one tune's search: starting workers, the re-measure and the split stage
    come on top). Each job's search gets an equal share of the search time still left when
    it starts, so that time a job leaves unused (its budget reached, its space exhausted)
    goes to the ones after it, but never less than half of time_limit / len(jobs): a search
    finishes the evaluations under way when its time is up, and on the H200 three shapes
    overran a 90 s limit by 1.7 s that way and left the fourth nothing (2026-12-03, `bash
    scripts/gpu_job.sh recorded 90 ...`). Each shape is checked to fit before the first one
    starts; one that another process is tuning is skipped (stopped_by "busy"). `options`
    are tune()'s."""
    dev = devmod.select(options.get("device_spec"))
    for kernel, m, n, k in jobs:
        pool.check_fits(dev, kernels.tunable(kernel).key, m, n, k,
                        options.get("workers") or 1)
    used = 0.0
    out = []
    for i, job in enumerate(jobs):
        share = None
        if time_limit is not None:
            share = max(time_limit / len(jobs) / 2, (time_limit - used) / (len(jobs) - i))
        if on_start:
            on_start(i, job)
        try:
            out.append(tune(*job, time_limit=share, **options))
        except TuneBusy as e:        # one shape of several: the others are still tuned
            if len(jobs) == 1:
                raise
            key, m, n, k = kernels.tunable(job[0]).key, *job[1:]
            out.append(Result(key, (m, n, k), db.device_key(dev), str(db.log_path(dev, key, m, n, k)),
                              {}, [], None, stopped_by="busy", note=f"skipped: {e}"))
        used += out[-1].seconds
    return out


class _Sweep:
    """The search: proposals handed to idle workers, the device token to one worker at a
    time, results logged and told to the strategy, crashes and hangs replaced."""

    def __init__(self, log: TuneLog, strat, total: int, time_limit, timeout, on_progress,
                 shape, nworkers: int, note: str = ""):
        self.log, self.total, self.time_limit, self.timeout = log, total, time_limit, timeout
        self.on_progress, self.shape, self.note = on_progress, shape, note
        self.proposer = strategies.Proposer(strat, depth=nworkers)
        self.best = log.best()
        # the slow-configuration cutoff is set by this run's own measurements: a resumed
        # record timed impossibly fast (another build, an edited log) would otherwise give
        # every new configuration a single timed run
        self.fastest_now: dict | None = None
        self.new = 0
        self.stopped_by = ""
        self.t0 = time.time()
        self.seconds = 0.0

    def progress(self, phase: str = "search") -> None:
        if self.on_progress:
            left = None if self.time_limit is None else \
                max(0.0, self.time_limit - (time.time() - self.t0))
            self.on_progress({"done": len(self.log.records), "total": self.total,
                              "best": self.best, "failures": self.log.failures(),
                              "shape": self.shape, "seconds_left": left, "phase": phase,
                              "note": self.note})

    def finish(self, slot, rec: dict) -> None:
        _, params = slot.task
        rec = self.log.append({"params": params, **rec})
        self.new += 1
        self.proposer.observe(params, rec.get("gflops") if rec["status"] == "ok" else None)
        if rec["status"] == "ok" and (self.best is None or rec["gflops"] > self.best["gflops"]):
            self.best = rec
        if rec["status"] == "ok" and (self.fastest_now is None
                                      or rec["gflops"] > self.fastest_now["gflops"]):
            self.fastest_now = rec
        slot.task, slot.phase = None, "idle"
        self.progress()

    def stopped(self, why: str) -> WorkerSetupError:
        """The error that stops this tune for its workers' sake, not a configuration's."""
        return WorkerSetupError(f"tuning kernel {self.log.kern.key} at "
                                f"{db.shape_key(*self.shape)} stopped: {why}")

    def run(self, workers: pool.Pool) -> None:
        slots = workers.slots
        token: int | None = None            # which worker may use the device now
        waiting: list[int] = []             # workers compiled and waiting for the token
        idx = 0

        def release(wid: int) -> None:
            nonlocal token
            if token == wid:
                token = None
            if wid in waiting:
                waiting.remove(wid)

        def replace(wid: int, status: str, why: str) -> None:
            slot = slots[wid]
            release(wid)
            if slot.task is not None:
                self.finish(slot, {"status": status, "error": why}
                            | ({"timeout_s": self.timeout} if status == "timeout" else {}))
            workers.replace(wid)

        unstarted = 0

        def restart(wid: int, why: str) -> None:
            # a worker dead (or hung) before its task started fails for its own reasons: the
            # task goes to a new one, unrecorded (as "crashed" it stayed failed when resumed)
            nonlocal unstarted
            unstarted += 1
            if unstarted > 2 * len(slots):
                raise self.stopped(f"{unstarted} worker processes failed before their first "
                                   f"task ({why})")
            task = slots[wid].task
            release(wid)
            workers.replace(wid)
            slots[wid].task, slots[wid].phase, slots[wid].since = task, "queued", time.time()
            slots[wid].tasks.put(("eval", *task))

        self.progress()
        while True:
            out_of_time = self.time_limit is not None and time.time() - self.t0 >= self.time_limit
            if out_of_time:
                # past the limit only the evaluation on the device finishes: the others
                # (queued, compiling, or compiled and waiting for the device) would each
                # take up to --timeout more; they are stopped, not recorded, and a rerun
                # proposes them again
                for wid, slot in enumerate(slots):
                    if slot.task is not None and slot.phase != "run":
                        release(wid)
                        slot.task, slot.phase = None, "idle"
                        workers.replace(wid)
            for slot in slots:                      # hand out work
                if slot.task is not None or out_of_time or self.proposer.exhausted:
                    continue
                busy = sum(s.task is not None for s in slots)
                if len(self.log.records) + busy >= self.total:
                    break
                p = self.proposer.take(wait=0.0 if busy else 0.05)
                if not p:                           # None: no more; False: not ready yet
                    break
                idx += 1
                slot.task, slot.phase, slot.since = (idx, p), "queued", time.time()
                slot.tasks.put(("eval", idx, p))
            if all(s.task is None for s in slots):
                if out_of_time:
                    self.stopped_by = "time limit"
                elif self.proposer.exhausted:
                    self.stopped_by = "space"
                elif len(self.log.records) >= self.total:
                    self.stopped_by = "budget"
                else:
                    continue                        # the sampler has not answered yet
                break
            if token is None and waiting:           # grant the device
                token = waiting.pop(0)
                slots[token].phase, slots[token].since = "run", time.time()
                fastest = self.fastest_now
                cutoff = CUTOFF * fastest["ms_median"] if fastest is not None else None
                slots[token].tasks.put(("go", cutoff))
            try:
                messages = workers.inbox.get_all(timeout=0.05)
            except queue_mod.Empty:
                messages = []
            for kind, wid, i, payload in messages:
                if kind == "fatal":
                    raise self.stopped(f"worker {wid} could not start ({payload})")
                slot = slots[wid]
                if slot.task is None or slot.task[0] != i:
                    continue                        # stale: from a worker since replaced
                if kind == "start":                 # the compile clock starts now, not
                    slot.phase, slot.since = "compile", time.time()   # at spawn
                elif kind == "ready":
                    waiting.append(wid)
                    slot.phase = "wait"             # waiting for the device: no timeout
                elif kind == "done":
                    release(wid)
                    self.finish(slot, payload)
            for wid, slot in enumerate(slots):      # crashes and hangs
                if slot.task is None:
                    continue
                if not slot.proc.is_alive():
                    why = f"worker process died (exit code {slot.proc.exitcode}) during {slot.phase}"
                    if slot.phase == "queued":
                        restart(wid, why)
                    else:
                        replace(wid, "crashed", why)
                elif slot.phase in ("compile", "run") and time.time() - slot.since > self.timeout:
                    replace(wid, "timeout", f"no result after {self.timeout:.0f} s of {slot.phase}")
                elif slot.phase == "queued" and time.time() - slot.since > 3 * self.timeout + 60:
                    restart(wid, "a worker did not start its task")
        self.seconds = time.time() - self.t0


def _parent_queue(dev) -> cl.CommandQueue:
    q = _queues.get(dev.int_ptr)
    if q is None:
        q = _queues[dev.int_ptr] = devmod.queue(dev)
    return q


_queues: dict[int, cl.CommandQueue] = {}


def _residents(dev, kern: kernels.Kernel, params: dict) -> dict | None:
    """The winner's work-groups per compute unit (GemmPlan.residents), which lets gemm()
    predict its launches at shapes nobody tuned; None where the device does not say, and
    for the matrix-vector kernels, whose launches gemm() does not predict."""
    from .gemm import GemmPlan
    if kern.kind != "gemm":
        return None
    try:
        return GemmPlan(_parent_queue(dev), kern.key, params).residents()
    except (cl.Error, BuildError):
        return None


def _references(dev, kern: kernels.Kernel, shape) -> dict:
    """What the winner is compared with: {"defaults": ..., "before": ...}, each
    {"params": ...}; "before" (what gemm() launched at this shape before the tune, with
    "source" and "tuned_at") only where it is a tuned entry other than the defaults."""
    from .gemm import GemmPlan
    if kern.kind == "matvec":
        return _matvec_references(dev, kern, shape)
    try:
        q = _parent_queue(dev)
        default = GemmPlan(q, kern.key)
        before = GemmPlan(q, kern.key, shape=tuple(shape))
    except (cl.Error, ValueError):
        return {}
    out = {}
    if not kern.violations(default.params, dev):
        out["defaults"] = {"params": dict(default.params)}
    if before.source == "tuned" and before.params != default.params \
            and not kern.violations(before.params, dev):
        out["before"] = {"params": dict(before.params), "tuned_at": before.tuned_at,
                         "tuned_kernel": before.tuned_kernel, "tuned_on": before.tuned_on}
    return out


def _matvec_references(dev, kern: kernels.Kernel, shape) -> dict:
    """_references for a matrix-vector kernel: its defaults, and the database's entry
    nearest this shape's form where that differs."""
    out = {} if kern.violations(kern.defaults, dev) else \
        {"defaults": {"params": dict(kern.defaults)}}
    kind = matvec.form_of(kern.key)
    found = matvec.base_params(dev, kind, *matvec.rows(tuple(shape))[kind])
    if found.source == "tuned" and found.params != kern.defaults:
        out["before"] = {"params": found.params, "tuned_at": db.shape_key(*found.at),
                         "tuned_kernel": kern.key, "tuned_on": found.tuned_on}
    return out


def _winners(dev, kern: kernels.Kernel, shape: tuple[int, int, int]) -> list[dict]:
    """The database's winners of this kernel on this device at other shapes, nearest
    shape first; then those of the kernel whose parameters mean the same (`same_params_as`:
    kernel 6 is kernel 5 with another epilogue), nearest first; then the registry defaults
    for this kind of device, which gemm() runs where nothing is tuned (the GPU's ran at
    0.05x the CPU's on pocl, and a budget of one spent itself on them)."""
    db_entries = db.entries_for(dev)
    out: list[dict] = []
    for keys in ([kern.key], kernels.siblings(kern.key)):
        entries = [e for key in keys for e in db_entries.get(key, {}).values()]
        for e in sorted(entries, key=lambda e: db.distance(e["shape"], shape)):
            if e["params"] not in out:
                out.append(dict(e["params"]))
    own = kern.defaults_for(dev)
    if own not in out:
        out.append(dict(own))
    return out
