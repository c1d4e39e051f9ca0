"""The tuner's search: every evaluation logged and the winner fed to gemm(), a rerun
resuming and --fresh starting over, the strategies and their budgets and time limit, warm
starts from the database's winners, and what `clgemm tune` prints and exports."""

import json
import os
import time

import numpy as np
import pytest
from click.testing import CliRunner

import clgemm
from clgemm import db, entries, kernels, tunelog, verify
from clgemm.cli import main
from clgemm.gemm import GemmPlan
from clgemm.tunelog import to_t4
from clgemm.tune import tune

from .evaluators import synthetic_gflops
from .tune_helpers import statuses


pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


def test_grid_records_everything_and_feeds_gemm(queue):
    res = tune("2", 40, 40, 40, strategy="grid", workers=2, repeat=2)
    s = res.summary()
    assert s["raw"] == 4 and s["valid"] == 4 and s["evaluated_now"] == 4
    assert set(statuses(res).values()) == {"ok"}
    lines = [json.loads(x) for x in open(res.log)]
    assert len(lines) == 4 and all(x["schema"] == db.SCHEMA for x in lines)
    assert all(x["ms_min"] <= x["ms_median"] <= x["ms_max"] for x in lines)
    assert len(res.finalists) == 4 and res.best["params"] in [x["params"] for x in lines]
    # the winner is now what gemm() and run use on this device, for this and nearby shapes
    plan = GemmPlan(queue, "2", shape=(50, 37, 41))
    assert plan.source == "tuned" and plan.params == res.best["params"]
    a, b = verify.random_matrix(np.random.default_rng(), 50, 41), verify.random_matrix(np.random.default_rng(), 41, 37)
    c = clgemm.gemm(queue, a, b, kernel=2)
    assert verify.rel_error(c, verify.reference(a, b)) <= verify.tolerance(41)


def test_rerun_resumes_and_fresh_starts_over():
    first = tune("2", 24, 24, 24, strategy="grid", workers=1, repeat=2)
    again = tune("2", 24, 24, 24, strategy="grid", workers=1, repeat=2)
    assert again.summary()["evaluated_now"] == 0 and again.summary()["resumed"] == 4
    fresh = tune("2", 24, 24, 24, strategy="grid", workers=1, repeat=2, fresh=True)
    assert fresh.summary()["evaluated_now"] == 4 and fresh.summary()["resumed"] == 0
    kept = [p for p in os.listdir(os.path.dirname(first.log)) if p.startswith("kernel2-24x24x24.")]
    assert len(kept) == 2       # the new log and the renamed old one: nothing deleted


@pytest.mark.parametrize("strategy", ["random", "tpe", "cma"])
def test_budgeted_strategies(strategy):
    res = tune("5", 64, 64, 64, strategy=strategy, budget=25, workers=2, seed=3,
               evaluator="tests.evaluators:Synthetic", update_db=False)
    ps = [r["params"] for r in res.records]
    assert len(ps) == 25 and len({tuple(sorted(p.items())) for p in ps}) == 25
    k = kernels.get("5")
    assert all(entries.valid_params(k, p) == p for p in ps)
    assert res.best["gflops"] == pytest.approx(max(synthetic_gflops(p) for p in ps))


def test_a_budget_short_of_the_grid_takes_the_model_and_a_grid_starts_from_the_winners(queue):
    """Auto strategy: a grid only when the budget covers every valid point. A grid cut short
    by its budget still measures the defaults this device gets (the registry's TS=32, the
    grid's last point, on a GPU; TS=8 on pocl)."""
    k2 = kernels.get("2")
    valid = [p for p in k2.space() if not k2.violations(p, queue.device)]
    assert valid[-1] == k2.defaults
    short = tune("2", 40, 40, 40, budget=len(valid) - 1, workers=1, repeat=2,
                 evaluator="tests.evaluators:Synthetic", update_db=False)
    assert short.counts["strategy"] == "cma"
    whole = tune("2", 40, 40, 40, budget=len(valid), workers=1, repeat=2, fresh=True,
                 evaluator="tests.evaluators:Synthetic", update_db=False)
    assert whole.counts["strategy"] == "grid"
    first = tune("2", 40, 40, 40, strategy="grid", budget=1, workers=1, repeat=2, fresh=True,
                 evaluator="tests.evaluators:Synthetic", update_db=False)
    assert [r["params"] for r in first.records] == [k2.defaults_for(queue.device)]


