"""The search strategies and the usual remedies for a bad worst seed (a space-filling
warm-up, warm-started or plain restarts, TPE over ordered values), replayed offline on a
complete sweep with clgemm.replay: evaluations to within 3% of the best, for each seed.

    git show 4580a85:results/h200/tune/session2/kernel5-4096-grid-complete.jsonl > sweep.jsonl
    python scripts/search_remedies.py sweep.jsonl --seeds 1-100 --limit 4088 --out OUT.json \
        --only random,cma-cold-restarts,cma-startup32,cma-sobol16,cma-sobol16-warm-restarts,\
cma-random16-warm-restarts,cma-warm-restarts-fixed-pop,cma --sweep-from "git show 4580a85:..."
    python scripts/search_remedies.py sweep.jsonl --seeds 1-20 --limit 1000 --out OUT.json \
        --only tpe,tpe-ordered,tpe-sobol16

A second run into the same OUT adds its strategies to it, with its command. The Sobol
warm-ups need scipy (optuna's QMCSampler). Each variant is a small subclass of the
strategies in clgemm/strategies.py, on optuna's samplers; `cma` and `tpe` are the shipped
ones as they are in this tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import warnings
from multiprocessing import Pool

from clgemm import replay, strategies
from clgemm.tunelog import key


def _positions(strat, params):
    return {n: strat.values[n].index(v) for n, v in params.items()}


class CMAVariant(strategies.CMA):
    """`warmup` evaluations drawn by `warmup_sampler` first, the CMA-ES distribution then
    warm-started from them (WS-CMA-ES, `source_trials`); restarts warm-started or from
    scratch; the population doubled at each restart (IPOP) or not; or `startup` points
    drawn by a Sobol sampler that CMA-ES does not learn from (`n_startup_trials`)."""
    warmup, warmup_sampler, warm_restarts, grow, startup = 0, "sobol", True, True, 1

    def _start(self):
        o = self.optuna
        if self.warmup and not hasattr(self, "warm"):
            self.warm = self.study = o.create_study(direction="maximize", sampler=(
                o.samplers.RandomSampler(seed=self.seed) if self.warmup_sampler == "random"
                else o.samplers.QMCSampler(scramble=True, seed=self.seed,
                                           warn_independent_sampling=False)))
            return
        if self.warmup and self.study is self.warm:      # the end of the warm-up
            source = [t for t in self.warm.trials if t.state == o.trial.TrialState.COMPLETE]
        elif self.restarts and self.warm_restarts:
            source = [o.trial.create_trial(params=_positions(self, dict(k)), value=g,
                                           distributions=self.dists)
                      for k, g in self.seen.items() if g]
        else:
            source = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sampler = o.samplers.CmaEsSampler(
                seed=self.seed + self.restarts, with_margin=True, warn_independent_sampling=False,
                popsize=self.popsize << (min(self.restarts, 4) if self.grow else 0),
                source_trials=source if len(source) >= 10 else None,
                n_startup_trials=self.startup if not self.restarts else 1,
                independent_sampler=o.samplers.QMCSampler(
                    scramble=True, seed=self.seed, warn_independent_sampling=False)
                if self.startup > 1 else None)
        self.study = o.create_study(direction="maximize", sampler=sampler)

    def _ask(self):
        if self.warmup and self.study is self.warm:
            if sum(1 for t in self.warm.trials if t.value) >= self.warmup:
                self._start()
            else:
                trial = self.warm.ask(self.dists)
                return trial, {n: self.values[n][i] for n, i in trial.params.items()}
        return super()._ask()

    def _stuck(self):
        if not (self.warmup and self.study is self.warm):
            super()._stuck()


class TPEOrdered(strategies._Model):
    """Optuna's TPE (multivariate, constant liar) over each parameter's position in its
    ordered space instead of categoricals, after `warmup` Sobol evaluations told to it."""
    warmup = 0

    def __init__(self, valid, seen, seed, kernel, device, first=()):
        super().__init__(valid, seen, seed, kernel, device, first)
        o = self.optuna
        self.values = {p.name: list(p.space) for p in kernel.params}
        self.dists = {n: o.distributions.IntDistribution(0, len(v) - 1)
                      for n, v in self.values.items()}
        self.tpe = self.study = o.create_study(direction="maximize", sampler=o.samplers.TPESampler(
            seed=seed, constant_liar=True, multivariate=True,
            n_startup_trials=0 if self.warmup else 10))
        if self.warmup:
            self.warm = self.study = o.create_study(direction="maximize", sampler=o.samplers.QMCSampler(
                scramble=True, seed=seed, warn_independent_sampling=False))

    def _ask(self):
        if self.warmup and self.study is self.warm and \
                sum(1 for t in self.warm.trials if t.value) >= self.warmup:
            self.study = self.tpe
        trial = self.study.ask(self.dists)
        return trial, {n: self.values[n][i] for n, i in trial.params.items()}

    def observe(self, params, gflops):
        told = list(self.pending.get(key(params), []))
        super().observe(params, gflops)
        if any(t.study is not self.tpe for t in told):       # a warm-up point: TPE learns it
            self.tpe.add_trial(self.optuna.trial.create_trial(
                params=_positions(self, params), distributions=self.dists, value=gflops or 0.0))


def _variant(cls, **attrs):
    return lambda valid, seed, kern: type(cls.__name__, (cls,), attrs)(valid, {}, seed, kern, None)


VARIANTS = {
    "random": ("random search", lambda v, s, k: strategies.RandomSearch(v, {}, s)),
    "tpe": ("TPE over categoricals, 10 random points first (shipped)",
            lambda v, s, k: strategies.TPE(v, {}, s, k, None)),
    "tpe-ordered": ("TPE over ordered positions, 10 random points first", _variant(TPEOrdered)),
    "tpe-sobol16": ("TPE over ordered positions after 16 Sobol evaluations",
                    _variant(TPEOrdered, warmup=16)),
    "cma-cold-restarts": ("CMA-ES, IPOP restarts from scratch (the default before 2026-12-03)",
                          _variant(CMAVariant, warm_restarts=False)),
    "cma-startup32": ("CMA-ES after 32 Sobol points it does not learn from "
                      "(n_startup_trials), cold restarts",
                      _variant(CMAVariant, warm_restarts=False, startup=32)),
    "cma-sobol16": ("16 Sobol evaluations, CMA-ES warm-started from them, cold restarts",
                    _variant(CMAVariant, warmup=16, warm_restarts=False)),
    "cma-sobol16-warm-restarts": ("16 Sobol evaluations, CMA-ES warm-started from them, "
                                  "warm restarts", _variant(CMAVariant, warmup=16)),
    "cma-random16-warm-restarts": ("16 random evaluations, CMA-ES warm-started from them, "
                                   "warm restarts",
                                   _variant(CMAVariant, warmup=16, warmup_sampler="random")),
    "cma-warm-restarts-fixed-pop": ("CMA-ES, warm restarts without doubling the population",
                                    _variant(CMAVariant, grow=False)),
    "cma": ("CMA-ES, IPOP restarts warm-started from the measured points (shipped)",
            lambda v, s, k: strategies.CMA(v, {}, s, k, None)),
}

_LOADED: dict = {}


def _one(job):
    path, name, seed, within, limit = job
    warnings.simplefilter("ignore")          # optuna's experimental and deprecation notes
    if path not in _LOADED:
        _LOADED[path] = replay.load(path, "5")
    kern, points, table = _LOADED[path]
    best = max(g for g in table.values() if g)
    strat = VARIANTS[name][1](points, seed, kern)
    return name, seed, replay.evaluations_to_reach(strat, table, (1 - within) * best, limit)


def summary(counts: list, points: int, limit: int) -> dict:
    """Median, worst of the first five seeds, of each five and of all, in evaluations and
    in % of the space (a seed that did not get there within `limit` counts as limit + 1)."""
    c = [limit + 1 if n is None else n for n in counts]
    pct = lambda n: round(100 * n / points, 2)  # noqa: E731
    fives = [max(c[i:i + 5]) for i in range(0, len(c) - 4, 5)]
    return {"median": statistics.median(c), "worst_of_first_5": max(c[:5]), "worst": max(c),
            "worst_of_each_5_pct": [pct(n) for n in fives],
            "median_pct": pct(statistics.median(c)), "worst_of_first_5_pct": pct(max(c[:5])),
            "worst_pct": pct(max(c)), "seeds_past_5pct": sum(n > 0.05 * points for n in c)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep")
    ap.add_argument("--only", default=",".join(VARIANTS), help="comma-separated names")
    ap.add_argument("--seeds", default="1-20")
    ap.add_argument("--within", type=float, default=0.03)
    ap.add_argument("--limit", type=int, default=1000, help="evaluations per seed at most")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--out", help="a JSON file to write, or to add these strategies to")
    ap.add_argument("--sweep-from", default="", help="where the sweep comes from, for the record")
    a = ap.parse_args(argv)
    names, seeds = a.only.split(","), replay._seeds(a.seeds)
    _, points, table = replay.load(a.sweep, "5")
    jobs = [(a.sweep, n, s, a.within, a.limit) for n in names for s in seeds]
    found: dict = {}
    with Pool(a.jobs) as pool:
        for name, seed, n in pool.imap_unordered(_one, jobs):
            found[name, seed] = n
    command = "python scripts/search_remedies.py " + " ".join(argv or sys.argv[1:])
    out = {"sweep": a.sweep, "sweep_from": a.sweep_from, "points": len(points), "best_gflops": max(g for g in table.values() if g),
           "within": a.within, "commands": [], "strategies": {}}
    if a.out and os.path.exists(a.out):
        with open(a.out) as f:
            out = json.load(f)
    out["commands"].append(command)
    for name in names:
        counts = [found[name, s] for s in seeds]
        out["strategies"][name] = {"what": VARIANTS[name][0], "seeds": a.seeds, "limit": a.limit,
                                   "evaluations": counts, **summary(counts, len(points), a.limit)}
        r = out["strategies"][name]
        print(f"{name:28s} median {r['median_pct']:5.2f}%  worst of seeds 1-5 "
              f"{r['worst_of_first_5_pct']:5.2f}%  worst {r['worst_pct']:5.2f}%  past 5%: "
              f"{r['seeds_past_5pct']}/{len(counts)}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
