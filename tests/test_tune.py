"""The tuner: every failure recorded and survived, nothing lost on kill -9, logs and the
database validated on load, strategies, and gemm() picking up the tuned parameters."""

import functools
import json
import multiprocessing
import os
import queue as queue_mod
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

import clgemm
from clgemm import db, device, kernels, store, timing, verify
from clgemm.cli import main
from clgemm.gemm import GemmPlan
from clgemm.tunelog import to_t4
from clgemm.tune import tune

from .conftest import SMALL
from .evaluators import synthetic_gflops


SHIPPED = db._shipped


pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


def statuses(res):
    return {r["params"]["TS"]: r["status"] for r in res.records}


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


def test_crash_hang_compile_error_and_wrong_are_recorded_and_survived():
    t0 = time.time()
    res = tune("2", 32, 32, 32, strategy="grid", workers=2, repeat=2, timeout=8,
               evaluator="tests.evaluators:Faulty")
    st = statuses(res)
    assert st == {4: "compile_error", 8: "crashed", 16: "timeout", 32: "wrong"}, res.records
    errors = {r["params"]["TS"]: r.get("error", "") for r in res.records}
    assert "planted compile error" in errors[4]
    assert "died" in errors[8] and "exit code" in errors[8]
    assert "no result after 8 s" in errors[16]
    assert res.best is None
    assert time.time() - t0 < 60


def test_kill_9_loses_nothing_and_resume_skips_done(tmp_path, home):
    code = ("from clgemm.tune import tune; tune('5', 64, 64, 64, strategy='random', budget=60, "
            "workers=2, evaluator='tests.evaluators:SlowSynthetic', update_db=False)")
    env = dict(os.environ, CLGEMM_HOME=str(home))
    p = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True,
                         cwd=os.path.dirname(os.path.dirname(__file__)))
    dev = device.select()
    log = db.log_path(dev, "5", 64, 64, 64)
    _wait_for_lines(log, 6)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    with open(log, "ab") as f:      # as if the kill landed in the middle of a write
        f.write(b'{"schema": 1, "params": {"TSM": 6')
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        kept = list(db.read_log(log, kernels.get("5")))
    assert len(kept) >= 6
    assert any(str(log) in str(x.message) for x in w)          # the torn line, named
    res = tune("5", 64, 64, 64, strategy="random", budget=60, workers=2,
               evaluator="tests.evaluators:Synthetic", update_db=False)
    keys = [tuple(sorted(r["params"].items())) for r in res.records]
    assert len(keys) == len(set(keys)) == 60                  # nothing measured twice
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", db.DataWarning)
        assert len(list(db.read_log(log, kernels.get("5")))) == 60   # and all of it on disk
    assert res.summary()["resumed"] == len(kept)


def test_ctrl_c_stops_the_tune_quietly_and_keeps_the_log(home):
    """Ctrl-C signals the whole process group: the parent stops (as click's "Aborted!"
    does) without a KeyboardInterrupt traceback from every worker, leaves no worker
    behind, and every line of the log is whole."""
    code = ("import sys\nfrom clgemm.tune import tune\ntry:\n"
            "    tune('5', 64, 64, 64, strategy='random', budget=60, workers=2, "
            "evaluator='tests.evaluators:SlowSynthetic', update_db=False)\n"
            "except KeyboardInterrupt:\n    sys.exit('Aborted!')")
    env = dict(os.environ, CLGEMM_HOME=str(home))
    p = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True, text=True,
                         stderr=subprocess.PIPE, cwd=os.path.dirname(os.path.dirname(__file__)))
    log = db.log_path(device.select(), "5", 64, 64, 64)
    _wait_for_lines(log, 3)
    os.killpg(p.pid, signal.SIGINT)
    err = p.communicate(timeout=60)[1]
    assert p.returncode == 1 and "Aborted!" in err
    assert "KeyboardInterrupt" not in err and "Traceback" not in err, err[-2000:]
    deadline = time.time() + 10                 # no process of the group is left running
    while _running_in_group(p.pid) and time.time() < deadline:
        time.sleep(0.1)
    assert _running_in_group(p.pid) == []       # (exited ones may wait for init to reap them)
    assert all(json.loads(line) for line in log.read_bytes().splitlines())


def test_ctrl_c_of_clgemm_tune_says_how_to_resume(home):
    """`clgemm tune` interrupted by Ctrl-C (SIGINT to its process group) says that the log
    keeps every finished evaluation and the same command resumes, exits with 130 (as a
    shell reports an interrupted command) and prints no traceback."""
    env = dict(os.environ, CLGEMM_HOME=str(home))
    p = subprocess.Popen([sys.executable, "-m", "clgemm", "tune", "--kernel", "5", "--size", "64",
                          "--budget", "4000", "--strategy", "random", "--workers", "1"],
                         env=env, start_new_session=True, text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=os.path.dirname(os.path.dirname(__file__)))
    log = db.log_path(device.select(), "5", 64, 64, 64)
    _wait_for_lines(log, 3)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out + err)[-2000:]
    assert "interrupted: every finished evaluation is in the log" in err
    assert "Traceback" not in out + err, (out + err)[-2000:]
    assert all(json.loads(line) for line in log.read_bytes().splitlines())


def _wait_for_lines(log: Path, lines: int, within: float = 120) -> None:
    """Until the tune's log has `lines` lines (or `within` seconds have passed)."""
    deadline = time.time() + within
    while time.time() < deadline and (not log.exists() or len(log.read_bytes().splitlines()) < lines):
        time.sleep(0.1)


def _start_tune(home, lines: int, **popen):
    """A tune of kernel 5 in a process of its own (SlowSynthetic: no OpenCL work), once its
    log has `lines` lines: (process, its children's PIDs then)."""
    code = ("from clgemm.tune import tune; tune('5', 64, 64, 64, strategy='random', budget=80, "
            "workers=2, evaluator='tests.evaluators:SlowSynthetic', update_db=False)")
    env = dict(os.environ, CLGEMM_HOME=str(home))
    p = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True,
                         cwd=os.path.dirname(os.path.dirname(__file__)), **popen)
    log = db.log_path(device.select(), "5", 64, 64, 64)
    _wait_for_lines(log, lines)
    children = _children(p.pid)
    assert len(children) >= 2, children          # the two workers (and the resource tracker)
    return p, children, log