def test_time_limit_stops_the_sweep():
    t0 = time.time()
    res = tune("5", 64, 64, 64, strategy="random", time_limit=2, workers=2,
               evaluator="tests.evaluators:SlowSynthetic", update_db=False)
    assert 0 < len(res.records) < 200 and time.time() - t0 < 30


def test_time_limit_stops_the_compiles_under_way():
    """Past --time-limit only an evaluation already timing on the device finishes: compiles
    under way (20 s each here) are stopped and not recorded, instead of each running up to
    --timeout past the limit."""
    t0 = time.time()
    res = tune("5", 64, 64, 64, strategy="random", budget=8, time_limit=1, workers=2,
               timeout=60, evaluator="tests.evaluators:SlowCompile", update_db=False)
    assert time.time() - t0 < 15
    assert res.stopped_by == "time limit" and res.records == [] and res.best is None


def test_a_resumed_record_timed_impossibly_fast_sets_no_cutoff():
    """The cutoff that gives a slow configuration a single timed run comes from this run's
    measurements: a resumed record 1000x faster than anything (another build, an edited log)
    used to set it for every new configuration."""
    first = tune("5", 64, 64, 64, strategy="random", budget=2, workers=1, seed=1,
                 evaluator="tests.evaluators:CutoffSpy", update_db=False)
    log = first.log
    lines = open(log).read().splitlines()
    forged = json.loads(lines[-1])
    forged["ms_median"] /= 1000
    forged["gflops"] *= 1000
    open(log, "a").write(json.dumps(forged) + "\n")
    res = tune("5", 64, 64, 64, strategy="random", budget=8, workers=1, seed=1,
               evaluator="tests.evaluators:CutoffSpy", update_db=False)
    new = [r for r in res.records if "cutoff_ms" in r][2:]
    assert len(new) == 6
    real = min(r["ms_median"] for r in new)
    assert all(r["cutoff_ms"] is None or r["cutoff_ms"] >= real for r in new), new


def test_tune_cli_json_and_table():
    r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--size", "20", "--workers", "1",
                                  "--repeat", "2", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output.strip().splitlines()[-1])
    assert s["valid"] == 4 and s["best"]["gflops"] > 0 and s["status_counts"] == {"ok": 4}
    r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--size", "20", "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert "4 raw, 4 valid" in r.output and "top configurations" in r.output
    assert "winner after re-measuring" in r.output
    r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--strategy", "annealing"])
    assert r.exit_code != 0 and "annealing" in r.output


def test_export_t4(tmp_path):
    """Every evaluation, failures included, in the T4 results format."""
    out = tmp_path / "t4.json"
    r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--size", "20", "--workers", "1",
                                  "--repeat", "3", "--json", "--export-t4", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == "1.0.0" and doc["metadata"]["kernel"] == "2"
    assert sorted(x["configuration"]["TS"] for x in doc["results"]) == [4, 8, 16, 32]
    for x in doc["results"]:
        assert x["invalidity"] == "correct" and x["correctness"] == 1 and x["objectives"] == ["time"]
        runs = x["times"]["runtimes"]     # 1 where the slow-configuration cutoff applied
        assert len(runs) in (1, 3) and x["times"]["compilation_time"] > 0
        time_ms = next(m for m in x["measurements"] if m["name"] == "time")
        assert time_ms["unit"] == "ms" and time_ms["value"] == sorted(runs)[len(runs) // 2]
        assert "timestamp" in x
    r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--size", "20", "--export-t4",
                                  str(tmp_path / "no-such-folder" / "t4.json")])
    assert r.exit_code != 0 and "not a writable folder" in r.output and "Traceback" not in r.output
    failed = to_t4([{"params": {"TS": 8}, "status": "crashed", "error": "died"},
                       {"params": {"TS": 4}, "status": "wrong", "rel_error": 1.0}], {})
    assert [x["invalidity"] for x in failed["results"]] == ["runtime", "correctness"]
    assert all(x["correctness"] == 0 and x["measurements"] == [] for x in failed["results"])


