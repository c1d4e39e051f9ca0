"""Evaluators substituted into the tuner's worker processes by the tests."""

import os
import signal
import time

from clgemm import timing
from clgemm.build import BuildError
from clgemm.tune import Evaluator


class Faulty(Evaluator):
    """Kernel 2 for real, except: TS=8 kills its process as a driver crash would, TS=16 hangs,
    TS=4 fails to compile and TS=32 computes the wrong product (alpha = 2)."""

    def compile(self, params):
        if params["TS"] == 4:
            raise BuildError("planted compile error")
        return super().compile(params)

    def measure(self, plan, cutoff_ms=None):
        ts = plan.params["TS"]
        if ts == 8:
            os.kill(os.getpid(), signal.SIGKILL)   # no handler can intercept it (pocl traps SIGSEGV)
        if ts == 16:
            time.sleep(600)
        if ts == 32:
            bind = plan.bind
            plan.bind = lambda a, b, c, alpha=1.0, beta=0.0, **kw: bind(a, b, c, 2 * alpha, beta, **kw)
        return super().measure(plan, cutoff_ms)


def synthetic_gflops(params) -> float:
    """A smooth made-up landscape with one best point, so strategies can be compared."""
    target = {"TSM": 64, "TSN": 128, "TSK": 16, "WPTM": 8, "WPTN": 4, "WIDTH": 4, "PAD": 0}
    score = 1000.0
    for name, best in target.items():
        v = params[name]
        score -= 40 * abs((v.bit_length() if v else 0) - (best.bit_length() if best else 0))
    return max(score, 1.0)


class Synthetic(Evaluator):
    """No OpenCL work at all: a made-up speed per configuration, after `delay` seconds. No
    split stage either (a made-up plan has no slices of k)."""
    delay = 0.0

    def compile(self, params):
        return dict(params)

    def split_stage(self, finalists, alive=None):
        return {"records": []}

    def fresh_check(self, params):
        return 0.0, True, self.shape

    def measure(self, params, cutoff_ms=None):
        time.sleep(self.delay)
        g = synthetic_gflops(params)
        ms = timing.gflops(*self.shape, 1.0) / g
        return {"status": "ok", "rel_error": 0.0, "ms_median": ms, "ms_min": ms, "ms_max": ms,
                "gflops": g}

    def time(self, params, repeat=None, cutoff_ms=None):
        ms = timing.gflops(*self.shape, 1.0) / synthetic_gflops(params)
        return timing.Timing((ms,) * (repeat or self.repeat))


class SlowSynthetic(Synthetic):
    delay = 0.15


class PlantedSplits(Evaluator):
    """Kernel 5 compiled and checked for real, with planted timings by WIDTH and slices of
    k: with WIDTH 4, fastest at 8 slices and within 2% of that at 4; with WIDTH 1, slower
    unsplit (so it loses the search) but fastest of all at 4 slices."""
    ms = {4: {1: 10.0, 2: 5.0, 4: 4.0, 8: 3.95, 16: 6.0},
          1: {1: 12.0, 2: 4.0, 4: 3.0, 8: 3.5, 16: 5.0}}
    widths = (4,)             # the configurations whose timings are planted

    def time(self, plan, repeat=None, cutoff_ms=None):
        super().time(plan, repeat=1)        # the launch runs: its output is checked
        launched, _ = self.layout(plan)
        width = plan.params["WIDTH"] if plan.params["WIDTH"] in self.widths else 0
        ms = self.ms.get(width, {}).get(plan.splits(*launched), 20.0)
        return timing.Timing((ms,) * (repeat or self.repeat))


class DefaultsWarming(Evaluator):
    """Checked for real; planted times: the registry defaults at the count of slices gemm()
    takes unaided the fastest, a little faster at each later timing (a device warming
    up), so that each stage that times them gives them another figure."""
    runs = 0

    def time(self, plan, repeat=None, cutoff_ms=None):
        super().time(plan, repeat=1)
        launched, _ = self.layout(plan)
        ms = 5.0
        if plan.params == plan.kernel.defaults_for(self.queue.device):
            ms = 2.0
            if plan.splits(*launched) == self.unaided_count(plan.params):
                DefaultsWarming.runs += 1
                ms = 1.0 / (1 + 0.1 * DefaultsWarming.runs)
        return timing.Timing((ms,) * (repeat or self.repeat))


