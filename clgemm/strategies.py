"""Search strategies: which configuration the tuner measures next. Each proposes points of
the valid space (constraints and device limits applied) and is told each result. The tune
runs its strategy in a thread of its own, a few proposals ahead (`Proposer`), so that no
worker waits on the sampler."""

from __future__ import annotations

import math
import queue as queue_mod
import random
import threading
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from . import kernels
from .tunelog import key

NAMES = ("grid", "random", "tpe", "cma")
INSTALL_TUNE = 'pip install "clgemm[tune]"'


class MissingExtra(ImportError):
    """A strategy needs a package of an extra that is not installed."""


def optuna_module(cma: bool = False):
    """Optuna (and, with `cma`, the cmaes package its CMA-ES sampler runs on), or
    MissingExtra naming the install command."""
    try:
        import optuna
        if cma:
            import cmaes  # noqa: F401
    except ImportError as e:
        # name: the package missing (optuna, or cmaes beside an optuna installed alone)
        raise MissingExtra(f"the {'cma' if cma else 'tpe'} strategy needs {e.name}, which is "
                           f"not installed: {INSTALL_TUNE} (or choose --strategy random or "
                           f"grid)", name=e.name) from None
    return optuna


def choose(asked: str | None, n_valid: int, budget: int | None) -> tuple[str, str]:
    """(strategy, note). Unasked: the grid when the budget covers every valid point (kernel
    7's first tunes, budget 40 of 229 points, stopped in the grid's corner of 32-row tiles,
    2026-12-02), else CMA-ES (the most robust search on the complete kernel-5 sweep, CMA),
    else, without the tune extra, random search with a note saying so. Asked for a strategy
    whose package is missing: MissingExtra."""
    if asked is not None and asked not in NAMES:
        raise ValueError(f"unknown strategy {asked!r}; choose from {', '.join(NAMES)}")
    if asked in ("tpe", "cma"):
        optuna_module(cma=asked == "cma")
        return asked, ""
    if asked is not None:
        return asked, ""
    if n_valid <= min(200, budget or 200):
        return "grid", ""
    try:
        optuna_module(cma=True)
    except MissingExtra as e:
        return "random", (f"{e.name} is not installed, so this tune searches at random "
                          f"instead of with CMA-ES, which needs fewer evaluations; "
                          f"{INSTALL_TUNE} for it")
    return "cma", ""


def make(name: str, valid: list[dict], seen: Mapping[tuple, float | None], seed: int,
         kern: kernels.Kernel, dev, first: Sequence[dict] = ()) -> Strategy:
    if name == "grid":
        return Grid(valid, seen, seed, first)
    if name == "random":
        return RandomSearch(valid, seen, seed, first)
    if name == "cma":
        return CMA(valid, seen, seed, kern, dev, first=first)
    return TPE(valid, seen, seed, kern, dev, first=first)


class Strategy:
    """Proposes configurations; `observe` feeds results back (model-based ones learn)."""

    def __init__(self, valid: list[dict], seen: Mapping[tuple, float | None], seed: int):
        self.valid, self.seen, self.rng = valid, dict(seen), random.Random(seed)

    def propose(self) -> dict | None:
        raise NotImplementedError

    def observe(self, params: dict, gflops: float | None) -> None:
        self.seen[key(params)] = gflops


class Grid(Strategy):
    """Every valid point in declaration order, after `first` (the winners at other shapes
    and the defaults): a budget that stops a grid early still measures those."""

    def __init__(self, valid, seen, seed, first=()):
        super().__init__(valid, seen, seed)
        self._it = iter([p for p in first if p in valid] + list(valid))

    def propose(self):
        for p in self._it:
            if key(p) not in self.seen:
                self.seen[key(p)] = None
                return p
        return None


class RandomSearch(Grid):
    """The valid points in a random order, after `first`."""

    def __init__(self, valid, seen, seed, first=()):
        valid = list(valid)
        random.Random(seed).shuffle(valid)
        super().__init__(valid, seen, seed, first)