def test_log_lines_the_export_or_the_resume_cannot_read_are_skipped(queue, tmp_path):
    """A log line whose compile_s, ms, at or error has the wrong type (the T4 export
    multiplied a string), or one nested too deep to parse (the resume raised
    RecursionError), is skipped with a warning naming the file and line; the export and
    the tune go on."""
    log = db.log_path(queue.device, "2", 20, 20, 20)
    log.parent.mkdir(parents=True, exist_ok=True)
    good = {"schema": 1, "status": "ok", "params": {"TS": 4}, "ms_median": 1.0, "ms_min": 1.0,
            "ms_max": 1.0, "gflops": 1.0, "compile_s": 0.5, "ms": [1.0], "at": "x"}
    lines = [json.dumps({**good, "compile_s": "fast"}), json.dumps({**good, "ms": 5}),
             json.dumps({**good, "error": 3}), "[" * 100000 + "]" * 100000, json.dumps(good)]
    log.write_text("\n".join(lines) + "\n")
    with pytest.warns(db.DataWarning) as seen:
        kept = list(tunelog.read_log(log, kernels.get("2")))
    assert [r["params"] for r in kept] == [{"TS": 4}]
    said = " ".join(str(w.message) for w in seen)
    assert all(f"line {no} ignored" in said for no in (1, 2, 3, 4)) and "nested too deeply" in said
    out = tmp_path / "t4.json"
    r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--size", "20", "--workers", "1",
                                  "--repeat", "2", "--export-t4", str(out)])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert len(json.loads(out.read_text())["results"]) == 4


def test_tpe_proposes_the_winners_at_other_shapes_first(queue):
    """Warm start: the database's winners (nearest shape first) are evaluated before the
    model's own proposals; invalid or already measured ones are skipped."""
    from clgemm import kernels
    from clgemm.strategies import TPE
    kern = kernels.get("5")
    valid = [p for p in kern.space() if not kern.violations(p, queue.device)][:400]
    w1, w2, measured = valid[123], valid[7], valid[50]
    bad = dict(valid[0], WPTM=32, WPTN=32)              # breaks the register cap
    strat = TPE(valid, {tuple(sorted(measured.items())): 5.0}, 0, kern, queue.device,
                first=[w1, bad, measured, w2])
    assert strat.propose() == w1
    assert strat.propose() == w2
    third = strat.propose()
    assert third not in (w1, w2, measured)