class PlantedSplitsTwo(PlantedSplits):
    widths = (4, 1)


class SmallTilesWin(Evaluator):
    """Checked for real; planted times: tiles of at most 16 x 16 take 1 ms whatever the
    slices of k, larger ones 10/S ms with S slices."""

    def time(self, plan, repeat=None, cutoff_ms=None):
        super().time(plan, repeat=1)
        launched, _ = self.layout(plan)
        small = plan.params["TSM"] * plan.params["TSN"] <= 16 * 16
        ms = 1.0 if small else 10.0 / plan.splits(*launched)
        return timing.Timing((ms,) * (repeat or self.repeat))


class OneBadPair(PlantedSplitsTwo):
    """PlantedSplitsTwo, except that the WIDTH 4 configuration fails to build at 2 slices
    (in the split stage only, where the count is given)."""

    def compile(self, params, split_k="auto"):
        if params["WIDTH"] == 4 and split_k == 2:
            raise BuildError("planted compile error")
        return super().compile(params, split_k)


class WrongInStage(SmallTilesWin):
    """SmallTilesWin, except that the split stage finds the small tiles wrong."""

    def measure(self, plan, cutoff_ms=None):
        if plan.split_k != "auto" and plan.params["TSM"] * plan.params["TSN"] <= 16 * 16:
            return {"status": "wrong", "rel_error": 1.0, "checked": "planted"}
        return super().measure(plan, cutoff_ms)


class HangInStage(PlantedSplitsTwo):
    """PlantedSplitsTwo, except that the WIDTH 1 configuration hangs at 4 slices in the
    split stage."""

    def measure(self, plan, cutoff_ms=None):
        if plan.params["WIDTH"] == 1 and plan.split_k == 4:
            time.sleep(600)
        return super().measure(plan, cutoff_ms)


class WrongAtEight(PlantedSplitsTwo):
    """PlantedSplitsTwo, except that the WIDTH 1 configuration (fastest of all at 4 slices)
    is wrong at 8 slices in the split stage."""

    def measure(self, plan, cutoff_ms=None):
        if plan.params["WIDTH"] == 1 and plan.split_k == 8:
            return {"status": "wrong", "rel_error": 1.0, "checked": "planted"}
        return super().measure(plan, cutoff_ms)


class AllWrongInStage(PlantedSplitsTwo):
    """PlantedSplitsTwo, except that every launch of the split stage is wrong."""

    def measure(self, plan, cutoff_ms=None):
        if plan.split_k != "auto":
            return {"status": "wrong", "rel_error": 1.0, "checked": "planted"}
        return super().measure(plan, cutoff_ms)


class SlowRounds(Synthetic):
    """Synthetic, except that each timing in the finalists' re-measure takes 0.5 s: a
    round of five finalists 2.5 s, the whole re-measure 12.5 s, every round reporting in."""

    def time(self, params, repeat=None, cutoff_ms=None):
        time.sleep(0.5)
        return super().time(params, repeat, cutoff_ms)


class HangInRemeasure(Synthetic):
    """Synthetic, except that the finalists' re-measure never returns."""

    def time(self, params, repeat=None, cutoff_ms=None):
        time.sleep(600)


class DefaultsFastest(Synthetic):
    """Synthetic, except that kernel 5's defaults for this device (the CPU ones on pocl,
    which the search's warm start leaves for last) are the fastest of all."""

    def measure(self, params, cutoff_ms=None):
        from clgemm import device, kernels
        rec = super().measure(params, cutoff_ms)
        if params == kernels.get("5").defaults_for(device.select()):
            rec.update(gflops=2 * rec["gflops"], ms_median=rec["ms_median"] / 2,
                       ms_min=rec["ms_min"] / 2, ms_max=rec["ms_max"] / 2)
        return rec

    def remeasure(self, finalists, alive=lambda: None):
        return {"ms": [[self.measure(p)["ms_median"]] * 3 for p in finalists]}