class _Model(Strategy):
    """A model-based search through an Optuna study over the declared parameter space,
    after `first` (the winners at other shapes: at 8192^3, 61 evaluations of a cold start
    missed the 4096^3 winner, which was 3-5% faster there). Points that break a constraint
    are told a score of 0 without being compiled; a point proposed again is told its
    score again; after 200 proposals in a row that bring nothing new, a plain random one."""

    def __init__(self, valid, seen, seed, kernel: kernels.Kernel, device, first=(), cma=False):
        super().__init__(valid, seen, seed)
        self.optuna = optuna_module(cma=cma)
        self.optuna.logging.set_verbosity(self.optuna.logging.WARNING)
        self.kernel, self.device = kernel, device
        self.pending: dict[tuple, list] = {}
        self._unvisited = [p for p in valid if key(p) not in self.seen]
        self.rng.shuffle(self._unvisited)
        self._first = [dict(p) for p in first
                       if key(p) not in self.seen and not kernel.violations(p, device)]

    def _ask(self):
        """(trial, configuration)."""
        raise NotImplementedError

    def _plain(self) -> dict | None:
        """An unvisited valid point, drawn at random."""
        while self._unvisited:
            p = self._unvisited.pop()
            if key(p) not in self.seen:
                self.seen[key(p)] = None
                return p
        return None

    def propose(self):
        while self._first:
            p = self._first.pop(0)
            if key(p) not in self.seen:
                self.seen[key(p)] = None
                return p
        for attempt in range(200):
            if attempt and attempt % self.stuck_after == 0:
                self._stuck()
            trial, p = self._ask()
            k = key(p)
            if self.kernel.violations(p, self.device):
                self.study.tell(trial, 0.0)
            elif k in self.seen and k not in self.pending:
                self.study.tell(trial, self.seen[k] or 0.0)
            elif k in self.pending:
                self.pending[k].append(trial)
            else:
                self.seen[k] = None
                self.pending[k] = [trial]
                return p
        return self._plain()

    stuck_after = 200

    def _stuck(self) -> None:
        """The model proposed nothing new `stuck_after` times in a row."""

    def observe(self, params, gflops):
        super().observe(params, gflops)
        trials = self.pending.pop(key(params), [])
        for trial in trials:          # each to its own study (CMA-ES may have restarted)
            trial.study.tell(trial, gflops or 0.0)
        if not trials:                # proposed outside the model (first, plain)
            self._outside(params, gflops)

    def _outside(self, params, gflops) -> None:
        pass


class TPE(_Model):
    """Optuna's Tree-structured Parzen Estimator, each parameter a categorical. Points
    measured before (a resumed log) and those proposed outside the model are added to its
    history."""

    def __init__(self, valid, seen, seed, kernel: kernels.Kernel, device, first=()):
        super().__init__(valid, seen, seed, kernel, device, first)
        optuna = self.optuna
        self.dists = {p.name: optuna.distributions.CategoricalDistribution(p.space)
                      for p in kernel.params}
        self.study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(
            seed=seed, constant_liar=True, n_startup_trials=10, multivariate=True))
        for p in valid:
            if key(p) in self.seen:
                self._outside(p, self.seen[key(p)])

    def _ask(self):
        trial = self.study.ask(self.dists)
        return trial, dict(trial.params)

    def _outside(self, params, gflops) -> None:
        self.study.add_trial(self.optuna.trial.create_trial(
            params=dict(params), distributions=self.dists, value=gflops or 0.0))


