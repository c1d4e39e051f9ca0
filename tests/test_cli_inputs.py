"""What the command line and the replay tool refuse, and how: each case an audit on pocl
found ending in a traceback, a silent nonsense answer, or a refusal that cost more than
the case it refused. Each is refused at once, in one line that names the problem."""

import json
import shutil

import pytest
from click.testing import CliRunner

from clgemm import db, kernels, record, replay
from clgemm import tune as tune_mod
from clgemm.cli import main

from .evaluators import synthetic_gflops


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def _no_tuning(monkeypatch):
    from clgemm import show
    monkeypatch.setattr(show, "tune_with_progress", lambda *a, **kw: pytest.fail("tuned"))


def _no_bench(monkeypatch):
    from clgemm import bench as benchmod
    monkeypatch.setattr(benchmod, "bench", lambda *a, **kw: pytest.fail("measured"))


def refused(r, *words):
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    for w in words:
        assert w in r.output, r.output


@pytest.mark.parametrize("workers", ["2000", "1" + "0" * 20])
def test_workers_beyond_any_machine_are_refused_at_once(monkeypatch, home, workers):
    """--workers 10^20 raised OverflowError, 10^9 ran out of memory building the list of
    every worker's operands, 5 * 10^7 took 26 s and 1.2 GB before its refusal."""
    _no_tuning(monkeypatch)
    refused(invoke("tune", "--kernel", "2", "--size", "16", "--workers", workers), "1024")
    with pytest.raises(ValueError, match="give 1 to 1024"):
        tune_mod.tune("2", 16, 16, 16, workers=10**9, evaluator="tests.evaluators:Synthetic")


def test_a_kernel_no_configuration_of_which_can_run_is_refused_before_any_worker(
        queue, home, monkeypatch):
    """Every point breaking a limit of the device (kernel 7 under a small `ulimit -s` on
    pocl): the tune started its workers and ended in 'no configuration was correct'."""
    monkeypatch.setattr(kernels.Kernel, "violations", lambda self, p, dev=None: ["planted limit"])
    monkeypatch.setattr(tune_mod.pool, "Pool", lambda *a, **kw: pytest.fail("workers started"))
    with pytest.raises(ValueError, match="no configuration of kernel 2 can run on .*planted limit"):
        tune_mod.tune("2", 16, 16, 16, workers=1, evaluator="tests.evaluators:Synthetic")


def test_a_recorded_shape_too_large_to_tune_is_left_out_and_the_others_are_tuned(
        queue, home, monkeypatch):
    """An application may run (and record) a shape whose operands, once a worker, do not fit
    the host: it blocked every recorded shape from being tuned."""
    monkeypatch.setenv(record.ENV, "1")
    key = db.device_key(queue.device)
    record.path().parent.mkdir(parents=True, exist_ok=True)
    with open(record.path(), "w") as f:
        for m in (300000, 16):
            f.write(json.dumps({"device": key, "kernel": "5", "m": m, "n": m, "k": m}) + "\n")
    real = tune_mod.tune
    seen = []
    monkeypatch.setattr(tune_mod, "tune", lambda *a, **k: seen.append(a) or real(
        *a, **{**k, "evaluator": "tests.evaluators:Synthetic"}))
    r = invoke("tune", "--recorded", "--budget", "1", "--workers", "1", "--json")
    assert r.exit_code == 0, r.output
    assert "left out: kernel 5 at 300000x300000x300000 cannot be tuned" in r.output
    assert seen == [("5", 16, 16, 16)]


@pytest.mark.parametrize("args,words", [
    (["bench", "--against", "none", "--sizes", "9" * 5000], ["too large", "--sizes"]),
    (["bench", "--against", "none", "--sizes", "16", "--kernels", "9" * 5000],
     ["too large", "--kernels"]),
    (["run", "--size", "16", "--split-k", "9" * 5000], ["too large"]),
    (["run", "--size", "16", "--split-k", "0" * 30], [">= 1"]),
    (["bench", "--sizes", "16", "--against", ","], ["--against", "give peers"]),
    (["bench", "--sizes", "16", "--against", "none,clblast"], ["--against", "give peers"]),
    (["bench", "--sizes", "16", "--against", "none", "--clblast-params", "{p}"],
     ["--clblast-params", "add clblast to --against"]),
    (["bench", "--sizes", "16", "--against", "cublas", "--clblast-params", "{p}"],
     ["--clblast-params", "add clblast to --against"]),
    (["tune", "--shapes", "16x16x16", "--size", "64"], ["--size", "leave them out"]),
    (["tune", "--recorded", "--size", "64"], ["--size", "leave them out"]),
], ids=["sizes-digits", "kernels-digits", "split-digits", "split-zeros", "against-comma", "against-none-and",
        "params-without-clblast", "params-with-cublas", "size-and-shapes", "size-and-recorded"])
def test_options_that_cannot_mean_anything_are_refused(monkeypatch, home, tmp_path, args, words):
    """Numbers of thousands of digits ended in int()'s traceback; --clblast-params without
    CLBlast, --size beside --shapes and --against ',' were ignored without a word."""
    _no_tuning(monkeypatch)
    _no_bench(monkeypatch)
    params = tmp_path / "p.json"
    params.write_text('{"KWG": 16}')
    refused(invoke(*[a.format(p=params) for a in args]), *words)