class SlowSixteen(Synthetic):
    """Kernel 2, made up: TS=16 takes 4 s to time (longer than a --timeout of 2 s), the
    others none; the larger the tile, the faster."""

    def measure(self, params, cutoff_ms=None):
        if params["TS"] == 16:
            time.sleep(4)
        ms = timing.gflops(*self.shape, 1.0) / params["TS"]
        return {"status": "ok", "rel_error": 0.0, "ms_median": ms, "ms_min": ms, "ms_max": ms,
                "gflops": float(params["TS"])}


class DefaultsWrongAndFast(DefaultsFastest):
    """DefaultsFastest, but the defaults' product is wrong (and 10x faster for it)."""

    def measure(self, params, cutoff_ms=None):
        from clgemm import device, kernels
        rec = super().measure(params, cutoff_ms)
        if params == kernels.get("5").defaults_for(device.select()):
            rec.update(status="wrong", rel_error=1.0, gflops=5 * rec["gflops"],
                       ms_median=rec["ms_median"] / 5, ms_min=rec["ms_min"] / 5,
                       ms_max=rec["ms_max"] / 5)
        return rec


class SlowCompile(Synthetic):
    """Synthetic, but every compile takes 20 s: a time limit falls while they run."""

    def compile(self, params):
        time.sleep(20)
        return dict(params)


class CutoffSpy(Synthetic):
    """Synthetic, each record also keeping the cutoff its timing was given."""

    def measure(self, params, cutoff_ms=None):
        return {**super().measure(params, cutoff_ms), "cutoff_ms": cutoff_ms}


class DiesAtStart(Synthetic):
    """Its worker process dies while starting, before its first task, as a worker that cannot
    start at all does (a sandbox that kills every child, say)."""

    def __init__(self, *args, **kwargs):
        os._exit(255)


class FirstDiesAtStart(Synthetic):
    """The first worker started dies before its first task; the others run."""

    def __init__(self, *args, **kwargs):
        marker = os.path.join(os.environ["CLGEMM_HOME"], "first-worker-died")
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            super().__init__(*args, **kwargs)
            return
        os._exit(255)


class WrongAtTileEight(Evaluator):
    """Kernel 2 for real, except that TS=8 computes the wrong product (alpha = 2) at every
    step, the finalists' check included: a build whose kernel changed since a log said
    TS=8 was correct."""

    def compile(self, params, split_k="auto"):
        plan = super().compile(params, split_k)
        if params["TS"] == 8:
            bind = plan.bind
            plan.bind = lambda a, b, c, alpha=1.0, beta=0.0, **kw: bind(a, b, c, 2 * alpha, beta, **kw)
        return plan


class WrongDefaultsUnjudged(Evaluator):
    """Kernel 3 for real, except that this device's defaults compute the wrong product
    (alpha = 2), and a re-measure that takes a reference beside the finalists fails, as one
    whose reference crashes its worker does: the defaults are then never checked."""

    def _defaults(self, params) -> bool:
        from clgemm import kernels
        return dict(params) == kernels.tunable(self.kernel).defaults_for(self.queue.device)

    def compile(self, params, split_k="auto"):
        plan = super().compile(params, split_k)
        if self._defaults(params):
            bind = plan.bind
            plan.bind = lambda a, b, c, alpha=1.0, beta=0.0, **kw: bind(a, b, c, 2 * alpha, beta, **kw)
        return plan

    def remeasure(self, finalists, alive=lambda: None):
        if len(finalists) > 5:
            raise RuntimeError("planted: the reference crashed the worker")
        return super().remeasure(finalists, alive)


class NoLongerBuildsFour(Evaluator):
    """Kernel 2 for real, except that TS=4 no longer builds: a configuration a log of an
    older build says is correct."""

    def compile(self, params, split_k="auto"):
        if params["TS"] == 4:
            raise BuildError("planted: this build cannot compile TS=4")
        return super().compile(params, split_k)