class CMA(_Model):
    """CMA-ES with margin (Optuna's CmaEsSampler on the cmaes package) over each
    parameter's position in its declared, ordered space, so that 64 lies between 32 and 128,
    after the warm-start points. Once it proposes only points measured already,
    `stuck_after` times in a row, it restarts with twice the population (IPOP), its
    distribution warm-started from the points measured so far (WS-CMA-ES: the sampler's
    `source_trials`, the top tenth of them; a fresh start below 10 points). On the complete
    kernel-5 sweep at 4096^3, evaluations to within 3% of the best over seeds 1-100: worst
    200 (4.9% of 4,088), median 78; restarted from scratch, worst 295 (7.2%), and 10 of the
    100 seeds past 5%; a space-filling warm-up or TPE did worse (docs/levers.md,
    2026-12-03). Where the sampler's arithmetic fails (cmaes divided by a collapsed step
    size on that sweep, seed 6, and went on with NaN), it restarts the same way."""

    def __init__(self, valid, seen, seed, kernel: kernels.Kernel, device, first=()):
        super().__init__(valid, seen, seed, kernel, device, first, cma=True)
        optuna = self.optuna
        self.values = {p.name: list(p.space) for p in kernel.params}
        self.dists = {n: optuna.distributions.IntDistribution(0, len(v) - 1)
                      for n, v in self.values.items()}
        self.seed, self.restarts = seed, 0
        self.popsize = 4 + int(3 * math.log(len(self.values)))   # CMA-ES's own default
        self._start()

    stuck_after = 20

    def _start(self) -> None:
        optuna = self.optuna
        measured = [optuna.trial.create_trial(params=x, distributions=self.dists, value=g)
                    for x, g in ((self._positions(k), g) for k, g in self.seen.items() if g)
                    if x is not None] if self.restarts else []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.CmaEsSampler(
                seed=self.seed + self.restarts, with_margin=True, warn_independent_sampling=False,
                popsize=self.popsize << min(self.restarts, 4),
                source_trials=measured if len(measured) >= 10 else None)
        self.study = optuna.create_study(direction="maximize", sampler=sampler)

    def _positions(self, k: tuple) -> dict | None:
        """A measured point as positions in the space; None if it lies outside (a log
        recorded before the registry changed)."""
        p = dict(k)
        if p.keys() != self.values.keys() or any(p[n] not in v for n, v in self.values.items()):
            return None
        return {n: v.index(p[n]) for n, v in self.values.items()}

    def _stuck(self) -> None:
        """Converged on points measured already: restart (IPOP: twice the population),
        warm-started from what was measured."""
        self.restarts += 1
        self._start()

    def _ask(self):
        try:
            with np.errstate(divide="raise", invalid="raise", over="raise"):
                trial = self.study.ask(self.dists)
        except ArithmeticError:       # numpy's FloatingPointError too: NaN would follow
            self._stuck()
            trial = self.study.ask(self.dists)
        return trial, {n: self.values[n][i] for n, i in trial.params.items()}


# ------------------------------------------------------------------ pipelining

_END = object()


class Proposer:
    """Runs a strategy in a thread of its own, up to `depth` proposals ahead of the
    workers, and feeds it the results as they come (before its next proposal). Only this
    thread touches the strategy. `take` never waits on the sampler."""

    def __init__(self, strategy: Strategy, depth: int):
        self.strategy = strategy
        self._ready: queue_mod.Queue = queue_mod.Queue(maxsize=max(1, depth))
        self._told: queue_mod.Queue = queue_mod.Queue()
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self.exhausted = False
        self._thread = threading.Thread(target=self._run, name="clgemm-proposer", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                params, gflops = self._told.get_nowait()
            except queue_mod.Empty:
                return
            self.strategy.observe(params, gflops)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._drain()
                p = self.strategy.propose()
                item = _END if p is None else p
                while not self._stop.is_set():
                    try:
                        self._ready.put(item, timeout=0.05)
                        break
                    except queue_mod.Full:
                        self._drain()
                if item is _END:
                    return
        except BaseException as e:      # noqa: BLE001 - raised again in the tune's thread
            self.error = e
            self._ready.put(_END)

    def take(self, wait: float = 0.0) -> dict | None | bool:
        """A proposal; None once the strategy has no more; False if none is ready yet."""
        if self.exhausted:
            return None
        try:
            item = self._ready.get(timeout=wait) if wait else self._ready.get_nowait()
        except queue_mod.Empty:
            return False
        if item is _END:
            self.exhausted = True
            if self.error is not None:
                raise self.error
            return None
        return item

    def observe(self, params: dict, gflops: float | None) -> None:
        self._told.put((params, gflops))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