def _children(pid: int) -> list[str]:
    """Running processes whose parent is `pid` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(stat.parent.name)
    return found


def _still_running(pids: list[str], within: float) -> list[str]:
    deadline = time.time() + within
    while True:
        left = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                left.append(pid)
        if not left or time.time() > deadline:
            return left
        time.sleep(0.1)


def test_kill_9_of_the_tune_leaves_no_worker_behind(home):
    """kill -9 of the tune alone (not its process group): its workers die with it (they
    stayed, blocked on their task queue, holding an OpenCL context, for minutes)."""
    p, children, _ = _start_tune(home, 3)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert _still_running(children, 5) == []


def test_sigterm_stops_the_tune_like_ctrl_c(home):
    """SIGTERM to the tune alone: it stops its workers, keeps every line of its log whole,
    exits with 143, and no worker prints a traceback (BrokenPipeError) on its way out."""
    p, children, log = _start_tune(home, 3, stderr=subprocess.PIPE, text=True)
    os.kill(p.pid, signal.SIGTERM)
    err = p.communicate(timeout=60)[1]
    assert p.returncode == 143, err[-2000:]
    assert "Traceback" not in err and "Error" not in err, err[-2000:]
    assert _still_running(children, 5) == []
    assert all(json.loads(line) for line in log.read_bytes().splitlines())


def test_sigterm_to_the_whole_group_is_as_quiet(home):
    """As a service manager sends it: to every process of the group at once."""
    p, children, log = _start_tune(home, 3, stderr=subprocess.PIPE, text=True)
    os.killpg(p.pid, signal.SIGTERM)
    err = p.communicate(timeout=60)[1]
    assert p.returncode == 143 and "Traceback" not in err, err[-2000:]
    assert _still_running(children, 5) == []
    # the tune ended before its budget: resumable, nothing recorded as crashed
    assert {json.loads(line)["status"] for line in log.read_bytes().splitlines()} == {"ok"}


def _running_in_group(pgid: int) -> list[str]:
    """Processes of a process group that have not exited (Linux /proc; state is not Z)."""
    left = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            left.append(stat.parent.name)
    return left


@pytest.mark.parametrize("strategy", ["random", "tpe", "cma"])
def test_budgeted_strategies(strategy):
    res = tune("5", 64, 64, 64, strategy=strategy, budget=25, workers=2, seed=3,
               evaluator="tests.evaluators:Synthetic", update_db=False)
    ps = [r["params"] for r in res.records]
    assert len(ps) == 25 and len({tuple(sorted(p.items())) for p in ps}) == 25
    k = kernels.get("5")
    assert all(db.valid_params(k, p) == p for p in ps)
    assert res.best["gflops"] == pytest.approx(max(synthetic_gflops(p) for p in ps))


def test_a_budget_short_of_the_grid_takes_the_model_and_a_grid_starts_from_the_winners(queue):
    """Auto strategy: a grid only when the budget covers every valid point. A grid cut short
    by its budget still measures the defaults (kernel 2's default TS=32 is its last point)."""
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
    assert [r["params"] for r in first.records] == [k2.defaults]


def test_time_limit_stops_the_sweep():
    t0 = time.time()
    res = tune("5", 64, 64, 64, strategy="random", time_limit=2, workers=2,
               evaluator="tests.evaluators:SlowSynthetic", update_db=False)
    assert 0 < len(res.records) < 200 and time.time() - t0 < 30


def test_bad_log_lines_are_skipped_with_a_warning(home):
    dev = device.select()
    log = db.log_path(dev, "2", 16, 16, 16)
    log.parent.mkdir(parents=True)
    good = {"schema": 1, "params": {"TS": 8}, "status": "ok", "ms_median": 1.0, "ms_min": 1.0,
            "ms_max": 1.0, "gflops": 2.0}
    bad = [
        {**good, "params": {"TS": 24}},                 # outside the declared space
        {**good, "params": {"TS": "8 -DX=1"}},          # an attempt at compiler options
        {**good, "params": {"TS": 8, "EVIL": 1}},       # unknown parameter
        {**good, "schema": 99},
        {**good, "status": "great"},
        {**good, "gflops": -5},
        [1, 2, 3],
    ]
    log.write_text("\n".join(json.dumps(x) for x in [good, *bad]) + "\nnot json\n")
    with pytest.warns(db.DataWarning, match=str(log).replace("\\", ".")):
        recs = list(db.read_log(log, kernels.get("2")))
    assert [r["params"] for r in recs] == [{"TS": 8}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", db.DataWarning)
        res = tune("2", 16, 16, 16, strategy="grid", workers=1, repeat=2)
    assert res.summary()["resumed"] == 1 and res.summary()["evaluated_now"] == 3


def test_bad_database_entries_are_ignored(queue, home):
    dev = queue.device
    path = db.db_path(dev)
    path.parent.mkdir(parents=True)
    doc = {"schema": 1, "device": db.device_key(dev), "entries": {
        "2": {"64x64x64": {"params": {"TS": "4 -cl-opt-disable"}, "gflops": 1.0},
              "8x8x8": {"params": {"TS": 4}, "gflops": "fast"},
              "bogus": {"params": {"TS": 4}, "gflops": 1.0}},
        "99": {"64x64x64": {"params": {}, "gflops": 1.0}},
        "5": {"64x64x64": {"params": dict(kernels.get("5").defaults, WPTM=2), "gflops": 1.0}}}}
    path.write_text(json.dumps(doc))
    with pytest.warns(db.DataWarning, match=path.name):
        plan = GemmPlan(queue, "2", shape=(64, 64, 64))
    assert plan.source == "defaults"
    a = verify.random_matrix(np.random.default_rng(), 9, 9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", db.DataWarning)
        assert clgemm.gemm(queue, a, a).shape == (9, 9)
    path.write_text("{truncated")
    with pytest.warns(db.DataWarning, match="ignored"):
        assert GemmPlan(queue, "2", shape=(64, 64, 64)).source == "defaults"


def test_nearest_shape_and_best_kernel(queue):
    dev = queue.device
    db.record_best(dev, "2", 64, 64, 64, {"TS": 8}, 10.0)
    db.record_best(dev, "2", 1024, 1024, 1024, {"TS": 16}, 20.0)
    db.record_best(dev, "3", 1024, 1024, 1024, dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4), 50.0)
    assert db.lookup(dev, "2", 100, 90, 80) == ("2", {"TS": 8})
    assert db.lookup(dev, "2", 800, 2000, 1024) == ("2", {"TS": 16})
    assert db.lookup(dev, None, 1000, 1000, 1000)[0] == "3"
    assert db.lookup(dev, "4", 64, 64, 64) is None
    plan = GemmPlan(queue, None, shape=(1000, 1000, 1000))
    assert plan.kernel.key == "3" and plan.tuned_at == "1024x1024x1024"
    assert GemmPlan(queue, "4", shape=(64, 64, 64)).tuned_at is None


def test_an_opt_in_kernel_is_taken_only_by_name(queue):
    """Kernels 7 and 8 (TF32 tensor cores) are faster in the database here, but gemm()
    without a kernel keeps to the float kernels; asked for by name, each takes its entry."""
    dev = queue.device
    p7 = dict(TSM=32, TSN=32, TSK=16, WM=32, WN=32, FOLD=8)
    db.record_best(dev, "5", 64, 64, 64, SMALL["5"][0], 10.0)
    db.record_best(dev, "7", 64, 64, 64, p7, 99.0)
    db.record_best(dev, "8", 64, 64, 64, SMALL["8"][0], 150.0)
    assert kernels.get("7").opt_in and kernels.get("8").opt_in
    assert db.lookup(dev, None, 64, 64, 64)[0] == "8"
    plan = GemmPlan(queue, None, shape=(64, 64, 64))
    assert plan.kernel.key == "5" and plan.params == SMALL["5"][0]
    named = GemmPlan(queue, "7", shape=(64, 64, 64))
    assert named.kernel.key == "7" and named.params == p7 and named.tuned_at == "64x64x64"
    named = GemmPlan(queue, "8", shape=(64, 64, 64))
    assert named.kernel.key == "8" and named.params == SMALL["8"][0] and named.tuned_at == "64x64x64"


def test_choice_is_kept_until_the_database_changes(queue, monkeypatch):
    """gemm() chooses parameters on every call; the choice is kept per database state, and
    a new entry, whether written here or by another process, is seen by the next call."""
    from clgemm import heuristics
    dev = queue.device
    db.record_best(dev, "2", 64, 64, 64, {"TS": 8}, 10.0)
    chosen = []
    real = heuristics.choose_entry
    monkeypatch.setattr(heuristics, "choose_entry", lambda *a: chosen.append(a[2]) or real(*a))
    for _ in range(3):
        assert GemmPlan(queue, "2", shape=(60, 60, 60)).params == {"TS": 8}
    assert len(chosen) == 1
    db.record_best(dev, "2", 60, 60, 60, {"TS": 4}, 11.0)
    assert GemmPlan(queue, "2", shape=(60, 60, 60)).params == {"TS": 4}
    # another process's write: the file is replaced, this process's count does not move
    doc = json.loads(db.db_path(dev).read_text())
    doc["entries"]["2"]["60x60x60"]["params"] = {"TS": 16}
    store.write_atomic(db.db_path(dev), doc)
    assert GemmPlan(queue, "2", shape=(60, 60, 60)).params == {"TS": 16}
    assert len(chosen) == 3


def test_database_write_is_atomic(queue, monkeypatch):
    dev = queue.device
    path = db.record_best(dev, "2", 64, 64, 64, {"TS": 8}, 10.0)
    before = path.read_text()

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(json, "dump", boom)
    with pytest.raises(OSError):
        db.record_best(dev, "2", 32, 32, 32, {"TS": 4}, 10.0)
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]


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


def test_shipped_databases_are_valid():
    from clgemm.db import _load
    files = SHIPPED()
    assert files, "the package ships at least one tuned database"
    for f in files:
        with warnings.catch_warnings():
            warnings.simplefilter("error", db.DataWarning)
            assert _load(f)


def test_shipped_database_is_used_for_its_device(queue, tmp_path, monkeypatch):
    dev = queue.device
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"schema": 1, "device": db.device_key(dev), "entries": {
        "2": {"100x100x100": {"params": {"TS": 16}, "gflops": 3.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [shipped])
    plan = GemmPlan(queue, "2", shape=(90, 90, 90))
    assert plan.source == "tuned" and plan.params == {"TS": 16}
    # the user's own tuning takes precedence
    db.record_best(dev, "2", 100, 100, 100, {"TS": 4}, 5.0)
    assert GemmPlan(queue, "2", shape=(90, 90, 90)).params == {"TS": 4}


def test_given_parameters_are_not_reported_as_tuned(queue, tmp_path, monkeypatch):
    """A plan whose parameters were all given says so, and names no tuned shape."""
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"schema": 1, "device": db.device_key(queue.device), "entries": {
        "3": {"100x100x100": {"params": {"TSM": 32, "TSN": 32, "TSK": 8, "WPTM": 4, "WPTN": 4},
                              "gflops": 3.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [shipped])
    tuned = GemmPlan(queue, "3", shape=(90, 90, 90))
    assert (tuned.source, tuned.tuned_at) == ("tuned", "100x100x100")
    some = GemmPlan(queue, "3", {"WPTM": 8}, shape=(90, 90, 90))
    assert (some.source, some.params["WPTM"], some.params["TSM"]) == ("tuned+given", 8, 32)
    every = GemmPlan(queue, "3", dict(kernels.get("3").defaults), shape=(90, 90, 90))
    assert (every.source, every.tuned_at) == ("given", None)


def test_entry_beyond_the_device_is_passed_over(queue, tmp_path, monkeypatch):
    """A valid-looking entry whose work-group the device cannot launch does not break
    gemm(): it is skipped with a warning naming it, and the defaults run."""
    too_big = {"TSM": 256, "TSN": 256, "TSK": 32, "WPTM": 4, "WPTN": 2}   # 64 x 128 work-items
    assert kernels.get("3").violations(too_big) == []
    assert kernels.get("3").violations(too_big, queue.device)
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"schema": 1, "device": db.device_key(queue.device), "entries": {
        "3": {"512x512x512": {"params": too_big, "gflops": 50.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [shipped])
    a = np.random.default_rng(1).random((8, 8), dtype=np.float32)
    with pytest.warns(db.DataWarning, match="kernel 3 at 512x512x512 skipped"):
        c = clgemm.gemm(queue, a, a)
    np.testing.assert_allclose(c, a.astype(np.float64) @ a, rtol=1e-5)


def test_slow_configuration_is_timed_once(queue):
    """A first timed run over the cutoff ends the timing; under it, all runs are taken."""
    from clgemm.evaluate import Evaluator
    ev = Evaluator(queue, "2", 40, 24, 16, repeat=4)
    plan = ev.compile({"TS": 8})
    slow = ev.measure(plan, cutoff_ms=0.0)
    assert slow["status"] == "ok" and slow["runs"] == 1
    full = ev.measure(plan, cutoff_ms=1e9)
    assert full["status"] == "ok" and full["runs"] == 4
    assert ev.measure(plan)["runs"] == 4


def test_whole_tile_target_compiles_and_checks_only_the_exact_build(queue):
    from clgemm.evaluate import Evaluator
    ev = Evaluator(queue, "5", 64, 64, 64, repeat=2)
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    exact_only = {("exact", False, False, False, False, False)}
    # (tile loads build, A_KMAJOR, B_NMAJOR, SPLIT_K, C_UNALIGNED, COLUMNS_FIRST: not 4 tiles)
    assert set(plan._programs) == exact_only
    assert ev.check_shape(plan) == (64, 96, 40)
    assert ev.measure(plan)["status"] == "ok"
    assert set(plan._programs) == exact_only


def test_clamp_target_compiles_and_checks_only_the_clamp_build(queue):
    """A target with k in whole tiles and m, n not is checked at a shape with the same
    remainders, so the CLAMP build timed is the one checked (and the only one compiled)."""
    from clgemm.evaluate import Evaluator
    ev = Evaluator(queue, "5", 37, 45, 32, repeat=2)
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    clamp_only = {("clamp", False, False, False, False, False)}
    assert set(plan._programs) == clamp_only
    assert ev.check_shape(plan) == (69, 109, 40)
    assert ev.measure(plan)["status"] == "ok"
    assert set(plan._programs) == clamp_only


def test_target_taller_than_wide_is_checked_with_its_tiles_along_rows(queue, thresholds):
    """The check shape's grid is wider than tall; a target whose tiles go along rows
    (heuristics.columns_first) is checked in that order all the same, so the one build
    compiled ahead is the one checked and timed."""
    from clgemm.evaluate import Evaluator
    thresholds(columns_min_tiles=0)
    ev = Evaluator(queue, "5", 100, 32, 32, repeat=2)       # 4 x 1 tiles of 32 x 32
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    rows_only = {("clamp", False, False, False, False, False)}
    assert set(plan._programs) == rows_only
    assert plan.columns_first(*ev.check_shape(plan))        # alone, it would go down columns
    assert ev.measure(plan)["status"] == "ok"
    assert set(plan._programs) == rows_only


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


def test_split_target_checks_the_split_build(queue):
    """A target that auto-splits k is checked at the odd shape with the SPLIT_K build too,
    so the one program compiled ahead is the one checked and timed."""
    from clgemm.evaluate import Evaluator
    ev = Evaluator(queue, "5", 1, 32, 4096, repeat=2)
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    assert plan.splits(1, 32, 4096) > 1
    split_only = {("clamp", False, False, True, False, False)}     # k whole tiles: CLAMP
    assert set(plan._programs) == split_only
    assert ev.measure(plan)["status"] == "ok"
    assert set(plan._programs) == split_only


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
    default = kernels.get("2").defaults
    assert _winners(dev, kernels.get("2"), (90, 90, 90)) == [{"TS": 16}, {"TS": 8}, default]
    assert _winners(dev, kernels.get("2"), (900, 900, 900)) == [{"TS": 8}, {"TS": 16}, default]


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
    assert _winners(dev, kernels.get("6"), (90, 90, 90)) == [own6, near5, far5, kernels.get("6").defaults]
    assert _winners(dev, kernels.get("5"), (90, 90, 90))[:3] == [near5, far5, own6]
    assert of4 not in _winners(dev, kernels.get("5"), (90, 90, 90))


def test_kmajor_target_checks_and_times_the_kmajor_build(queue, thresholds):
    """A target whose row-major A gemm() turns K-major is checked and timed with the
    A_KMAJOR build and a K x M copy of A, so the tuner measures what will run."""
    from clgemm.evaluate import Evaluator
    thresholds(kmajor_min_n=0, kmajor_min_volume=0)
    for shape, builds in (((64, 64, 64), {("exact", True, False, False, False, False)}),
                          ((37, 45, 29), {("checked", True, False, False, False, False)})):
        ev = Evaluator(queue, "5", *shape, repeat=2)
        plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
        assert set(plan._programs) == builds
        r = ev.measure(plan)
        assert r["status"] == "ok", r
        assert set(plan._programs) == builds


def test_padded_target_checks_and_times_the_exact_build(queue, thresholds):
    """A target that gemm() pads to whole tiles is checked and timed with the EXACT build
    over zero-padded operands, as it will run; the real C is written in place."""
    from clgemm.evaluate import Evaluator
    thresholds(pad_min_volume=0, pad_min_k=0, pad_min_mn=0)
    ev = Evaluator(queue, "5", 62, 63, 30, repeat=2)     # 64 x 64 x 32 once padded
    plan = ev.compile(dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0))
    assert plan.pads(62, 63, 30) and ev.layout(plan) == ((64, 64, 32), False)
    assert set(plan._programs) == {("exact", False, False, False, False, False)}
    r = ev.measure(plan)
    assert r["status"] == "ok", r
    assert set(plan._programs) == {("exact", False, False, False, False, False)}


# ------------------------------------------------------------ waves: untuned shapes

def _nvidia(cc=(9, 0)):
    return SimpleNamespace(extensions="cl_khr_fp64 cl_nv_device_attribute_query",
                           compute_capability_major_nv=cc[0], compute_capability_minor_nv=cc[1])


@pytest.mark.parametrize("threads, registers, local, groups", [
    (128, 223, 16656, 2),    # kernel 5 at 8192^3: 264 groups at once on 132 SMs (its tail)
    (128, 141, 42000, 3),    # 32 x 128 tiles with bounds checks: one wave up to 396 groups
    (128, 127, 42000, 4),    # the same tiles' EXACT build
    (256, 135, 16400, 1),
    (64, 80, 3144, 12),      # registers: 64K / (80 x 64) = 12.8
    (64, 16, 0, 32),         # the block limit
    (1024, 32, 0, 2),        # the warp limit: 64 warps
    (128, 32, 48 * 1024, 4),  # local memory: 228 KiB / 49 KiB
])
def test_resident_groups_h200(threads, registers, local, groups):
    assert device.resident_groups(_nvidia(), threads, registers, local) == groups


def test_resident_groups_unknown_devices(queue):
    assert device.resident_groups(_nvidia((5, 0)), 128, 32, 0) is None
    assert device.resident_groups(SimpleNamespace(extensions=""), 128, 32, 0) is None
    residents = GemmPlan(queue, "5", SMALL["5"][0]).residents()
    if device.nvidia_cc(queue.device) is None:
        assert residents is None
    else:    # twice: the driver's cache must not hide the compiler's report the second time
        assert residents == GemmPlan(queue, "5", SMALL["5"][0]).residents()
        assert set(residents) == {"checked", "exact"} and min(residents.values()) >= 1


def test_residents_in_database_are_validated(queue):
    dev = queue.device
    p = SMALL["3"][0]
    db.record_best(dev, "3", 64, 64, 64, p, 10.0, {"resident": {"checked": 2, "exact": 3}})
    db.record_best(dev, "3", 32, 32, 32, p, 10.0, {"resident": {"checked": 0, "exact": 3}})
    with pytest.warns(db.DataWarning, match="resident"):
        entries = db.entries_for(dev)["3"]
    assert entries["64x64x64"]["resident"] == {"checked": 2, "exact": 3}
    assert "resident" not in entries["32x32x32"]          # the entry itself still counts
    assert db.lookup(dev, "3", 30, 30, 30) == ("3", p)


def test_untuned_shape_takes_the_configuration_with_fewer_waves(queue):
    """Entry A (the nearest, and faster where it was tuned) fills exactly one wave of the
    device there; one more tile column needs a second wave for a single group. Entry B,
    tuned a little farther away, stays under one wave: B is predicted faster."""
    dev = queue.device
    cu = dev.max_compute_units
    if cu < 2:
        pytest.skip("the scenario needs two or more compute units")
    a = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4)
    b = dict(TSM=32, TSN=16, TSK=8, WPTM=4, WPTN=2)
    target = (32, 32 * (cu + 1), 64)

    def record(resident_b):
        db.record_best(dev, "3", 32, 32 * cu, 64, a, 120.0, {"resident": {"checked": 1, "exact": 1}})
        extra = {"resident": {"checked": resident_b, "exact": resident_b}} if resident_b else {}
        db.record_best(dev, "3", 32, 32 * cu, 72, b, 100.0, extra)
        return GemmPlan(queue, "3", shape=target).params

    # predicted at the target, in units of (cu+1)/cu GFLOPS: A 120 / 2 waves = 60. B, under
    # one wave in both places, its busiest unit's groups going from 2 to 3 (and 9 k steps
    # to 8): 100 x 64/72 x (2 x 9)/(3 x 8) = 67, 11% faster
    assert record(resident_b=2 * (cu + 1)) == b
    assert GemmPlan(queue, "3", shape=target).tuned_at == f"32x{32 * cu}x72"
    # B with 2 per unit fills exactly one wave where it was tuned and needs two here:
    # 100 x 64/72 x 9/(2 x 8) = 50, so the nearest stays
    assert record(resident_b=2) == a
    # without resident counts there is nothing to predict with: the nearest
    assert record(resident_b=None) == a
    # a tuned shape itself always takes its own entry
    assert GemmPlan(queue, "3", shape=(32, 32 * cu, 64)).params == a


def test_an_entry_whose_tiles_waste_c_is_passed_over(queue):
    """Skinny products: an entry tuned at m = 16 with 16-row tiles is the nearest to m = 2
    by the log distance, but computes 8 times the rows there; the entry with 4-row tiles
    (2 times, the least) is taken. At m = 16 both waste nothing and the nearest stands; at
    m = 12 the 16-row tile wastes 4/3 against 1 (within TILE_WASTE = 1.5), so it does too.
    An entry tuned at the very shape is kept whatever it wastes."""
    from clgemm import heuristics
    dev = queue.device
    tall = dict(TSM=16, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)
    flat = dict(TSM=4, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)
    db.record_best(dev, "5", 16, 256, 256, tall, 10.0)
    db.record_best(dev, "5", 1, 512, 512, flat, 1.0)
    assert heuristics.DEFAULTS["tile_waste"] == 1.5
    assert db.near(dev, "5", 2, 256, 256)[0][1]["params"] == tall    # the nearest
    assert GemmPlan(queue, "5", shape=(2, 256, 256)).params == flat
    assert GemmPlan(queue, "5", shape=(16, 320, 320)).params == tall
    assert GemmPlan(queue, "5", shape=(12, 256, 256)).params == tall
    # along n too: a 4096 x 1 x 4096 product takes no 32-column tile if 4 will do
    wide = dict(TSM=32, TSN=4, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)
    db.record_best(dev, "5", 512, 1, 512, wide, 1.0)
    assert GemmPlan(queue, "5", shape=(256, 1, 256)).params == wide
    # tuned right there, an entry stands even beside a less wasteful one
    db.record_best(dev, "5", 2, 320, 320, tall, 5.0)
    assert GemmPlan(queue, "5", shape=(2, 320, 320)).params == tall


def test_a_near_entry_the_device_rejects_is_passed_over(queue, monkeypatch):
    """A near entry whose configuration this device cannot launch (on the H200, 256 x 256
    x 32 tiles need 64 KiB of local memory; pocl has room, so its check is made to refuse
    them here) is never predicted, let alone chosen, and the lookup does not fail on it."""
    dev = queue.device
    ok = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4)
    big = dict(TSM=256, TSN=256, TSK=32, WPTM=4, WPTN=4)
    violations = kernels.Kernel.violations

    def refuse_big(self, p, device=None, *more, **named):
        if dict(p) == big and device is not None:
            return ["local memory 65536 bytes exceeds the device's 49152"]
        return violations(self, p, device, *more, **named)
    monkeypatch.setattr(kernels.Kernel, "violations", refuse_big)
    db.record_best(dev, "3", 64, 64, 64, ok, 10.0, {"resident": {"checked": 1, "exact": 1}})
    db.record_best(dev, "3", 64, 64, 80, big, 1e6, {"resident": {"checked": 64, "exact": 64}})
    assert db.near(dev, "3", 64, 64, 72)[0][1]["params"] == big      # the nearest, even
    with pytest.warns(db.DataWarning, match="kernel 3 at 64x64x80 skipped: local memory"):
        assert GemmPlan(queue, "3", shape=(64, 64, 72)).params == ok


def _send(pipe, message) -> None:
    pipe.send(message)


def test_a_worker_killed_mid_message_does_not_silence_the_others():
    """One worker dies while writing a message too large for the pipe (a driver crash can
    strike at any point); another's message still arrives, and the dead one's pipe reads as
    closed. With one queue for all workers its lock stayed held and nothing arrived."""
    from clgemm.pool import Inbox as _Inbox
    ctx = multiprocessing.get_context("spawn")
    inbox = _Inbox(ctx)
    pipes = [inbox.open(0), inbox.open(1)]
    big = ctx.Process(target=_send, args=(pipes[0], b"x" * (64 << 20)), daemon=True)
    big.start()
    pipes[0].close()
    time.sleep(1.0)                 # blocked in its write: the pipe holds far less
    big.kill()
    big.join(5)
    small = ctx.Process(target=_send, args=(pipes[1], ("start", 1, 7, None)), daemon=True)
    small.start()
    pipes[1].close()
    got = []
    deadline = time.time() + 30
    while time.time() < deadline and not got:
        try:
            got.append(inbox.get(timeout=0.5))
        except queue_mod.Empty:
            pass
    small.join(5)
    assert got == [("start", 1, 7, None)]
    assert set(inbox.pipes) == {1}                  # the dead worker's pipe was dropped


SKINNY = (1, 64, 512)     # two 32 x 32 tiles of C, 64 tiles of k: splitting k can pay


def test_split_stage_checks_every_count_it_times(queue):
    """The counts: 1, the one gemm() would pick unaided, and powers of two up to
    SPLIT_STAGE_FILL work-groups per compute unit; each checked against float64 at the
    odd shape and at the target, and timed in interleaved rounds."""
    from clgemm.evaluate import SPLIT_STAGE_FILL, Evaluator
    p = SMALL["5"][0]
    ev = Evaluator(queue, "5", *SKINNY, repeat=2)
    cap = SPLIT_STAGE_FILL * queue.device.max_compute_units
    auto = GemmPlan(queue, "5", p).splits(*SKINNY)
    want = sorted({1, auto} | {s for s in (2, 4, 8, 16, 32, 64) if 2 * s <= cap})
    assert ev.split_counts(p) == want and len(want) >= 3
    stage = ev.split_stage([p])
    assert [r["splits"] for r in stage["records"]] == want
    for r in stage["records"]:
        assert r["status"] == "ok" and r["rel_error"] <= verify.tolerance(SKINNY[2]), r
        assert r["params"] == p and "only_count" not in r
        assert len(r["ms"]) == 5 * 2                  # 5 rounds of max(2, repeat // 2)
    # a kernel without split-K, or a target with tiles enough, has one count: no stage
    assert Evaluator(queue, "3", *SKINNY, repeat=2).split_counts(SMALL["3"][0]) == [1]
    big = (32, 32 * cap, 512)
    assert Evaluator(queue, "5", *big, repeat=2).split_counts(p) == [1]


def test_tune_records_the_fewest_slices_within_the_margin(queue):
    """Planted timings: 8 slices fastest, 4 within 2% of it. The winner is 4 slices, with
    that count's timing; the database entry says so, and gemm() launches it there and
    keeps its total of work-groups at a shape near it."""
    p = SMALL["5"][0]
    db.record_best(queue.device, "5", 2, 64, 512, p, 1.0)    # TPE proposes it first
    res = tune("5", *SKINNY, strategy="tpe", budget=1, workers=1, repeat=2,
               evaluator="tests.evaluators:PlantedSplits")
    stage = {r["splits"]: r for r in res.split_stage}
    assert stage[8]["gflops"] > stage[4]["gflops"] > stage[2]["gflops"] > stage[1]["gflops"]
    assert all(r["status"] == "ok" for r in stage.values())
    assert res.best["splits"] == 4 and res.best["ms_median"] == 4.0
    assert res.summary()["split_stage"] == res.split_stage
    entry = json.loads(Path(res.db).read_text())["entries"]["5"]["1x64x512"]
    assert entry["splits"] == 4 and entry["params"] == p and entry["ms_median"] == 4.0
    plan = GemmPlan(queue, "5", shape=SKINNY)
    assert plan.source == "tuned" and plan.splits(*SKINNY) == 4
    # twice the tiles of C: half the slices, the same 8 work-groups
    assert GemmPlan(queue, "5", shape=(1, 128, 512)).splits(1, 128, 512) == 2
    rng = np.random.default_rng()
    for m, n, k in (SKINNY, (1, 128, 512), (3, 61, 509)):
        a, b = verify.random_matrix(rng, m, k), verify.random_matrix(rng, k, n)
        assert verify.rel_error(clgemm.gemm(queue, a, b), verify.reference(a, b)) <= verify.tolerance(k)


def test_tuned_split_applies_to_the_tuned_parameters_only(queue):
    """An entry's split count was measured for its parameters: a plan with parameters
    given (in full or in part) splits by gemm()'s own rule; an explicit split_k wins."""
    p = SMALL["5"][0]
    db.record_best(queue.device, "5", *SKINNY, p, 1.0, {"splits": 16})
    rule = GemmPlan(queue, "5", p).splits(*SKINNY)
    assert rule != 16
    assert GemmPlan(queue, "5", shape=SKINNY).splits(*SKINNY) == 16
    other = SMALL["5"][1]
    assert GemmPlan(queue, "5", other, shape=SKINNY).splits(*SKINNY) == GemmPlan(queue, "5", other).splits(*SKINNY)
    assert GemmPlan(queue, "5", {"PAD": 1}, shape=SKINNY).splits(*SKINNY) == rule    # tuned+given
    # parameters given as the entry has them are still the ones it measured
    assert GemmPlan(queue, "5", {"PAD": p["PAD"]}, shape=SKINNY).splits(*SKINNY) == 16
    assert GemmPlan(queue, "5", p, shape=SKINNY).splits(*SKINNY) == 16
    assert GemmPlan(queue, "5", shape=SKINNY, split_k=2).splits(*SKINNY) == 2
    # far more tiles than where it was tuned: 2 x 16 groups spread over 64 x 2 tiles -> 1
    assert GemmPlan(queue, "5", shape=(2048, 64, 512)).splits(2048, 64, 512) == 1


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, "4", [4], 65, 10**400])
def test_bad_split_counts_in_the_database_are_ignored(queue, bad):
    p = SMALL["5"][0]
    db.record_best(queue.device, "5", *SKINNY, p, 1.0, {"splits": bad})
    with pytest.warns(db.DataWarning, match="splits"):
        entry = db.entries_for(queue.device)["5"]["1x64x512"]
    assert "splits" not in entry and entry["params"] == p     # the entry itself still counts
    plan = GemmPlan(queue, "5", shape=SKINNY)
    assert plan.source == "tuned" and plan.splits(*SKINNY) == GemmPlan(queue, "5", p).splits(*SKINNY)


def test_kernel_6_takes_kernel_5s_entries_where_they_are_nearer(queue, tmp_path, monkeypatch):
    """Kernel 6 is kernel 5 with another epilogue: where kernel 5 was tuned nearer than
    kernel 6, its entry (and split count) is the better guess; on a tie of distance the
    kernel's own entry stays; an entry that breaks kernel 6's own constraints is passed
    over without a warning (it is no fault of the database)."""
    dev = queue.device
    own6 = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)
    of5 = dict(TSM=32, TSN=16, TSK=8, WPTM=4, WPTN=2, WIDTH=2, PAD=1)
    bad6 = dict(TSM=32, TSN=32, TSK=8, WPTM=2, WPTN=4, WIDTH=1, PAD=0)   # 4/WIDTH ∤ WPTM
    assert kernels.get("6").violations(bad6) and not kernels.get("5").violations(bad6)
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"schema": 1, "device": db.device_key(dev), "entries": {
        "6": {"64x64x64": {"params": own6, "gflops": 1.0}},
        "5": {"1x64x512": {"params": of5, "gflops": 9.0, "splits": 4},
              "64x64x64": {"params": of5, "gflops": 9.0},
              "512x512x512": {"params": bad6, "gflops": 9.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [shipped])
    plan = GemmPlan(queue, "6", shape=SKINNY)
    assert (plan.params, plan.source, plan.tuned_kernel, plan.tuned_at) == (of5, "tuned", "5", "1x64x512")
    assert plan.splits(*SKINNY) == 4
    plan = GemmPlan(queue, "6", shape=(64, 64, 64))
    assert (plan.params, plan.tuned_kernel) == (own6, "6")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = GemmPlan(queue, "6", shape=(512, 512, 512))
    assert plan.params == own6                    # the nearest one it can launch
    assert GemmPlan(queue, "5", shape=(512, 512, 512)).params == bad6
    # kernel 5 takes kernel 6's entry the same way, and kernel 4 no one's
    db.record_best(dev, "6", 7, 9, 11, own6, 1.0)
    assert GemmPlan(queue, "5", shape=(7, 9, 11)).tuned_kernel == "6"
    assert GemmPlan(queue, "4", shape=SKINNY).source == "defaults"
    r = CliRunner().invoke(main, ["run", "--kernel", "6", "--m", "1", "--n", "64", "--k", "512"])
    assert r.exit_code == 0, r.output
    assert "tuned for kernel 5 on this device at 1x64x512" in r.output
    r = CliRunner().invoke(main, ["run", "--kernel", "6", "--m", "1", "--n", "64", "--k", "512", "--json"])
    out = json.loads(r.output)
    assert (out["tuned_kernel"], out["params"], out["splits"], out["verified"]) == ("5", of5, 4, True)


def _tune_two_finalists(queue, evaluator: str, **kw):
    """SMALL["5"]'s two sets, recorded at shapes next to SKINNY so that TPE proposes a,
    then b, tuned there (budget 2) with the planted `evaluator`: (a, b, result)."""
    a, b = SMALL["5"]
    db.record_best(queue.device, "5", 2, 64, 512, a, 1.0)
    db.record_best(queue.device, "5", 3, 64, 512, b, 1.0)
    return a, b, tune("5", *SKINNY, strategy="tpe", budget=2, workers=1, repeat=2,
                      evaluator=f"tests.evaluators:{evaluator}", **kw)


def test_split_stage_runs_over_the_finalists(queue):
    """Planted timings: B loses the search (slower with gemm()'s own count, unsplit here)
    but is the fastest of all at 4 slices: the stage over the finalists finds it."""
    a, b, res = _tune_two_finalists(queue, "PlantedSplitsTwo")
    assert [f["params"] for f in res.finalists] == [a, b]          # a won the search
    assert {json.dumps(r["params"]) for r in res.split_stage} == {json.dumps(a), json.dumps(b)}
    assert all(r["status"] == "ok" for r in res.split_stage)
    # the runs behind each median are the interleaved rounds' (5 of 2 launches each), not
    # the check's
    assert {r["runs"] for r in res.split_stage + res.finalists} == {10}
    assert (res.best["params"], res.best["splits"], res.best["ms_median"]) == (b, 4, 3.0)
    r = CliRunner().invoke(main, ["tune", "--kernel", "5", "--m", "1", "--n", "64", "--k", "512",
                                  "--budget", "2"])
    assert r.exit_code == 0 and "split-K stage" in r.output, r.output


def test_split_stage_interleaves_the_finalists(queue):
    """All finalists' (configuration, count) pairs run in the same rounds, each round
    taking every pair in turn, so that drift during the stage hits them alike."""
    from clgemm.evaluate import Evaluator

    class Logged(Evaluator):
        def time(self, plan, repeat=None, cutoff_ms=None):
            calls.append((plan.params["WIDTH"], plan.splits(*self.layout(plan)[0])))
            return super().time(plan, repeat, cutoff_ms)

    a, b = SMALL["5"]
    calls = []
    ev = Logged(queue, "5", *SKINNY, repeat=2)
    records = ev.split_stage([a, b])["records"]
    pairs = [(r["params"]["WIDTH"], r["splits"]) for r in records]
    assert {w for w, _ in pairs} == {a["WIDTH"], b["WIDTH"]} and len(pairs) >= 4
    timed = calls[-5 * len(pairs):]                   # after each pair's check (measure)
    assert timed == pairs * 5                         # 5 rounds, every pair in each


def test_a_failing_pair_leaves_the_rest_of_the_stage(queue):
    """Planted: a's build fails at 2 slices. That pair is recorded as failed (with its
    count and the reason) and the stage goes on: b at 4 slices still wins; the command
    line prints the failure without taking its text for markup."""
    a, b, res = _tune_two_finalists(queue, "OneBadPair")
    bad = [r for r in res.split_stage if r["status"] != "ok"]
    assert [(r["params"], r["splits"], r["status"]) for r in bad] == [(a, 2, "failed")]
    assert "planted compile error" in bad[0]["error"]
    assert (res.best["params"], res.best["splits"], res.best["ms_median"]) == (b, 4, 3.0)


def test_a_finalist_the_stage_finds_wrong_cannot_win(queue):
    """Planted: the small tiles win the search (1 ms) but are wrong in the split stage; the
    winner is the larger tiles at their best count, and the database says so."""
    from clgemm.evaluate import SPLIT_STAGE_FILL
    cap = SPLIT_STAGE_FILL * queue.device.max_compute_units
    small = dict(TSM=16, TSN=16, TSK=8, WPTM=2, WPTN=2, WIDTH=2, PAD=0)
    big = SMALL["5"][0]
    shape = (16, 16 * cap, 256)
    db.record_best(queue.device, "5", 16, 16 * cap, 255, small, 1.0)
    db.record_best(queue.device, "5", 16, 16 * cap, 257, big, 1.0)
    res = tune("5", *shape, strategy="tpe", budget=2, workers=1, repeat=2,
               evaluator="tests.evaluators:WrongInStage")
    assert [r["status"] for r in res.split_stage if r["params"] == small] == ["wrong"]
    assert res.best["params"] == big and res.best["splits"] > 1
    entry = json.loads(Path(res.db).read_text())["entries"]["5"][db.shape_key(*shape)]
    assert entry["params"] == big


def test_a_finalist_wrong_at_one_count_is_out(queue):
    """Planted: b is the fastest of all at 4 slices but wrong at 8. gemm() may launch a
    configuration at other counts elsewhere, so b is out; a wins at 4 slices (within 2% of
    its 8)."""
    a, b, res = _tune_two_finalists(queue, "WrongAtEight")
    assert [(r["splits"], r["status"]) for r in res.split_stage
            if r["params"] == b and r["status"] != "ok"] == [(8, "wrong")]
    assert (res.best["params"], res.best["splits"], res.best["ms_median"]) == (a, 4, 4.0)


def test_a_stage_that_finds_every_finalist_wrong_records_nothing(queue, monkeypatch):
    """Planted: every launch of the stage is wrong. No winner, and no database entry."""
    _, _, res = _tune_two_finalists(queue, "AllWrongInStage")
    assert res.best is None and {r["status"] for r in res.split_stage} == {"wrong"}
    assert db.shape_key(*SKINNY) not in db.entries_for(queue.device).get("5", {})
    monkeypatch.setattr(sys.modules["clgemm.tune"], "tune",
                        functools.partial(tune, evaluator="tests.evaluators:AllWrongInStage"))
    r = CliRunner().invoke(main, ["tune", "--kernel", "5", "--m", "1", "--n", "64", "--k", "512",
                                  "--budget", "2", "--fresh"])
    assert r.exit_code == 1, r.output            # nothing recorded: a script can tell
    text = " ".join(r.output.split())
    assert "no winner" in text and "database is unchanged" in text and "1: wrong" in text, r.output
    r = CliRunner().invoke(main, ["tune", "--kernel", "5", "--m", "1", "--n", "64", "--k", "512",
                                  "--budget", "2", "--fresh", "--json"])
    assert r.exit_code == 1 and json.loads(r.output.strip().splitlines()[-1])["best"] is None
    assert db.shape_key(*SKINNY) not in db.entries_for(queue.device).get("5", {})


def test_a_hung_stage_times_out_per_step(queue):
    """Planted: b hangs at 4 slices in the stage. The tune gives up on the stage after one
    step's deadline (not one per finalist and count), records every finalist's stage as
    timed out, and keeps the search's winner without a split count."""
    t0 = time.time()
    a, b, res = _tune_two_finalists(queue, "HangInStage", timeout=3)
    assert time.time() - t0 < 40            # one step: 2 * 3 + 10 s; per pair it was 54
    assert {r["status"] for r in res.split_stage} == {"timeout"}
    assert res.best["params"] == a and "splits" not in res.best


def test_the_remeasure_reports_per_step(queue):
    """A re-measure longer than the step deadline (2 * 1 + 10 s) in all, but whose every
    round reports in, finishes: the five finalists are re-measured (before, its deadline
    was one timeout per finalist, 5 s, and the re-measure was dropped)."""
    res = tune("5", 64, 64, 64, strategy="random", budget=8, workers=1, repeat=2, timeout=1,
               evaluator="tests.evaluators:SlowRounds")
    assert len(res.finalists) == 5
    assert all(f["gflops"] > 0 for f in res.finalists)


def test_a_hung_remeasure_times_out_per_step(queue):
    """A re-measure that never returns is given up after one step's deadline; the search's
    best stands, with no finalists."""
    t0 = time.time()
    res = tune("5", 64, 64, 64, strategy="random", budget=8, workers=1, repeat=2, timeout=1,
               evaluator="tests.evaluators:HangInRemeasure")
    assert time.time() - t0 < 40             # one step: 2 * 1 + 10 s
    assert res.finalists == [] and res.best is not None
    assert res.best["gflops"] == max(r["gflops"] for r in res.records if r["status"] == "ok")


def test_the_stage_shares_one_workspace(queue):
    """Every plan the evaluator compiles uses one split-K workspace, as large as the
    largest count needs."""
    from clgemm.evaluate import Evaluator
    a, b = SMALL["5"]
    ev = Evaluator(queue, "5", *SKINNY, repeat=2)
    ev.split_stage([a, b])
    plans = [ev.compile(p, split_k=s) for p in (a, b) for s in (2, 8)]
    assert all(p.workspace(1) is ev._work.buf for p in plans)
    m, n, _ = SKINNY
    assert ev._work.buf.size >= 4 * max(ev.split_counts(a) + ev.split_counts(b)) * m * n


def test_tuned_count_is_launched_as_it_is_at_the_tuned_shape(queue):
    """The stage records trimmed counts (every slice holds a tile of k): 5 or 10 slices of
    10 tile steps are launched as such there; elsewhere the nearest power of two."""
    p = SMALL["5"][0]                          # TSK = 8: 10 tile steps at k = 80
    for count in (5, 10):
        db.record_best(queue.device, "5", 1, 64, 80, p, 1.0, {"splits": count})
        assert GemmPlan(queue, "5", shape=(1, 64, 80)).splits(1, 64, 80) == count
    # 1 x 128 x 80: twice the tiles of C, so 5 slices' worth of groups -> 10/2 -> 4 (2^2)
    db.record_best(queue.device, "5", 1, 64, 80, p, 1.0, {"splits": 10})
    assert GemmPlan(queue, "5", shape=(1, 128, 80)).splits(1, 128, 80) == 4


def test_tuned_count_keeps_slices_deep_and_the_workspace_small(queue, monkeypatch):
    """Away from the tuned shape, slices are no thinner than the tuned ones or SPLIT_MIN_K,
    whichever is less (an entry that found 1 slice best at 64 x 64 x 1024 must not split a
    small cube near it), and a count whose partial sums would not fit one buffer halves."""
    from clgemm import heuristics, operands
    p = SMALL["5"][0]                          # 32 x 32 tiles
    db.record_best(queue.device, "5", 64, 64, 1024, p, 1.0, {"splits": 1})   # 4 groups
    # 32 x 32 x 256: one group; the same total would be 4 slices of 64, thinner than 512
    assert GemmPlan(queue, "5", shape=(32, 32, 256)).splits(32, 32, 256) == 1
    # 32 x 32 x 4096: 4 slices of 1024 are deep enough
    assert GemmPlan(queue, "5", shape=(32, 32, 4096)).splits(32, 32, 4096) == 4
    db.record_best(queue.device, "5", *SKINNY, p, 1.0, {"splits": 16})
    # SKINNY's 16 slices are 32 deep: 1 x 64 x 384 may take slices of 16 (SPLIT_THINNER = 2),
    # so 16 slices; half that depth again is too thin (1 x 64 x 192: 8 slices, not 16)
    assert heuristics.DEFAULTS["split_thinner"] == 2
    assert GemmPlan(queue, "5", shape=(1, 64, 384)).splits(1, 64, 384) == 16
    assert GemmPlan(queue, "5", shape=(1, 64, 192)).splits(1, 64, 192) == 8
    plan = GemmPlan(queue, "5", shape=SKINNY)
    assert plan.splits(*SKINNY) == 16
    monkeypatch.setattr(operands, "MAX_ELEMENTS", 4 * 64)   # 4 slices of 1 x 64
    assert plan.splits(*SKINNY) == 4 and plan.splits(*SKINNY, asked=16) == 16


def test_a_finalist_without_split_counts_still_competes(queue, monkeypatch):
    """Planted: 16 x 16 tiles (too many groups to split) take 1 ms; 32 x 32 tiles 10/S
    ms with S slices (5 ms at their best). The stage times the former at its one count in
    the same rounds (marked only_count), and it wins with no split count recorded."""
    from clgemm.evaluate import SPLIT_STAGE_FILL, Evaluator
    cap = SPLIT_STAGE_FILL * queue.device.max_compute_units
    small = dict(TSM=16, TSN=16, TSK=8, WPTM=2, WPTN=2, WIDTH=2, PAD=0)
    big = SMALL["5"][0]
    shape = (16, 16 * cap, 256)                # small: `cap` groups, so one count only
    ev = Evaluator(queue, "5", *shape, repeat=2)
    assert ev.split_counts(small) == [1] and len(ev.split_counts(big)) >= 2
    db.record_best(queue.device, "5", 16, 16 * cap, 255, small, 1.0)
    db.record_best(queue.device, "5", 16, 16 * cap, 257, big, 1.0)
    res = tune("5", *shape, strategy="tpe", budget=2, workers=1, repeat=2,
               evaluator="tests.evaluators:SmallTilesWin")
    assert {r["params"]["TSM"] for r in res.split_stage} == {16, 32}
    assert [r["splits"] for r in res.split_stage if r.get("only_count")] == [1]
    assert all(r["params"] == small for r in res.split_stage if r.get("only_count"))
    assert res.best["params"] == small and "splits" not in res.best and res.best["ms_median"] == 1.0
    entry = json.loads(Path(res.db).read_text())["entries"]["5"][db.shape_key(*shape)]
    assert entry["params"] == small and "splits" not in entry
    # the command line says which timing is a finalist's only count
    monkeypatch.setattr(sys.modules["clgemm.tune"], "tune",
                        functools.partial(tune, evaluator="tests.evaluators:SmallTilesWin"))
    r = CliRunner().invoke(main, ["tune", "--kernel", "5", "--m", "16", "--n", str(16 * cap),
                                  "--k", "256", "--budget", "2", "--fresh"])
    assert r.exit_code == 0, r.output
    planted = f"{timing.gflops(*shape, 1.0):.4g}"          # SmallTilesWin's 1 ms
    assert f"WIDTH=2 PAD=0: 1 (its only count): {planted}" in " ".join(r.output.split()), r.output


def test_a_late_answer_is_not_taken_for_the_next_task():
    """A worker's answer to an earlier whole-device task (one the tuner stopped waiting
    for) names that task's index and is dropped."""
    from clgemm.pool import ask as _ask

    class Inbox:
        def __init__(self):
            self.msgs = [("done", 0, -2, {"records": ["late, for finalist 1"]}),
                         ("done", 0, -3, {"records": ["for finalist 2"]})]

        def get(self, timeout):
            if not self.msgs:
                raise queue_mod.Empty
            return self.msgs.pop(0)

    slot = SimpleNamespace(proc=SimpleNamespace(is_alive=lambda: True, kill=lambda: None,
                                                join=lambda t=None: None), tasks=queue_mod.Queue())
    assert _ask([slot], Inbox(), ("splits", -3, {}), 5.0) == {"records": ["for finalist 2"]}
    assert _ask([slot], Inbox(), ("splits", -4, {}), 1.0) is None
