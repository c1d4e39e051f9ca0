"""The tuner's worker processes: a configuration that crashes, hangs, fails to compile or
computes the wrong product is recorded and survived; a tune killed, interrupted or
terminated loses nothing of its log and leaves no worker behind; a worker dying
mid-message, answering late or hanging in the re-measure does not stall the tune."""

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

import pytest

from clgemm import db, device, kernels, tunelog
from clgemm.tune import tune

from .tune_helpers import (_children, _running_in_group, _start_tune, _still_running,
                           _wait_for_lines, statuses)


pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


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


def test_more_workers_than_the_host_holds_are_refused_before_any_starts(home, monkeypatch):
    """Each worker holds an OpenCL context and clgemm (pool.WORKER_BASE_BYTES): a thousand
    of them sat starting for minutes with nothing shown; now the tune refuses at once and
    says how many this host holds."""
    from clgemm import pool
    monkeypatch.setattr(pool, "host_available", lambda: 40 * pool.WORKER_BASE_BYTES)
    with pytest.raises(ValueError, match=r"1000 workers do not fit at 32x32x32: at most 29 fit "
                                         r"in the host's .* a worker: its OpenCL context.*"
                                         r"give --workers 29 or fewer"):
        tune("2", 32, 32, 32, strategy="random", budget=2, workers=1000)
    assert not db.log_path(device.select(), "2", 32, 32, 32).exists()
    assert len(tune("2", 32, 32, 32, strategy="random", budget=2, workers=2).records) == 2


def test_a_rerun_with_a_longer_timeout_measures_the_timed_out_again(home):
    """A configuration that ran out of --timeout is measured again, first, by a rerun with a
    longer one (the rerun resumed it as done); one with the same timeout resumes it."""
    opts = dict(strategy="grid", workers=1, repeat=2, evaluator="tests.evaluators:SlowSixteen",
                update_db=False)
    res = tune("2", 32, 32, 32, timeout=2, **opts)
    assert statuses(res) == {4: "ok", 8: "ok", 16: "timeout", 32: "ok"}
    assert next(r for r in res.records if r["status"] == "timeout")["timeout_s"] == 2
    again = tune("2", 32, 32, 32, timeout=2, **opts)
    assert again.evaluated_now == 0 and statuses(again)[16] == "timeout"
    longer = tune("2", 32, 32, 32, timeout=20, budget=4, **opts)
    assert longer.evaluated_now == 1 and longer.counts["resumed"] == 3
    assert statuses(longer) == {4: "ok", 8: "ok", 16: "ok", 32: "ok"}
    assert len(longer.records) == 4                 # each configuration once, its last record


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
        kept = list(tunelog.read_log(log, kernels.get("5")))
    assert len(kept) >= 6
    assert any(str(log) in str(x.message) for x in w)          # the torn line, named
    res = tune("5", 64, 64, 64, strategy="random", budget=60, workers=2,
               evaluator="tests.evaluators:Synthetic", update_db=False)
    keys = [tuple(sorted(r["params"].items())) for r in res.records]
    assert len(keys) == len(set(keys)) == 60                  # nothing measured twice
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", db.DataWarning)
        assert len(list(tunelog.read_log(log, kernels.get("5")))) == 60   # and all of it on disk
    assert res.summary()["resumed"] == len(kept)


def _aborting_tune(home) -> subprocess.Popen:
    """A tune of kernel 5 (SlowSynthetic: no OpenCL work) in a process group of its own,
    which exits with click's "Aborted!" on a KeyboardInterrupt; stderr piped."""
    code = ("import sys\nfrom clgemm.tune import tune\ntry:\n"
            "    tune('5', 64, 64, 64, strategy='random', budget=60, workers=2, "
            "evaluator='tests.evaluators:SlowSynthetic', update_db=False)\n"
            "except KeyboardInterrupt:\n    sys.exit('Aborted!')")
    env = dict(os.environ, CLGEMM_HOME=str(home))
    return subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True,
                            text=True, stderr=subprocess.PIPE,
                            cwd=os.path.dirname(os.path.dirname(__file__)))


def _group_gone(pgid: int, within: float = 10.0) -> bool:
    """Whether no process of the group is left running within `within` seconds (exited
    ones may wait for init to reap them)."""
    deadline = time.time() + within
    while _running_in_group(pgid) and time.time() < deadline:
        time.sleep(0.1)
    return _running_in_group(pgid) == []