def test_warm_start_points_are_the_winners_nearest_first_then_the_defaults(queue, tmp_path, monkeypatch):
    from clgemm import kernels
    from clgemm.tune import _winners
    dev = queue.device
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"schema": 1, "device": db.device_key(dev), "entries": {
        "2": {"1000x1000x1000": {"params": {"TS": 8}, "gflops": 3.0},
              "100x100x100": {"params": {"TS": 16}, "gflops": 5.0},
              "120x100x100": {"params": {"TS": 16}, "gflops": 4.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [shipped])
    default = kernels.get("2").defaults_for(dev)     # this kind of device's, which gemm() runs
    for shape, want in (((90, 90, 90), [{"TS": 16}, {"TS": 8}]), ((900, 900, 900), [{"TS": 8}, {"TS": 16}])):
        assert _winners(dev, kernels.get("2"), shape) == want + ([default] if default not in want else [])


def test_a_budget_of_one_checks_what_gemm_runs(queue):
    """With nothing tuned, the first configuration a tune evaluates is the one gemm() runs on
    this device: the registry's GPU defaults came first, and on pocl a budget of one spent
    itself on them (0.05x the CPU defaults) and then recorded nothing."""
    from clgemm.gemm import GemmPlan
    res = tune("2", 16, 16, 16, budget=1, workers=1, repeat=2, update_db=False)
    assert [r["params"] for r in res.records] == [GemmPlan(queue, "2").params]


def test_kernels_with_the_same_parameters_start_from_each_others_winners(queue, tmp_path, monkeypatch):
    """Kernel 6 is kernel 5 with another epilogue: 5's winners follow 6's own, and the
    other way round; kernel 4, whose parameters have the same names, is no sibling."""
    from clgemm.tune import _winners
    dev = queue.device
    p = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, PAD=0)
    own6, near5, far5, of4 = (dict(p, WIDTH=w, TSK=t) for w, t in ((1, 8), (2, 8), (4, 8), (4, 16)))
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"schema": 1, "device": db.device_key(dev), "entries": {
        "6": {"900x900x900": {"params": own6, "gflops": 1.0}},
        "5": {"100x100x100": {"params": near5, "gflops": 1.0},
              "2000x2000x2000": {"params": far5, "gflops": 1.0}},
        "4": {"100x100x100": {"params": of4, "gflops": 1.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [shipped])
    assert _winners(dev, kernels.get("6"), (90, 90, 90)) == [own6, near5, far5, kernels.get("6").defaults_for(dev)]
    assert _winners(dev, kernels.get("5"), (90, 90, 90))[:3] == [near5, far5, own6]
    assert of4 not in _winners(dev, kernels.get("5"), (90, 90, 90))


def test_a_short_tune_never_records_slower_than_what_gemm_had(queue, monkeypatch):
    """Planted: this device's defaults, what gemm() launched at the shape, are the fastest,
    but a budget of one measures something else (here the registry's GPU defaults, which
    the warm start put first until it took the device's own). The defaults are checked and
    timed beside it in the finals, so they are what the database records (a budget of one
    on pocl recorded a configuration at 0.4x them); with a budget that measures them too,
    the same; and a budget of one now checks them first."""
    from clgemm import tune as tune_mod
    mine = kernels.get("5").defaults_for(queue.device)
    gpu = kernels.get("5").defaults
    if mine == gpu:        # a GPU: the planted case needs a device with defaults of its own
        pytest.skip("needs a CPU device, whose defaults differ from the registry's GPU ones")
    opts = dict(strategy="random", workers=1, evaluator="tests.evaluators:DefaultsFastest")
    with monkeypatch.context() as m:
        m.setattr(tune_mod, "_winners", lambda dev, kern, shape: [dict(gpu), dict(mine)])
        res = tune("5", 64, 64, 64, budget=1, **opts)
    assert [r["params"] for r in res.records] == [gpu]
    assert res.best["params"] == mine and not res.kept
    assert db.lookup(queue.device, "5", 64, 64, 64) == ("5", mine)
    res = tune("5", 64, 64, 64, budget=2, **opts)   # the warm start's next: the defaults
    assert res.best["params"] == mine and db.lookup(queue.device, "5", 64, 64, 64) == ("5", mine)
    res = tune("5", 48, 48, 48, budget=1, **opts)
    assert [r["params"] for r in res.records] == [mine] and res.best["params"] == mine


def test_a_reference_wrong_here_is_never_recorded(queue):
    """Planted: this device's defaults compute a wrong product here, and time 10x faster
    for it. They are timed beside the finalists (for the closing table), but the search
    found them wrong: the winner is a checked configuration."""
    mine = kernels.get("5").defaults_for(queue.device)
    res = tune("5", 64, 64, 64, strategy="random", budget=4, workers=1,
               evaluator="tests.evaluators:DefaultsWrongAndFast")
    assert {r["status"] for r in res.records if r["params"] == mine} == {"wrong"}
    assert res.best["params"] != mine and not res.kept
    assert db.lookup(queue.device, "5", 64, 64, 64)[1] == res.best["params"]


def test_a_resumed_record_this_build_computes_wrong_is_never_recorded(queue):
    """A log line says TS=8 was correct and fastest (an older build, a hand edit); this
    build computes it wrong. Resumed, it is never measured by the search, but the
    finalists are checked before one is recorded: it is logged wrong and a checked
    configuration wins."""
    tunelog.append_log(db.log_path(queue.device, "2", 64, 64, 64),
                       {"params": {"TS": 8}, "status": "ok", "ms_median": 1e-3, "ms_min": 1e-3,
                        "ms_max": 1e-3, "gflops": 524.0, "at": "2026-11-01T00:00:00"})
    res = tune("2", 64, 64, 64, strategy="grid", workers=1, repeat=2,
               evaluator="tests.evaluators:WrongAtTileEight")
    assert res.best is not None and res.best["params"] != {"TS": 8}
    assert db.lookup(queue.device, "2", 64, 64, 64)[1] == res.best["params"]
    last = [r for r in tunelog.read_records(db.log_path(queue.device, "2", 64, 64, 64),
                                            kernels.tunable("2")) if r["params"] == {"TS": 8}]
    assert last[-1]["status"] == "wrong" and last[-1]["rel_error"] > 0.5
    # and the next resume takes that record: TS=8 stays out
    again = tune("2", 64, 64, 64, strategy="grid", workers=1, repeat=2,
                 evaluator="tests.evaluators:WrongAtTileEight")
    assert again.best["params"] != {"TS": 8}


def test_a_resumed_reference_never_checked_here_is_not_recorded(queue):
    """The log says five configurations and the defaults are correct, the five logged
    faster than the defaults (so these are the finalists), and all far faster than anything
    runs here; this build computes the defaults wrong, and the re-measure beside them fails,
    so only the five are checked and timed. The defaults' logged speed beat the five's
    real one, and the defaults went into the database: now, never checked here, they leave
    the database as it was, and the tune says so."""
    kern = kernels.tunable("3")
    mine = kern.defaults_for(queue.device)
    others = [p for p in kern.space() if p != mine and not kern.violations(p, queue.device)][:5]
    path = db.log_path(queue.device, "3", 32, 32, 32)
    for i, p in enumerate(others + [mine]):
        g = 500.0 if p == mine else 1000.0 + i
        tunelog.append_log(path, {"params": p, "status": "ok", "ms_median": 1e-3, "ms_min": 1e-3,
                                  "ms_max": 1e-3, "gflops": g})
    res = tune("3", 32, 32, 32, strategy="grid", budget=6, workers=1, repeat=2,
               evaluator="tests.evaluators:WrongDefaultsUnjudged")
    assert res.best is not None and res.best["params"] != mine
    assert "the database is left as it was" in res.kept
    assert db.lookup(queue.device, "3", 32, 32, 32) is None


def _logged_ok(queue, kernel, shape, points):
    path = db.log_path(queue.device, kernel, *shape)
    for params, g in points:
        tunelog.append_log(path, {"params": params, "status": "ok", "ms_median": 1e-3,
                                  "ms_min": 1e-3, "ms_max": 1e-3, "gflops": g})
    return path


def test_a_finalist_this_build_cannot_compile_costs_only_itself(queue):
    """Every record resumed; the fastest no longer builds. It is logged so, and the other
    finalists are checked, timed and one recorded (its failure had ended the whole
    re-measure, and with it the tune's winner)."""
    path = _logged_ok(queue, "2", (32, 32, 32), [({"TS": ts}, g) for ts, g in
                                                 ((4, 900.0), (8, 800.0), (16, 700.0), (32, 600.0))])
    res = tune("2", 32, 32, 32, strategy="grid", workers=1, repeat=2,
               evaluator="tests.evaluators:NoLongerBuildsFour")
    assert res.evaluated_now == 0 and len(res.finalists) == 3
    assert res.best["params"] != {"TS": 4}
    assert db.lookup(queue.device, "2", 32, 32, 32)[1] == res.best["params"]
    last = [r for r in tunelog.read_records(path, kernels.tunable("2")) if r["params"] == {"TS": 4}]
    assert last[-1]["status"] == "compile_error"


def test_when_every_resumed_record_is_wrong_here_the_tune_says_why(queue):
    """The only record, resumed as correct, is wrong in this build: no winner, and the
    reason names the finals, not 'no configuration was correct'."""
    _logged_ok(queue, "2", (48, 48, 48), [({"TS": 8}, 800.0)])
    res = tune("2", 48, 48, 48, strategy="grid", budget=1, workers=1, repeat=2,
               evaluator="tests.evaluators:WrongAtTileEight")
    assert res.best is None and db.lookup(queue.device, "2", 48, 48, 48) is None
    assert "checked by this build" in res.no_winner_reason()
