"""Search strategies: which configuration the tuner measures next. Each proposes points of
the valid space (constraints and device limits applied) and is told each result. The tune
runs its strategy in a thread of its own, a few proposals ahead (`Proposer`), so that no
worker waits on the sampler."""

from __future__ import annotations

import queue as queue_mod
import random
import threading
from collections.abc import Mapping, Sequence

from . import kernels
from .tunelog import key

NAMES = ("grid", "random", "tpe")
INSTALL_TUNE = 'pip install "clgemm[tune]"'
# TPE starts with this many configurations drawn at random from the valid space (after the
# warm-start points): on the complete kernel-5 sweep at 4096^3 (4,088 points), 30 made
# the worst of 5 seeds reach 3% of the best in ... evaluations (docs/levers.md, 2026-12-03)
TPE_WARMUP = 30


class MissingExtra(ImportError):
    """A strategy needs a package of an extra that is not installed."""


def optuna_module():
    """Optuna, or MissingExtra naming the install command."""
    try:
        import optuna
    except ImportError:
        raise MissingExtra(f"the tpe strategy needs optuna, which is not installed: "
                           f"{INSTALL_TUNE} (or choose --strategy random or grid)") from None
    return optuna


def choose(asked: str | None, n_valid: int, budget: int | None) -> tuple[str, str]:
    """(strategy, note). Unasked: the grid when the budget covers every valid point (kernel
    7's first tunes, budget 40 of 229 points, stopped in the grid's corner of 32-row tiles,
    2026-12-02), else TPE, else, without optuna, random search with a note saying so. Asked
    for TPE without optuna: MissingExtra."""
    if asked is not None and asked not in NAMES:
        raise ValueError(f"unknown strategy {asked!r}; choose from {', '.join(NAMES)}")
    if asked == "tpe":
        optuna_module()
        return "tpe", ""
    if asked is not None:
        return asked, ""
    if n_valid <= min(200, budget or 200):
        return "grid", ""
    try:
        optuna_module()
    except MissingExtra:
        return "random", (f"optuna is not installed, so this tune searches at random instead "
                          f"of with TPE, which needs fewer evaluations; {INSTALL_TUNE} for it")
    return "tpe", ""


def make(name: str, valid: list[dict], seen: Mapping[tuple, float | None], seed: int,
         kern: kernels.Kernel, dev, first: Sequence[dict] = ()) -> Strategy:
    if name == "grid":
        return Grid(valid, seen, seed, first)
    if name == "random":
        return RandomSearch(valid, seen, seed, first)
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


class TPE(Strategy):
    """Optuna's Tree-structured Parzen Estimator over the declared parameter space, after
    `first` (the winners at other shapes: at 8192^3, 61 evaluations of a cold start missed
    the 4096^3 winner, which was 3-5% faster there) and `warmup` points drawn at random
    from the valid space, which keep one seed's early luck from steering the model into a
    corner. Points that break a constraint are told a score of 0 without being compiled;
    points measured before (a resumed log) warm-start the model."""

    def __init__(self, valid, seen, seed, kernel: kernels.Kernel, device, first=(),
                 warmup: int = TPE_WARMUP):
        super().__init__(valid, seen, seed)
        optuna = optuna_module()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        self.kernel, self.device = kernel, device
        self.dists = {p.name: optuna.distributions.CategoricalDistribution(p.space)
                      for p in kernel.params}
        self.study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(
            seed=seed, constant_liar=True, n_startup_trials=10, multivariate=True))
        self.pending: dict[tuple, list] = {}
        for p in valid:
            if key(p) in self.seen:
                self._add(p, self.seen[key(p)])
        self._unvisited = [p for p in valid if key(p) not in self.seen]
        self.rng.shuffle(self._unvisited)
        self._first = [dict(p) for p in first
                       if key(p) not in self.seen and not kernel.violations(p, device)]
        # the warm-up counts what a resumed log already measured
        self._warmup = max(0, warmup - len(self.seen))

    def _add(self, p: dict, gflops: float | None) -> None:
        self.study.add_trial(self.optuna.trial.create_trial(
            params=dict(p), distributions=self.dists, value=gflops or 0.0))

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
        if self._warmup > 0:
            self._warmup -= 1
            p = self._plain()
            if p is not None:
                return p
        for _ in range(200):
            trial = self.study.ask(self.dists)
            p = dict(trial.params)
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
        return self._plain()          # the model keeps repeating itself: sample plainly

    def observe(self, params, gflops):
        super().observe(params, gflops)
        trials = self.pending.pop(key(params), [])
        for trial in trials:
            self.study.tell(trial, gflops or 0.0)
        if not trials:                # proposed outside the model (first, warm-up, plain)
            self._add(params, gflops)


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