def test_a_library_that_is_not_clblast_is_a_skipped_peer(queue, monkeypatch, tmp_path):
    """CLGEMM_CLBLAST naming another library (libc) ended in an AttributeError traceback."""
    import ctypes.util
    libc = ctypes.util.find_library("c")
    monkeypatch.setenv("CLGEMM_CLBLAST", libc)
    r = invoke("bench", "--sizes", "8", "--kernels", "2", "--against", "clblast",
               "--repeat", "1", "--out", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert "clblast: skipped" in r.output and "is not CLBlast 1.x" in r.output


def test_files_of_the_wrong_kind_in_the_home_are_named_in_one_line(queue, home, monkeypatch):
    """A tune log that is a folder, a `.locks` that is a file and a shapes record that is a
    folder each ended in a traceback."""
    monkeypatch.setattr(tune_mod, "tune", lambda *a, real=tune_mod.tune, **k: real(
        *a, **{**k, "evaluator": "tests.evaluators:Synthetic"}))
    log = db.log_path(queue.device, "2", 16, 16, 16)
    log.mkdir(parents=True)
    r = invoke("tune", "--kernel", "2", "--size", "16", "--budget", "1", "--workers", "1")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert f"Is a directory: {log}" in r.output and "resumes" in r.output
    log.rmdir()
    shutil.rmtree(log.parent / ".locks", ignore_errors=True)
    (log.parent / ".locks").write_text("a file")
    r = invoke("tune", "--kernel", "2", "--size", "16", "--budget", "1", "--workers", "1")
    refused(r, "cannot write the tuner's files", ".locks")
    record.path().parent.mkdir(parents=True, exist_ok=True)
    record.path().mkdir()
    r = invoke("tune", "--recorded", "--budget", "1")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert f"Is a directory: {record.path()}" in r.output


def _sweep(path, kernel="5"):
    kern = kernels.tunable(kernel)
    with open(path, "w") as f:
        for p in list(kern.space())[:40]:
            f.write(json.dumps({"schema": db.SCHEMA, "params": p, "status": "ok",
                                "ms_median": 1.0, "ms_min": 1.0, "ms_max": 1.0,
                                "gflops": synthetic_gflops(p) if kernel == "5" else 1.0})
                    + "\n")


@pytest.mark.parametrize("args,words", [
    (["{log}", "--kernel", "2"], ["no correct record of kernel 2"]),
    (["{missing}"], ["is not a file"]),
    (["{folder}"], ["is not a file"]),
    (["{log}", "--seeds", "abc"], ["--seeds 'abc'"]),
    (["{log}", "--seeds", "5-1"], ["runs backwards"]),
    (["{log}", "--kernel", "99"], ["99"]),
    (["{log}", "--within", "nan"], ["--within nan"]),
    (["{log}", "--within", "-1"], ["--within -1"]),
    (["{log}", "--limit", "0"], ["--limit 0"]),
], ids=["other-kernel", "missing", "folder", "seeds-word", "seeds-backwards", "kernel",
        "within-nan", "within-negative", "limit-zero"])
def test_replay_refuses_what_it_cannot_replay(tmp_path, capsys, args, words):
    """Each ended in a traceback (max() of nothing, int() of a word) or ran on to a silent
    answer (every seed None, exit status 0)."""
    log = tmp_path / "sweep.jsonl"
    _sweep(log)
    given = [a.format(log=log, missing=tmp_path / "none.jsonl", folder=tmp_path) for a in args]
    with pytest.raises(SystemExit) as e:
        replay.main(given + ["--strategy", "random", "--seeds", "1"] if "--seeds" not in args
                    else given + ["--strategy", "random"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err
    for w in words:
        assert w in err, err


def test_a_warning_about_the_users_files_is_one_line(queue, home, tmp_path):
    """A database the command cannot use is named in one 'warning:' line; Python's own
    format added the source line of the call that warned, which read as a piece of a
    traceback."""
    import os
    import subprocess
    import sys
    path = db.db_path(queue.device)
    path.parent.mkdir(parents=True)
    path.write_text("{broken")
    env = {**os.environ, "CLGEMM_HOME": str(home)}
    p = subprocess.run([sys.executable, "-m", "clgemm", "run", "--kernel", "2", "--size", "8",
                        "--repeat", "1"], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if "tuning database ignored" in x]
    assert lines and all(x.startswith(f"warning: {path}: tuning database ignored") for x in lines)
    assert "warnings.warn" not in p.stderr and "DataWarning" not in p.stderr


def test_leading_zeros_do_not_make_a_number_large(queue, home):
    """--split-k 0...016 is 16: it was refused as below 1 (only its first 19 characters
    were read)."""
    r = invoke("run", "--kernel", "5", "--size", "64", "--repeat", "1", "--split-k", "0" * 22 + "2")
    assert r.exit_code == 0, r.output

