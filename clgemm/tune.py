"""The auto-tuner.

Worker processes, each with its own OpenCL context, compile configurations in parallel;
the parent hands a single "GPU token" to one worker at a time, so timings never overlap.
A worker that crashes (a driver fault kills the whole process) or hangs is replaced and
its configuration recorded as `crashed` or `timeout`; the sweep goes on. A worker that
cannot set itself up (its inputs do not fit, say) stops the tune instead. Every finished
evaluation is appended to a JSON Lines log at once, so a rerun resumes where a killed one
stopped. At the end the best five are re-measured interleaved, kernels with split-K time
each of them with several slice counts of k (the split stage), and the winner goes into
the tuning database that gemm() and `clgemm run` read.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import queue as queue_mod
import random
import signal
import statistics
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

import numpy as np
import pyopencl as cl

from . import db, kernels, operands, timing, verify
from . import device as devmod
from .build import BuildError

CHECK_SHAPE = (133, 261, 67)   # odd: partial tiles of every size and vector width
STRATEGIES = ("grid", "random", "tpe")
CUTOFF = 3.0   # a first timed run this many times the best median so far ends the timing
# the split stage times each finalist with slices of k up to this many work-groups per
# compute unit (and at most SPLIT_STAGE_MAX slices)...
SPLIT_STAGE_FILL = 16
SPLIT_STAGE_MAX = db.MAX_SPLITS
# ...and takes the fewest slices within this factor of the fastest pair: a tie won by more
# slices carries badly to shapes near it (H200, session 11: 4 slices tied with 1 at 1152^3,
# and lost 18% at 1200^3, whose build has bounds checks)
SPLIT_MARGIN = 1.02
_BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class WorkerSetupError(RuntimeError):
    """A worker could not make its device queue or its evaluator's data (a MemoryError making
    the inputs, say): no configuration's fault, so the tune stops instead of recording one."""


# ------------------------------------------------------------------ evaluation (workers)