def test_ctrl_c_stops_the_tune_quietly_and_keeps_the_log(home):
    """Ctrl-C signals the whole process group: the parent stops (as click's "Aborted!"
    does) without a KeyboardInterrupt traceback from every worker, leaves no worker
    behind, and every line of the log is whole."""
    p = _aborting_tune(home)
    log = db.log_path(device.select(), "5", 64, 64, 64)
    _wait_for_lines(log, 3)
    os.killpg(p.pid, signal.SIGINT)
    err = p.communicate(timeout=60)[1]
    assert p.returncode == 1 and "Aborted!" in err
    assert "KeyboardInterrupt" not in err and "Traceback" not in err, err[-2000:]
    assert _group_gone(p.pid)
    assert all(json.loads(line) for line in log.read_bytes().splitlines())


def _signals(pid: str) -> tuple[int, int] | None:
    """(blocked, ignored) signal masks of a process started by multiprocessing's spawn (a
    worker, not the resource tracker), from /proc; None for another process or one gone."""
    try:
        if b"spawn_main" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None
        fields = dict(line.split(":\t") for line in
                      Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)
        return int(fields["SigBlk"], 16), int(fields["SigIgn"], 16)
    except (OSError, KeyError, ValueError):
        return None


def test_ctrl_c_as_the_workers_start_prints_no_traceback(home):
    """Ctrl-C while a worker still imports clgemm, before it ignores the signal: each
    worker printed a KeyboardInterrupt traceback. A worker starts with SIGINT blocked
    (pool.Pool._start) and unblocks it once it ignores it, and a Ctrl-C in that window
    stops the tune as one later does."""
    p = _aborting_tune(home)
    sigint = 1 << (signal.SIGINT - 1)
    seen = None
    deadline = time.time() + 60
    while p.poll() is None and time.time() < deadline:     # a worker as it starts
        seen = next((m for m in map(_signals, _children(p.pid)) if m is not None), None)
        if seen is not None:
            break
        time.sleep(0.001)
    try:
        assert seen is not None and seen[0] & sigint, seen   # blocked while it imports
        os.killpg(p.pid, signal.SIGINT)
        err = p.communicate(timeout=60)[1]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 1 and "Aborted!" in err, err[-2000:]
    assert "KeyboardInterrupt" not in err and "Traceback" not in err, err[-2000:]
    assert _group_gone(p.pid)


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


def test_a_timeout_not_yet_retried_stays_in_the_export(home, tmp_path):
    """A rerun with a longer --timeout that stops before measuring a resumed timeout again
    (here a time limit of 0) still exports its record: --export-t4 used to leave it out
    until it was measured again."""
    from click.testing import CliRunner

    from clgemm.cli import main
    opts = dict(strategy="grid", workers=1, repeat=2, evaluator="tests.evaluators:SlowSixteen",
                update_db=False)
    assert statuses(tune("2", 32, 32, 32, timeout=2, **opts))[16] == "timeout"
    stopped = tune("2", 32, 32, 32, timeout=20, time_limit=0, **opts)
    assert stopped.evaluated_now == 0 and 16 not in statuses(stopped)
    assert [r["params"]["TS"] for r in stopped.unretried] == [16]
    assert sorted(r["params"]["TS"] for r in stopped.exported()) == [4, 8, 16, 32]
    out = tmp_path / "t4.json"
    r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--size", "32", "--workers", "1",
                                  "--timeout", "20", "--time-limit", "0",
                                  "--export-t4", str(out)])
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(out.read_text())
    assert sorted(x["configuration"]["TS"] for x in doc["results"]) == [4, 8, 16, 32]
    assert [x["invalidity"] for x in doc["results"] if x["configuration"]["TS"] == 16] == ["timeout"]


def test_a_worker_that_dies_before_its_first_task_fails_no_configuration(home):
    """A worker process that died while starting had its queued configuration recorded as
    crashed, and a tune whose workers could not start at all recorded every configuration
    so, failed for good when resumed. Now the task goes to a new worker unrecorded, and
    workers that keep dying so stop the tune with a message."""
    res = tune("5", 32, 32, 32, strategy="random", budget=6, workers=2, repeat=2,
               evaluator="tests.evaluators:FirstDiesAtStart")
    assert len(res.records) == 6 and all(r["status"] == "ok" for r in res.records), res.records
    from clgemm.pool import WorkerSetupError
    with pytest.raises(WorkerSetupError, match="worker processes failed before their first "
                                               "task .*exit code 255"):
        tune("5", 64, 64, 64, strategy="random", budget=6, workers=2, repeat=2,
             evaluator="tests.evaluators:DiesAtStart")
    log = db.log_path(device.select(), "5", 64, 64, 64)
    assert not log.exists() or "crashed" not in log.read_text()