class Evaluator:
    """Compiles, verifies and times configurations of one kernel at one shape. Lives in a
    worker process; tests substitute a subclass to plant crashes and hangs."""

    def __init__(self, queue: cl.CommandQueue, kernel: str, m: int, n: int, k: int, repeat: int):
        self.queue, self.kernel, self.shape, self.repeat = queue, kernel, (m, n, k), repeat
        rng = np.random.default_rng()
        self.a = verify.random_matrix(rng, m, k)
        self.b = verify.random_matrix(rng, k, n)
        # the timed output is checked too, on rows that cross the first and last tiles
        self.rows = verify.sample_rows(rng, m, 14)
        self.ref = verify.reference(self.a[self.rows], self.b)
        self._mats: dict[tuple, tuple] = {}
        # one split-K workspace for every plan: the split stage holds dozens at once, and
        # their launches on this queue never overlap
        from .gemm import Workspace
        self._work = Workspace(queue.context)

    def compile(self, params: Mapping[str, int], split_k: int | str = "auto"):
        """The plan with the program that the target shape launches, built now: this is
        the phase the worker pool runs in parallel, ahead of the device."""
        from .gemm import GemmPlan
        plan = GemmPlan(self.queue, self.kernel, params, split_k=split_k, workspace=self._work)
        launched, kmajor = self.layout(plan)
        plan.compiled(*launched, kmajor)
        return plan

    def split_counts(self, params: Mapping[str, int]) -> list[int]:
        """The slices of k the split stage times: 1, the count gemm() picks unaided, and
        powers of two while the work-groups number at most SPLIT_STAGE_FILL per compute unit
        and the partial sums fit on the device; each as launched (every slice holds a tile
        of k), without repeats. One count for a kernel without split-K."""
        from .gemm import GemmPlan
        plan = GemmPlan(self.queue, self.kernel, params)
        launched, _ = self.layout(plan)
        groups, _ = plan.tiles(*launched)
        cap = SPLIT_STAGE_FILL * self.queue.device.max_compute_units
        counts = {1, plan.splits(*launched)}
        s = 2
        while s <= SPLIT_STAGE_MAX and groups * s <= cap:
            counts.add(plan.splits(*launched, s))
            s *= 2
        m, n, _ = self.shape
        return [s for s in sorted(counts) if plan.workspace_fits(s, m, n)]

    def split_stage(self, finalists: list[Mapping[str, int]],
                    alive: Callable[[], None] = lambda: None) -> dict:
        """Each configuration with each of its `split_counts`, checked (`measure`), then all
        the correct pairs timed in the same interleaved rounds, so that the margin compares
        timings taken side by side. A configuration with one count is timed with the rest
        (marked `only_count`); no records where none has two. A pair that raises is
        recorded as failed and the others go on. `alive` is called after each step, so
        that the parent's deadline counts from the last one."""
        counts = [self.split_counts(p) for p in finalists]
        if all(len(c) < 2 for c in counts):
            return {"records": []}
        plans, records = [], []
        for params, cs in zip(finalists, counts):
            for s in cs:
                try:
                    plan = self.compile(params, split_k=s)
                    rec = self.measure(plan)
                except Exception as e:    # noqa: BLE001 - one pair's failure, recorded
                    plan, rec = None, {"status": "failed", "error": _short(e)}
                rec.pop("ms", None)
                records.append({"params": dict(params), "splits": s, **rec,
                                **({"only_count": True} if len(cs) == 1 else {})})
                if rec["status"] == "ok":
                    plans.append((len(records) - 1, plan))
                alive()
        ms = self.interleaved([p for _, p in plans], alive=alive)
        for (i, _), times in zip(plans, ms):
            records[i]["ms"] = times
        return {"records": records}

    def remeasure(self, finalists: list[Mapping[str, int]],
                  alive: Callable[[], None] = lambda: None) -> dict:
        """The finalists compiled again and timed in the same interleaved rounds; `alive`
        is called after each compile and each round, as in `split_stage`."""
        plans = []
        for params in finalists:
            plans.append(self.compile(params))
            alive()
        return {"ms": self.interleaved(plans, alive=alive)}

    def interleaved(self, plans: list, rounds: int = 5,
                    alive: Callable[[], None] = lambda: None) -> list[list[float]]:
        """Timings of each plan over `rounds` rounds that take them in turn: near-ties
        reorder under noise, and drift hits them alike."""
        ms: list[list[float]] = [[] for _ in plans]
        for _ in range(rounds):
            for i, plan in enumerate(plans):
                ms[i].extend(self.time(plan, max(2, self.repeat // 2)).ms)
            alive()
        return ms

    def layout(self, plan) -> tuple[tuple[int, int, int], bool]:
        """How gemm() launches the target with this plan: the shape the launch covers
        (`GemmPlan.launched`) and whether A is read K-major (`kmajor_a`)."""
        return plan.launched(*self.shape), plan.kmajor_a(*self.shape)

    def check_shape(self, plan) -> tuple[int, int, int]:
        """Odd, so that every partial-tile path runs; but when the target shape takes the
        build without bounds checks (EXACT), whole tiles of it, so that build is the one
        checked and no second compile is needed."""
        if not plan.exact(*self.layout(plan)[0]):
            return CHECK_SHAPE
        tm, tn = plan.kernel.geometry.tile(plan.params)
        return (2 * tm, 3 * tn, 5 * plan.params["TSK"])

    def measure(self, plan, cutoff_ms: float | None = None) -> dict:
        """Check on fresh random data at an odd shape, then time at the target shape and
        check that output too (both poisoned with NaN first). A configuration whose first
        timed run is slower than `cutoff_ms` is not timed again: it cannot be a finalist,
        and at large shapes the slow ones would otherwise hold the device most of the time."""
        shape = self.check_shape(plan)
        launched, kmajor = self.layout(plan)
        err = self._check_fresh(plan, shape, plan.splits(*launched), kmajor)
        if not err <= verify.tolerance(shape[2]):
            return {"status": "wrong", "rel_error": verify.json_safe(err),
                    "checked": "fresh data at {}x{}x{}".format(*shape)}
        cm = self._operands(plan)[2]
        operands.poison(self.queue, cm)
        t = self.time(plan, cutoff_ms=cutoff_ms)
        err_t = verify.rel_error(operands.rows_to_host(self.queue, cm, self.rows), self.ref)
        if not err_t <= verify.tolerance(self.shape[2]):
            return {"status": "wrong", "rel_error": verify.json_safe(err_t), "checked": "target shape"}
        m, n, k = self.shape
        return {"status": "ok", "rel_error": max(err, err_t), "ms_median": t.median,
                "ms_min": t.min, "ms_max": t.max, "runs": len(t.ms), "ms": list(t.ms),
                "gflops": timing.gflops(m, n, k, t.median)}

    def _check_fresh(self, plan, shape: tuple[int, int, int], splits: int, kmajor: bool) -> float:
        """The error at `shape`, cut into as many slices of k as the target is (at most one
        per tile of k), with A laid out as the target's is, so that the build checked is the
        one timed (SPLIT_K or not, A_KMAJOR or not)."""
        m, n, k = shape
        rng = np.random.default_rng()
        a, b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
        q, al = self.queue, plan.align
        cm = operands.poison(q, operands.empty(q, m, n, operands.rounded(n, al)))
        am = operands.raw(q, np.ascontiguousarray(a.T) if kmajor else a, al)
        cl.wait_for_events(plan.bind(am, operands.raw(q, b, al), cm, a_kmajor=kmajor,
                                     split_k=splits)())
        return verify.rel_error(operands.to_host(q, cm), verify.reference(a, b))

    def _operands(self, plan):
        """A, B and C on the device as the target's launch takes them: A and B zero-padded
        to whole tiles when gemm() pads (the copies that pad them are not timed), A K x M
        when it is read K-major (`kmajor_a`), and that flag; kept per layout."""
        (mp, np_, kp), kmajor = self.layout(plan)
        key = (plan.align, kmajor, mp, np_, kp)
        if key not in self._mats:
            m, n, _ = self.shape
            q, al = self.queue, plan.align
            a, ashape = (np.ascontiguousarray(self.a.T), (kp, mp)) if kmajor else (self.a, (mp, kp))
            self._mats[key] = (operands.raw(q, a, al, ashape), operands.raw(q, self.b, al, (kp, np_)),
                               operands.empty(q, m, n, operands.rounded(n, al)), kmajor)
        return self._mats[key]

    def time(self, plan, repeat: int | None = None, cutoff_ms: float | None = None) -> timing.Timing:
        am, bm, cm, kmajor = self._operands(plan)
        repeat = repeat or self.repeat
        launch = plan.bind(am, bm, cm, a_kmajor=kmajor)
        if cutoff_ms is None or repeat == 1:
            return timing.profile(launch, repeat=repeat, warmup=1)
        first = timing.profile(launch, repeat=1, warmup=1)
        if first.median > cutoff_ms:
            return first
        return timing.Timing(first.ms + timing.profile(launch, repeat=repeat - 1, warmup=0).ms)


def _worker(wid: int, device_spec: str | None, kernel: str, shape: tuple, repeat: int,
            evaluator: str, tasks: mp.Queue, results: Connection) -> None:
    # Ctrl-C reaches the whole process group; stopping the workers is the parent's job, and
    # each one's KeyboardInterrupt traceback would only bury the parent's message
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        mod, _, name = evaluator.partition(":")
        cls = getattr(importlib.import_module(mod), name)
        q = devmod.queue(devmod.select(device_spec))
        ev = cls(q, kernel, *shape, repeat)
    except Exception as e:                # noqa: BLE001 - reported; the parent stops the tune
        results.send(("fatal", wid, None, _short(e)))
        while tasks.get() is not None:    # alive until told to stop: a dead worker's
            pass                          # configuration would be recorded as crashed
        return
    while True:
        task = tasks.get()
        if task is None:
            return
        kind, idx, payload = task
        if kind in ("remeasure", "splits"):   # the finalists again; a finalist's split-K
            if tasks.get() is None:       # wait for the token; None: the tune is over
                return
            try:
                task_of = ev.remeasure if kind == "remeasure" else ev.split_stage
                out = task_of(payload, alive=lambda: results.send(("alive", wid, idx, None)))
            except Exception as e:        # noqa: BLE001 - the tune keeps what it has
                out = {"error": _short(e)}
            results.send(("done", wid, idx, out))
            continue
        params = payload
        results.send(("start", wid, idx, None))
        t0 = time.perf_counter()
        try:
            plan = ev.compile(params)
        except BuildError as e:
            results.send(("done", wid, idx, {"status": "compile_error", "error": str(e)[-2000:]}))
            continue
        except Exception as e:            # noqa: BLE001 - recorded, never fatal
            results.send(("done", wid, idx, {"status": "compile_error", "error": _short(e)}))
            continue
        compile_s = time.perf_counter() - t0
        results.send(("ready", wid, idx, None))
        token = tasks.get()               # the GPU token; None: the tune is over
        if token is None:
            return
        _, cutoff_ms = token
        t1 = time.perf_counter()
        try:
            rec = ev.measure(plan, cutoff_ms)
        except cl.Error as e:
            rec = {"status": "launch_error", "error": _short(e)}
        except Exception as e:            # noqa: BLE001
            rec = {"status": "launch_error", "error": _short(e)}
        rec["compile_s"] = round(compile_s, 3)
        rec["device_s"] = round(time.perf_counter() - t1, 3)
        results.send(("done", wid, idx, rec))


def _short(e: BaseException) -> str:
    return (f"{type(e).__name__}: {e}" or traceback.format_exc())[-2000:]


# ------------------------------------------------------------------ strategies

class Strategy:
    """Proposes configurations; `observe` feeds results back (model-based ones learn)."""

    def __init__(self, valid: list[dict], seen: Mapping[tuple, float | None], seed: int):
        self.valid, self.seen, self.rng = valid, dict(seen), random.Random(seed)

    def propose(self) -> dict | None:
        raise NotImplementedError

    def observe(self, params: dict, gflops: float | None) -> None:
        self.seen[_key(params)] = gflops


class Grid(Strategy):
    """Every valid point in declaration order, after `first` (the winners at other shapes
    and the defaults): a budget that stops a grid early still measures those."""

    def __init__(self, valid, seen, seed, first=()):
        super().__init__(valid, seen, seed)
        self._it = iter([p for p in first if p in valid] + list(valid))

    def propose(self):
        for p in self._it:
            if _key(p) not in self.seen:
                self.seen[_key(p)] = None
                return p
        return None


class RandomSearch(Grid):
    def __init__(self, valid, seen, seed):
        valid = list(valid)
        random.Random(seed).shuffle(valid)
        super().__init__(valid, seen, seed)


class TPE(Strategy):
    """Optuna's Tree-structured Parzen Estimator over the declared parameter space. Points
    that break a constraint are told a score of 0 without being compiled; points measured
    before (a resumed log) warm-start the model, and `first` (the winners at other shapes)
    are proposed before the model's own: at 8192^3, 61 evaluations of a cold start missed
    the 4096^3 winner, which was 3-5% faster there."""

    def __init__(self, valid, seen, seed, kernel: kernels.Kernel, device, first=()):
        super().__init__(valid, seen, seed)
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.kernel, self.device = kernel, device
        self.dists = {p.name: optuna.distributions.CategoricalDistribution(p.space)
                      for p in kernel.params}
        self.study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(
            seed=seed, constant_liar=True, n_startup_trials=10, multivariate=True))
        self.pending: dict[tuple, list] = {}
        for p in valid:
            if _key(p) in self.seen:
                self.study.add_trial(optuna.trial.create_trial(
                    params=p, distributions=self.dists, value=self.seen[_key(p)] or 0.0))
        self._unvisited = [p for p in valid if _key(p) not in self.seen]
        self.rng.shuffle(self._unvisited)
        for p in first:
            if _key(p) not in self.seen and not kernel.violations(p, device):
                self.study.enqueue_trial(dict(p), skip_if_exists=True)

    def propose(self):
        for _ in range(200):
            trial = self.study.ask(self.dists)
            p = dict(trial.params)
            key = _key(p)
            if self.kernel.violations(p, self.device):
                self.study.tell(trial, 0.0)
            elif key in self.seen and key not in self.pending:
                self.study.tell(trial, self.seen[key] or 0.0)
            elif key in self.pending:
                self.pending[key].append(trial)
            else:
                self.seen[key] = None
                self.pending[key] = [trial]
                return p
        while self._unvisited:            # the model keeps repeating itself: sample plainly
            p = self._unvisited.pop()
            if _key(p) not in self.seen:
                self.seen[_key(p)] = None
                return p
        return None

    def observe(self, params, gflops):
        super().observe(params, gflops)
        for trial in self.pending.pop(_key(params), []):
            self.study.tell(trial, gflops or 0.0)


def _key(p: Mapping[str, int]) -> tuple:
    return tuple(sorted(p.items()))


# ------------------------------------------------------------------ the sweep (parent)

class _Inbox:
    """The workers' messages, over a pipe of each worker's own. With one queue shared by
    all of them, a worker killed while its queue's feeder thread was still writing (the
    tests' planted crash did, in some runs) left the queue's lock held, so that no worker
    could report again ("worker did not start"); a dead worker now breaks only its pipe."""

    def __init__(self, ctx):
        self.ctx, self.pipes = ctx, {}

    def open(self, wid: int) -> Connection:
        """A new pipe for worker `wid` (replacing a dead one's): its end to write to."""
        self.close(wid)
        read, write = self.ctx.Pipe(duplex=False)
        self.pipes[wid] = read
        return write

    def close(self, wid: int) -> None:
        old = self.pipes.pop(wid, None)
        if old is not None:
            old.close()

    def get(self, timeout: float):
        for conn in mp_connection.wait(list(self.pipes.values()), timeout):
            try:
                return conn.recv()
            except (EOFError, OSError):      # its worker died: the sweep sees to that
                self.close(next(w for w, c in self.pipes.items() if c is conn))
        raise queue_mod.Empty


@dataclass
class _Slot:
    proc: mp.Process
    tasks: mp.Queue
    task: tuple | None = None        # (idx, params) being worked on
    since: float = 0.0               # when the current phase began
    phase: str = "idle"              # idle | queued | compile | wait (for the device) | run


@dataclass
class Result:
    kernel: str
    shape: tuple
    device: str
    log: str
    counts: dict
    records: list[dict]
    best: dict | None
    finalists: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    evaluated_now: int = 0
    db: str | None = None
    split_stage: list[dict] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.evaluated_now / self.seconds if self.seconds else 0.0

    def summary(self) -> dict:
        by_status: dict[str, int] = {}
        for r in self.records:
            by_status[r["status"]] = by_status.get(r["status"], 0) + 1
        top = sorted((r for r in self.records if r["status"] == "ok"), key=lambda r: -r["gflops"])[:10]
        return {"kernel": self.kernel, "m": self.shape[0], "n": self.shape[1], "k": self.shape[2],
                "device": self.device, "log": self.log, "database": self.db, **self.counts,
                "status_counts": by_status, "seconds": round(self.seconds, 2),
                "evaluated_now": self.evaluated_now,
                "configs_per_second": round(self.throughput, 2), "best": self.best,
                "finalists": self.finalists, "split_stage": self.split_stage,
                "top": [{k: r.get(k) for k in ("params", "gflops", "ms_median", "ms_min", "ms_max")}
                        for r in top]}


def _winners(dev, kern: kernels.Kernel, shape: tuple[int, int, int]) -> list[dict]:
    """The database's winners of this kernel on this device at other shapes, nearest
    shape first; then those of the kernel whose parameters mean the same (`same_params_as`:
    kernel 6 is kernel 5 with another epilogue), nearest first; then the registry
    defaults."""
    db_entries = db.entries_for(dev)
    out: list[dict] = []
    for keys in ([kern.key], kern.siblings):
        entries = [e for key in keys for e in db_entries.get(key, {}).values()]
        for e in sorted(entries, key=lambda e: db.distance(e["shape"], shape)):
            if e["params"] not in out:
                out.append(dict(e["params"]))
    if kern.defaults not in out:
        out.append(dict(kern.defaults))
    return out


def tune(kernel: str, m: int, n: int, k: int, *, device_spec: str | None = None,
         strategy: str | None = None, budget: int | None = None, time_limit: float | None = None,
         repeat: int = 5, workers: int | None = None, timeout: float = 60.0, fresh: bool = False,
         seed: int = 0, evaluator: str = "clgemm.tune:Evaluator", update_db: bool = True,
         on_progress: Callable[[dict], None] | None = None) -> Result:
    """Sweep `kernel` at (m, n, k) on one device; see the module docstring."""
    kern = kernels.get(kernel)
    dev = devmod.select(device_spec)
    nworkers = workers or max(1, min(8, (mp.cpu_count() or 2)))
    _check_fits(dev, kern.key, m, n, k, nworkers)
    db.check_writable(dev, database=update_db)
    raw = kern.space_size()
    valid = [p for p in kern.space() if not kern.violations(p, dev)]
    path = db.log_path(dev, kern.key, m, n, k)
    if fresh and path.exists():
        db.move_aside(path)
    records = list(db.read_log(path, kern))
    done = {_key(r["params"]): (r.get("gflops") if r["status"] == "ok" else None) for r in records}
    if strategy is None:   # the grid only where the budget covers it: kernel 7's first tunes
        # (budget 40 of 229 points) stopped in the grid's corner of 32-row tiles (session 14)
        strategy = "grid" if len(valid) <= min(200, budget or 200) else "tpe"
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    first = _winners(dev, kern, (m, n, k))
    strat: Strategy = (Grid(valid, done, seed, first) if strategy == "grid" else
                       RandomSearch(valid, done, seed) if strategy == "random" else
                       TPE(valid, done, seed, kern, dev, first=first))
    total = min(budget, len(valid)) if budget else len(valid)
    counts = {"raw": raw, "valid": len(valid), "rejected": raw - len(valid),
              "resumed": len(records), "strategy": strategy, "budget": total}

    ctx = mp.get_context("spawn")
    results = _Inbox(ctx)

    def start(wid: int) -> _Slot:
        tasks = ctx.Queue()
        pipe = results.open(wid)
        proc = ctx.Process(target=_worker, args=(wid, device_spec, kern.key, (m, n, k), repeat,
                                                 evaluator, tasks, pipe), daemon=True)
        # one BLAS thread per worker (many run at once); the caller's environment is restored
        saved = {v: os.environ.get(v) for v in _BLAS_THREADS}
        os.environ.update({v: "1" for v in _BLAS_THREADS})
        try:
            proc.start()
        finally:
            pipe.close()          # the worker has its own copy: its death then closes the pipe
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
        return _Slot(proc, tasks)

    slots = [start(w) for w in range(nworkers)]
    token: int | None = None            # which worker may use the device now
    waiting: list[int] = []             # workers compiled and waiting for the token
    t0 = time.time()
    evaluated = len(records)
    new = 0
    idx = 0
    exhausted = False
    best = max((r for r in records if r["status"] == "ok"), key=lambda r: r["gflops"], default=None)

    def finish(wid: int, rec: dict) -> None:
        nonlocal evaluated, new, best
        _, params = slots[wid].task
        rec = {"params": params, **rec, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        db.append_log(path, rec)
        records.append(rec)
        evaluated += 1
        new += 1
        strat.observe(params, rec.get("gflops") if rec["status"] == "ok" else None)
        if rec["status"] == "ok" and (best is None or rec["gflops"] > best["gflops"]):
            best = rec
        slots[wid].task, slots[wid].phase = None, "idle"
        if on_progress:
            on_progress({"done": evaluated, "total": total, "best": best,
                         "failures": sum(r["status"] != "ok" for r in records)})

    def release(wid: int) -> None:
        nonlocal token
        if token == wid:
            token = None
        if wid in waiting:
            waiting.remove(wid)

    def replace(wid: int, status: str, why: str) -> None:
        slot = slots[wid]
        if slot.proc.is_alive():
            slot.proc.kill()
        slot.proc.join(5)
        release(wid)
        if slot.task is not None:
            finish(wid, {"status": status, "error": why})
        slots[wid] = start(wid)

    if on_progress:
        on_progress({"done": evaluated, "total": total, "best": best,
                     "failures": sum(r["status"] != "ok" for r in records)})
    try:
        while True:
            out_of_time = time_limit is not None and time.time() - t0 > time_limit
            for wid, slot in enumerate(slots):     # hand out work
                if slot.task is None and not exhausted and not out_of_time:
                    busy = sum(s.task is not None for s in slots)
                    if evaluated + busy >= total:
                        break
                    p = strat.propose()
                    if p is None:
                        exhausted = True
                        break
                    idx += 1
                    slot.task, slot.phase, slot.since = (idx, p), "queued", time.time()
                    slot.tasks.put(("eval", idx, p))
            if all(s.task is None for s in slots):
                break
            if token is None and waiting:           # grant the device
                token = waiting.pop(0)
                slots[token].phase, slots[token].since = "run", time.time()
                cutoff = CUTOFF * best["ms_median"] if best is not None else None
                slots[token].tasks.put(("go", cutoff))
            try:
                kind, wid, _, payload = results.get(timeout=0.1)
            except queue_mod.Empty:
                kind = None
            if kind == "fatal":
                raise WorkerSetupError(f"tuning kernel {kern.key} at {db.shape_key(m, n, k)} "
                                       f"stopped: worker {wid} could not start ({payload})")
            current = slots[wid].task if kind else None
            if current is None or current[0] != _:
                kind = None                          # stale: from a worker since replaced
            if kind == "start":                      # the compile clock starts now, not
                slots[wid].phase, slots[wid].since = "compile", time.time()   # at spawn
            elif kind == "ready":
                waiting.append(wid)
                slots[wid].phase = "wait"              # waiting for the device: no timeout
            elif kind == "done":
                release(wid)
                finish(wid, payload)
            for wid, slot in enumerate(slots):      # crashes and hangs
                if slot.task is None:
                    continue
                if not slot.proc.is_alive():
                    replace(wid, "crashed", f"worker process died (exit code {slot.proc.exitcode}) "
                                            f"during {slot.phase}")
                elif slot.phase in ("compile", "run") and time.time() - slot.since > timeout:
                    replace(wid, "timeout", f"no result after {timeout:.0f} s of {slot.phase}")
                elif slot.phase == "queued" and time.time() - slot.since > 3 * timeout + 60:
                    replace(wid, "crashed", "worker did not start")
        seconds = time.time() - t0
        finalists = _remeasure(slots, results, records, timeout, (m, n, k))
        winner = None
        if finalists:
            winner = max(finalists, key=lambda f: f["gflops"])
        elif best is not None:
            winner = {"params": best["params"], "gflops": best["gflops"], "ms_median": best["ms_median"]}
        # the search ran every configuration with gemm()'s own split count: the finalists
        # (or the winner alone) now run with each count that could pay, all in one stage
        stage: list[dict] = []
        if winner is not None and kern.split_k:
            group = finalists or [winner]
            stage = _split_stage(slots, results, [f["params"] for f in group], timeout, (m, n, k))
            # a finalist the stage found wrong at any count is out (gemm() may launch it at
            # another count elsewhere); one it could not judge (failed, timed out, one count
            # where none had two) competes with its re-measured time
            wrong = [r["params"] for r in stage if r["status"] == "wrong"]
            ok = [r for r in stage if r["status"] == "ok" and r["params"] not in wrong]
            judged = [r["params"] for r in ok] + wrong
            pairs = ok + [f for f in group if f["params"] not in judged]
            top = pick_split(pairs) if pairs else None
            keep = ("params", "gflops", "ms_median", "ms_min", "ms_max") + \
                (() if top is None or top.get("only_count") else ("splits",))
            winner = None if top is None else {f: top[f] for f in keep if f in top}
    finally:
        for slot in slots:
            if slot.proc.is_alive():
                slot.tasks.put(None)
        for slot in slots:
            slot.proc.join(2)
            if slot.proc.is_alive():
                slot.proc.kill()

    res = Result(kern.key, (m, n, k), db.device_key(dev), str(path), counts, records, winner,
                 finalists, seconds, new, split_stage=stage)
    if winner is not None and update_db:
        extra = {"ms_median": winner["ms_median"], "date": time.strftime("%Y-%m-%d"),
                 "strategy": strategy, "evaluated": len(records)}
        if "splits" in winner:
            extra["splits"] = winner["splits"]
        resident = _residents(dev, kern, winner["params"])
        if resident:
            extra["resident"] = resident
        res.db = str(db.record_best(dev, kern.key, m, n, k, winner["params"], winner["gflops"], extra))
    return res


def pick_split(pairs: list[dict]) -> dict:
    """Of timed (configuration, slice count) pairs, those with "gflops" and, where the stage
    ran, "splits" (none: gemm()'s own count, 1 or so), the one with the fewest slices
    within SPLIT_MARGIN of the fastest; the faster on a tie."""
    fastest = max(p["gflops"] for p in pairs)
    return min((p for p in pairs if p["gflops"] >= fastest / SPLIT_MARGIN),
               key=lambda p: (p.get("splits", 1), -p["gflops"]))


def _check_fits(dev, kernel: str, m: int, n: int, k: int, nworkers: int) -> None:
    """Refuse, before any worker starts, a shape whose operands cannot be made, which would
    otherwise fail every configuration alike: each worker makes its own A, B and C, on the
    host and on the device (whose memory, for a CPU device, is the host's)."""
    try:
        operands.check_fits(dev, operands.gemm_shapes(m, n, k) * nworkers, host=True)
    except ValueError as e:
        raise ValueError(f"kernel {kernel} at {db.shape_key(m, n, k)} cannot be tuned with "
                         f"{nworkers} worker(s), each with its own operands: {e}") from None


def _residents(dev, kern: kernels.Kernel, params: dict) -> dict | None:
    """The winner's work-groups per compute unit (GemmPlan.residents), which lets gemm()
    predict its launches at shapes nobody tuned; None where the device does not say."""
    from .gemm import GemmPlan
    try:
        return GemmPlan(devmod.queue(dev), kern.key, params).residents()
    except (cl.Error, BuildError):
        return None


def _ask(slots, results, task: tuple, deadline_s: float) -> dict | None:
    """Run one of the workers' whole-device tasks ("remeasure", "splits") in a live worker
    and wait for its answer, which names the task's own index (a late answer to an earlier
    task is dropped); {"error": ...} if it raised, None if no worker is alive, it died, or
    `deadline_s` passed without the answer or an "alive" message from the task."""
    slot = next((s for s in slots if s.proc.is_alive()), None)
    if slot is None:
        return None
    slot.tasks.put(task)
    slot.tasks.put(("go", None))
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        try:
            kind, _, idx, payload = results.get(timeout=0.5)
        except queue_mod.Empty:
            if not slot.proc.is_alive():
                return None
            continue
        if kind == "done" and idx == task[1]:
            return payload
        if kind == "alive" and idx == task[1]:
            deadline = time.time() + deadline_s
    return None


def _step_deadline(timeout: float) -> float:
    """How long a whole-device task may go without a report: each step (a compile and
    check, or a round of timings) reports in, so a hung one is given up after this, however
    many steps the task has (one deadline per finalist and count was 45 minutes, session 12)."""
    return 2 * timeout + 10


def _remeasure(slots, results, records, timeout, shape) -> list[dict]:
    """Time the best five again, interleaved, in one worker: near-ties reorder under noise."""
    ok = sorted((r for r in records if r["status"] == "ok"), key=lambda r: -r["gflops"])[:5]
    if len(ok) < 2:
        return []
    params = [r["params"] for r in ok]
    payload = _ask(slots, results, ("remeasure", -1, params), _step_deadline(timeout))
    if payload is None or "error" in payload:
        return []
    out = [_timed(shape, ms, params=p) for p, ms in zip(params, payload["ms"])]
    return sorted(out, key=lambda f: -f["gflops"])


def _split_stage(slots, results, finalists: list[dict], timeout, shape) -> list[dict]:
    """The configurations with each slice count of k that could pay (Evaluator.split_counts),
    checked and timed interleaved: the tuner measures the split-K count where gemm()'s
    rule would guess it. [] where each has one count only; a record of status "failed" per
    configuration where the stage raised, "timeout" where it did not answer in time or lost
    its worker."""
    payload = _ask(slots, results, ("splits", -2, finalists), _step_deadline(timeout))
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
