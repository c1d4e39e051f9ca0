"""The tuner never loses a user's files and refuses up front what cannot work: an unusable
database is copied aside, not lost, and one that cannot be read is left alone; an unwritable CLGEMM_HOME or a shape too large is
refused before any evaluation; entries with impossible speeds are dropped on load."""

import json
import multiprocessing
import os
import re
import stat
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from clgemm import db, kernels, store, tunelog, tune as tune_mod
from clgemm.cli import main
from clgemm.gemm import GemmPlan
from clgemm.tune import Evaluator, tune

STAMP = "20250101-000000"


pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


def one_second(monkeypatch):
    """Every file-name time stamp falls in the same second."""
    real = time.strftime
    monkeypatch.setattr(time, "strftime",
                        lambda fmt, *a: STAMP if fmt == "%Y%m%d-%H%M%S" else real(fmt, *a))


def user_db(queue, text: str) -> Path:
    path = db.db_path(queue.device)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


# ------------------------------------------------------------------ 1: never lose the database

@pytest.mark.parametrize("text", [
    '{"schema": 1, "device": "x", "entries": {"2": {"8x8x8": {"params": {"TS": 4}, "gflops": 1}}},}',
    '{"schema": 2, "device": "x", "entries": {"2": {"8x8x8": {"params": {"TS": 4}, "gflops": 1}}}}',
    '[{"schema": 1}]',
    '{"schema": 1, "device": "x", "entries": {"2": ["8x8x8"]}}',
    "[" * 100000,
], ids=["trailing-comma", "newer-schema", "list", "kernel-not-object", "nested-too-deep"])
def test_unusable_database_is_copied_aside_not_lost(queue, text, monkeypatch):
    one_second(monkeypatch)
    path = user_db(queue, text)
    with pytest.warns(db.DataWarning) as w:
        db.record_best(queue.device, "2", 64, 64, 64, {"TS": 8}, 10.0)
    aside = path.with_name(f"{path.stem}.unreadable-{STAMP}.json")
    assert aside.read_text() == text                      # the user's file, byte for byte
    assert any(str(path) in str(x.message) and str(aside) in str(x.message) for x in w)
    doc = json.loads(path.read_text())
    assert doc["schema"] == db.SCHEMA and doc["entries"] == {
        "2": {"64x64x64": {"params": {"TS": 8}, "gflops": 10.0}}}


def test_copying_aside_never_overwrites(queue, monkeypatch):
    one_second(monkeypatch)
    path = user_db(queue, "{broken")
    taken = path.with_name(f"{path.stem}.unreadable-{STAMP}.json")
    taken.write_text("an earlier one")
    with pytest.warns(db.DataWarning):
        db.record_best(queue.device, "2", 64, 64, 64, {"TS": 8}, 10.0)
    path.write_text("{broken again")
    with pytest.warns(db.DataWarning):
        db.record_best(queue.device, "2", 64, 64, 64, {"TS": 8}, 10.0)
    assert taken.read_text() == "an earlier one"
    assert path.with_name(f"{path.stem}.unreadable-{STAMP}-2.json").read_text() == "{broken"
    assert path.with_name(f"{path.stem}.unreadable-{STAMP}-3.json").read_text() == "{broken again"


def test_a_database_that_cannot_be_read_is_left_in_place(queue, monkeypatch):
    """A read that fails (too many open files, a network file system's error) says nothing
    of the file's contents: it stays where it is, with its entries, and the error names it.
    It was moved aside as unusable and a database of the new entry alone begun."""
    dev = queue.device
    path = db.record_best(dev, "2", 64, 64, 64, {"TS": 8}, 10.0)
    before = path.read_text()
    real = Path.read_text

    def emfile(self, *a, **kw):
        if self == path:
            raise OSError(24, "Too many open files", str(self))
        return real(self, *a, **kw)

    with monkeypatch.context() as patched:
        patched.setattr(Path, "read_text", emfile)
        with pytest.raises(OSError, match="cannot read the tuning database") as e:
            db.record_best(dev, "2", 32, 32, 32, {"TS": 4}, 9.0)
    assert e.value.filename == str(path)
    assert path.read_text() == before and list(path.parent.glob("*unreadable*")) == []


def test_a_read_that_failed_once_is_not_remembered(queue, monkeypatch):
    """A lookup whose read of the database failed (too many open files) finds nothing; once
    the file reads again, the next lookup finds its entries, though the file is unchanged,
    and gemm()'s plan cache sees the change (db.version). The failure was kept as 'no
    database' for as long as the file stayed the same."""
    dev = queue.device
    path = db.record_best(dev, "2", 64, 64, 64, {"TS": 16}, 10.0)
    db.lookup(dev, "2", 64, 64, 64)
    real = Path.read_text

    def emfile(self, *a, **kw):
        if self == path:
            raise OSError(24, "Too many open files", str(self))
        return real(self, *a, **kw)

    db._cache.clear()
    seen = db.version(dev)       # what a plan made by the failed lookup is kept under
    with monkeypatch.context() as patched:
        patched.setattr(Path, "read_text", emfile)
        with pytest.warns(db.DataWarning, match="Too many open files"):
            assert db.lookup(dev, "2", 64, 64, 64) is None
            assert GemmPlan(queue, "2", shape=(64, 64, 64)).source == "defaults"
    assert db.lookup(dev, "2", 64, 64, 64) == ("2", {"TS": 16})
    plan = GemmPlan(queue, "2", shape=(64, 64, 64))
    assert (plan.source, plan.params) == ("tuned", {"TS": 16})
    assert db.version(dev) != seen


def test_an_unusable_database_stays_in_place_when_the_new_one_cannot_be_written(queue, monkeypatch):
    """Moved aside first, a write that then failed (a full disk) left no database at its
    path: the user's file is copied aside, and stays in place until replaced."""
    one_second(monkeypatch)
    path = user_db(queue, "{broken")

    def full(*a, **kw):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(db, "write_atomic", full)
    with pytest.warns(db.DataWarning, match="copied to"), pytest.raises(OSError):
        db.record_best(queue.device, "2", 64, 64, 64, {"TS": 8}, 10.0)
    assert path.read_text() == "{broken"
    assert path.with_name(f"{path.stem}.unreadable-{STAMP}.json").read_text() == "{broken"


def test_database_write_keeps_permissions(queue):
    dev = queue.device
    path = db.record_best(dev, "2", 64, 64, 64, {"TS": 8}, 10.0)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644     # a new file: not mkstemp's 0600
    path.chmod(0o640)
    db.record_best(dev, "2", 32, 32, 32, {"TS": 4}, 9.0)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert set(json.loads(path.read_text())["entries"]["2"]) == {"64x64x64", "32x32x32"}


def test_database_write_goes_through_a_symlink(queue, tmp_path):
    """A database kept elsewhere (dotfiles) and linked in stays linked, and is the one updated."""
    dev = queue.device
    path = db.record_best(dev, "2", 64, 64, 64, {"TS": 8}, 10.0)
    target = tmp_path / "dotfiles" / "clgemm-db.json"
    target.parent.mkdir()
    path.replace(target)
    path.symlink_to(target)
    db.record_best(dev, "2", 16, 16, 16, {"TS": 4}, 8.0)
    assert path.is_symlink() and path.resolve() == target
    assert set(json.loads(target.read_text())["entries"]["2"]) == {"64x64x64", "16x16x16"}
    assert sorted(p.name for p in target.parent.iterdir()
                  if p.name != store.LOCKS) == [target.name]      # no temporary left


# ------------------------------------------------------------------ 2: unusable CLGEMM_HOME

@pytest.mark.parametrize("blocker", ["home", "home/db", "home/logs"])
def test_unwritable_home_is_refused_before_any_evaluation(queue, home, blocker, monkeypatch):
    """A file where a folder must be: refused before the sweep, not after it."""
    blocked = home.parent / blocker
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("a file, not a folder")
    with pytest.raises(ValueError, match="CLGEMM_HOME to a writable folder") as e:
        tune("5", 16, 16, 16, strategy="random", budget=2, workers=1,
             evaluator="tests.evaluators:Synthetic")
    assert str(blocked) in str(e.value)
    assert blocked.read_text() == "a file, not a folder"
    assert not db.log_path(queue.device, "5", 16, 16, 16).exists()


def test_unwritable_home_is_a_usage_error_in_the_cli(home):
    home.parent.mkdir(parents=True, exist_ok=True)
    home.write_text("a file")
    r = CliRunner().invoke(main, ["tune", "--kernel", "1", "--size", "16", "--workers", "1"])
    assert r.exit_code == 2 and r.exception is not None and isinstance(r.exception, SystemExit)
    assert "CLGEMM_HOME to a writable folder" in r.output and str(home) in r.output


@pytest.mark.parametrize("why", ["locks-a-file", "lock-not-ours", "read-only"])
def test_a_database_that_cannot_be_updated_is_refused_before_any_evaluation(queue, why,
                                                                          monkeypatch):
    """The database's lock cannot be taken (`.locks` is not a folder; another user's lock
    file), or the database is write-protected: refused before the sweep, naming the file.
    The lock failed only after the whole search, with a traceback, and a read-only
    database was replaced."""
    path = db.record_best(queue.device, "2", 64, 64, 64, {"TS": 8}, 10.0)
    before = path.read_text()
    if why == "locks-a-file":
        blocker = path.parent / store.LOCKS
        for f in blocker.iterdir():
            f.unlink()
        blocker.rmdir()
        blocker.write_text("a file, not a folder")
        match = "cannot write the tuner's files .*File exists"
    elif why == "lock-not-ours":    # root opens anything: what open() says for another user
        real_open, lock_file = os.open, str(store.lock_path(path))
        monkeypatch.setattr(os, "open", lambda p, *a, **kw: _denied(p) if str(p) == lock_file
                            else real_open(p, *a, **kw))
        match = "cannot take the tuning database's lock .*Permission denied"
    else:     # root may write anything: what access() says for another user
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw:
                            False if (Path(p) == path and mode == os.W_OK) else real(p, mode, **kw))
        match = "is read-only"
    with pytest.raises(ValueError, match=match) as e:
        tune("2", 16, 16, 16, strategy="random", budget=2, workers=1,
             evaluator="tests.evaluators:Synthetic")
    assert str(path if why == "read-only" else path.parent / store.LOCKS) in str(e.value)
    assert path.read_text() == before
    assert not db.log_path(queue.device, "2", 16, 16, 16).exists()


def _denied(path):
    raise PermissionError(13, "Permission denied", str(path))


def test_a_database_lock_held_too_long_is_a_one_line_error(queue, monkeypatch):
    """Another process holding the database's lock past the wait: an error naming the
    lock file, and from `clgemm tune` one that says a rerun resumes, not filelock's
    traceback."""
    monkeypatch.setattr(store, "LOCK_WAIT_S", 0.2)
    path = db.db_path(queue.device)
    with store.lock(path, timeout=0):
        with pytest.raises(TimeoutError) as e:
            db.record_best(queue.device, "2", 16, 16, 16, {"TS": 4}, 1.0)
        assert e.value.filename == str(store.lock_path(path))
        r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--size", "8", "--budget", "1",
                                      "--workers", "1"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert str(store.lock_path(path)) in r.output and "resumes" in r.output
    assert "Traceback" not in r.output


def test_a_home_given_from_the_users_home_is_there(queue, tmp_path, monkeypatch):
    """CLGEMM_HOME='~/tuning', quoted so that no shell expanded it, is the user's
    ~/tuning, wherever the process runs: not a folder named ~ in the current directory."""
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    monkeypatch.setenv("CLGEMM_HOME", "~/tuning")
    monkeypatch.chdir(tmp_path)
    assert store.home() == tmp_path / "me" / "tuning"
    db.record_best(queue.device, "2", 16, 16, 16, {"TS": 4}, 1.0)
    assert db.db_path(queue.device).is_file() and str(db.db_path(queue.device)).startswith(
        str(tmp_path / "me" / "tuning"))
    assert not (tmp_path / "~").exists()


# ------------------------------------------------------------------ 3: impossible speeds

def test_entries_without_a_positive_speed_are_dropped(queue):
    good = {"params": {"TS": 8}, "gflops": 5.0, "ms_median": 1.0}
    path = user_db(queue, json.dumps({"schema": 1, "device": db.device_key(queue.device), "entries": {
        "2": {"64x64x64": {"params": {"TS": 4}, "gflops": 0},
              "65x65x65": {"params": {"TS": 4}, "gflops": -100.0},
              "66x66x66": {"params": {"TS": 4}, "gflops": 100.0, "ms_median": 0},
              "200x200x200": good}}}))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        entries = db.entries_for(queue.device)
        plan = GemmPlan(queue, "2", shape=(64, 64, 64))      # 0 GFLOPS divided by before
    assert list(entries["2"]) == ["200x200x200"]
    for shape in ("64x64x64", "65x65x65", "66x66x66"):
        assert any(str(path) in str(x.message) and shape in str(x.message)
                   and issubclass(x.category, db.DataWarning) for x in w), shape
    assert plan.params == {"TS": 8} and plan.tuned_at == "200x200x200"


@pytest.mark.parametrize("fields", [{"device": 5}, {"device": None}, {"thresholds": [1, 2]},
                                    {"thresholds": "x"}, {"entries": {"2": ["64x64x64"]}}],
                         ids=["device-int", "device-null", "thresholds-list", "thresholds-str",
                              "kernel-not-object"])
def test_fields_of_the_wrong_type_are_warned_about_not_raised(queue, fields):
    """A database whose device, thresholds or a kernel's entries are of the wrong type is
    ignored in that part with a warning naming the file; gemm() still runs, right."""
    import numpy as np

    import clgemm
    from clgemm import thresholds, verify
    path = user_db(queue, json.dumps({"schema": 1, "device": db.device_key(queue.device),
                                      "entries": {}, **fields}))
    rng = np.random.default_rng(1)
    a, b = verify.random_matrix(rng, 9, 7), verify.random_matrix(rng, 7, 5)
    with pytest.warns(db.DataWarning, match=re.escape(str(path))):
        # what a new plan reads (gemm() itself looks at the file at most once a second)
        db.entries_for(queue.device)
        db.thresholds(queue.device, thresholds.LIMITS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", db.DataWarning)
        c = clgemm.gemm(queue, a, b)
    assert verify.passes(c, verify.reference(a, b), 7, a, b)


def test_numbers_too_large_for_a_float_are_dropped(queue, tmp_path):
    """JSON integers have no limit; one too large for a float is invalid, not a crash."""
    path = user_db(queue, json.dumps({"schema": 1, "device": db.device_key(queue.device), "entries": {
        "2": {"64x64x64": {"params": {"TS": 4}, "gflops": 10 ** 400}}}}))
    with pytest.warns(db.DataWarning, match=re.escape(f"{path}: entry kernel 2 shape '64x64x64' ignored")):
        assert db.entries_for(queue.device) == {}
    log = tmp_path / "k.jsonl"
    big = "1" + "0" * 400
    log.write_text('{"schema": 1, "status": "ok", "params": {"TS": 8}, "ms_median": 1, '
                   f'"ms_min": 1, "ms_max": 1, "gflops": {big}}}\n'
                   '{"schema": 1, "status": "wrong", "params": {"TS": 4}}\n')
    with pytest.warns(db.DataWarning, match="line 1 ignored"):
        kept = list(tunelog.read_log(log, kernels.get("2")))
    assert [r["params"] for r in kept] == [{"TS": 4}]


# ------------------------------------------------------------------ 4: --fresh in one second

def test_fresh_twice_in_one_second_keeps_both_logs(monkeypatch):
    one_second(monkeypatch)
    logs = []
    for seed, fresh in enumerate([False, True, True]):
        res = tune("5", 64, 64, 64, strategy="random", budget=2, workers=1, seed=seed,
                   fresh=fresh, evaluator="tests.evaluators:Synthetic", update_db=False)
        logs.append(Path(res.log).read_text())
    log = Path(res.log)
    kept = {p.name: p.read_text() for p in log.parent.iterdir()
            if p != log and p.name != store.LOCKS}
    assert kept == {f"kernel5-64x64x64.{STAMP}.jsonl": logs[0],
                    f"kernel5-64x64x64.{STAMP}-2.jsonl": logs[1]}


# ------------------------------------------------------------------ 5: shapes that cannot work

def test_shape_beyond_32_bit_indexing_is_refused_before_workers(queue):
    with pytest.raises(ValueError, match=r"100000x100000x100000.*2147483647"):
        tune("1", 100000, 100000, 100000, budget=1, workers=1, timeout=5)
    assert not db.log_path(queue.device, "1", 100000, 100000, 100000).exists()


def test_shape_beyond_device_memory_is_refused(queue):
    side = int((queue.device.global_mem_size / 4 / 3) ** 0.5) + 1   # 3 matrices: too many bytes
    if side * side > 2**31 - 1:
        pytest.skip("this device holds every shape that 32-bit indexing allows")
    with pytest.raises(ValueError, match=f"{side}x{side}x{side}.*(global memory|maximum allocation)"):
        tune("1", side, side, side, budget=1, workers=1, timeout=5)
    assert not db.log_path(queue.device, "1", side, side, side).exists()


class NoInputs(Evaluator):
    """As if the host could not hold the inputs: numpy's MemoryError making them."""

    def __init__(self, *a, **k):
        raise MemoryError("Unable to allocate 74.5 GiB for an array")


def test_worker_that_cannot_make_its_inputs_stops_the_tune(queue):
    """Not a configuration's fault: nothing is recorded, so a rerun does not skip them."""
    with pytest.raises(RuntimeError, match="MemoryError: Unable to allocate") as e:
        tune("2", 16, 16, 16, strategy="grid", budget=2, workers=1, timeout=20,
             evaluator="tests.test_db_safety:NoInputs")
    assert isinstance(e.value, tune_mod.WorkerSetupError)
    log = db.log_path(queue.device, "2", 16, 16, 16)
    assert not log.exists() or log.read_text() == ""


def test_worker_setup_failure_is_a_clean_cli_error(monkeypatch):
    def fail(*a, **k):
        raise tune_mod.WorkerSetupError("tuning kernel 2 at 16x16x16 stopped: worker 0 could not start")
    monkeypatch.setattr(tune_mod, "tune", fail)
    r = CliRunner().invoke(main, ["tune", "--kernel", "2", "--size", "16"])
    assert r.exit_code == 1 and "worker 0 could not start" in r.output
    assert "Traceback" not in r.output and "Usage" not in r.output


# ------------------------------------------------------------------ concurrent writers

def _fake_device(n: int):
    """Enough of a cl.Device for the database's file names: no OpenCL needed."""
    return SimpleNamespace(int_ptr=10**6 + n, name="Fake device", driver_version="1.0")


def _write_entries(home: str, writer: int, count: int, go) -> None:
    os.environ["CLGEMM_HOME"] = home
    go.wait()
    for i in range(count):
        db.record_best(_fake_device(writer), "2", writer + 1, i + 1, 1, {"TS": 8}, 1.0 + i)


def _write_at_once(homes) -> None:
    """One process per home in `homes` (writer w through homes[w]), each recording 20
    winners as soon as all have started; every one must exit cleanly."""
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=_write_entries, args=(str(h), w, 20, go))
             for w, h in enumerate(homes)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * len(homes)


def test_concurrent_writers_keep_every_entry(home):
    """Four processes each record 20 winners in the same database at once: all 80 stay
    (22 of 80 did without a lock around the read-modify-write)."""
    _write_at_once([home] * 4)
    doc = json.loads(db.db_path(_fake_device(0)).read_text())
    assert len(doc["entries"]["2"]) == 80
    assert {e["gflops"] for e in doc["entries"]["2"].values()} == {1.0 + i for i in range(20)}


def test_two_homes_linking_one_database_keep_every_entry(home, tmp_path, monkeypatch):
    """A second clgemm home whose database file links to the first's: two writers through
    each home record 20 winners at once, and all 80 stay beside the one already there
    (each home locked in a folder of its own before, and 69 of the 81 stayed)."""
    other = tmp_path / "other-home"
    target = db.db_path(_fake_device(0))
    db.record_best(_fake_device(0), "2", 99, 99, 1, {"TS": 8}, 1.0)      # makes the file
    monkeypatch.setenv("CLGEMM_HOME", str(other))
    link = db.db_path(_fake_device(0))
    monkeypatch.setenv("CLGEMM_HOME", str(home))
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    _write_at_once([home, other, home, other])
    assert link.is_symlink()
    assert len(json.loads(target.read_text())["entries"]["2"]) == 81


# ------------------------------------------------------------------ damaged entries

def test_entries_that_cannot_be_read_are_skipped_saying_why(queue, rng):
    """Each entry the loader refuses is named with its reason, and gemm() still computes the
    right product: a dimension too long for a float's logarithm (the nearest-entry distance
    overflowed), a shape of two dimensions, a missing or foreign parameter, an entry that is
    no object."""
    import numpy as np
    import clgemm
    p = {"TS": 8}
    user_db(queue, json.dumps({"schema": 1, "device": db.device_key(queue.device), "entries": {"2": {
        "1" + "0" * 400 + "x16x16": {"params": p, "gflops": 1.0},
        "1" + "0" * 5000 + "x16x16": {"params": p, "gflops": 1.0},
        "64x64": {"params": p, "gflops": 1.0},
        "32x32x32": {"params": {}, "gflops": 1.0},
        "33x33x33": {"params": {"TS": 8, "WPT": 2}, "gflops": 1.0},
        "34x34x34": {"params": {"TS": 5}, "gflops": 1.0},
        "35x35x35": "fast"}}}))
    with pytest.warns(db.DataWarning) as w:
        entries = db.entries_for(queue.device)
    said = " | ".join(str(x.message) for x in w)
    assert entries == {}
    assert said.count("the shape is not MxNxK in positive integers") == 3
    assert "params lack TS" in said and "name 'WPT', which kernel 2 does not take" in said
    assert "TS = 5 is not one of" in said and "the entry 'fast' is not an object" in said
    a = rng.random((20, 20), dtype=np.float32)
    out = clgemm.gemm(queue, a, a, kernel="2")
    assert np.allclose(out, a.astype(np.float64) @ a, rtol=1e-5, atol=1e-5)


def test_another_spelling_of_a_shape_does_not_hide_a_new_tune(queue):
    """"064x64x64" and "64X64X64" are 64x64x64: an entry so spelt counts, but the tune that
    writes "64x64x64" goes over it."""
    user_db(queue, json.dumps({"schema": 1, "device": db.device_key(queue.device), "entries": {
        "2": {"064x64x64": {"params": {"TS": 4}, "gflops": 100.0}}}}))
    assert GemmPlan(queue, "2", shape=(64, 64, 64)).params == {"TS": 4}
    db.record_best(queue.device, "2", 64, 64, 64, {"TS": 8}, 10.0)
    plan = GemmPlan(queue, "2", shape=(64, 64, 64))
    assert (plan.params, plan.tuned_at) == ({"TS": 8}, "64x64x64")


def test_a_user_database_of_another_device_is_ignored_aloud_and_not_adopted(queue,
                                                                          monkeypatch):
    """A user database whose "device" names another device (copied, hand-edited) is
    ignored with a warning naming both; a tune then moves it aside instead of adopting
    its entries under this device's name."""
    one_second(monkeypatch)
    text = json.dumps({"schema": 1, "device": "Another Device | 9.9", "entries": {
        "2": {"64x64x64": {"params": {"TS": 4}, "gflops": 100.0}}}})
    path = user_db(queue, text)
    with pytest.warns(db.DataWarning, match="names 'Another Device | 9.9', not this device"):
        assert db.entries_for(queue.device) == {}
    with pytest.warns(db.DataWarning, match="copied to"):
        db.record_best(queue.device, "2", 32, 32, 32, {"TS": 8}, 5.0)
    assert path.with_name(f"{path.stem}.unreadable-{STAMP}.json").read_text() == text
    assert set(db.entries_for(queue.device)["2"]) == {"32x32x32"}


def test_a_threshold_of_no_known_name_is_refused_naming_its_file(queue):
    path = user_db(queue, json.dumps({"schema": 1, "device": db.device_key(queue.device),
                                      "entries": {}, "thresholds": {"pad_min_vol": 5}}))
    from clgemm import thresholds
    with pytest.warns(db.DataWarning, match=re.escape(f"{path}: threshold 'pad_min_vol' ignored")):
        assert "pad_min_vol" not in db.thresholds(queue.device, thresholds.LIMITS)


def test_a_huge_matvec_groups_threshold_still_computes(queue, rng):
    """matvec_groups may be any number from 1: 1e308 a compute unit overflowed int()."""
    import numpy as np
    import clgemm
    user_db(queue, json.dumps({"schema": 1, "device": db.device_key(queue.device),
                               "entries": {}, "thresholds": {"matvec_groups": 1e308}}))
    a, b = rng.random((1, 64), dtype=np.float32), rng.random((64, 33), dtype=np.float32)
    assert np.allclose(clgemm.gemm(queue, a, b), a.astype(np.float64) @ b, rtol=1e-5)


def test_a_linked_database_whose_target_cannot_be_written_is_refused_before_tuning(
        queue, tmp_path):
    """The database written through a symlink is written where the link leads: a folder
    there that cannot be made is found before the search, not after it."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    path = db.db_path(queue.device)
    path.parent.mkdir(parents=True)
    path.symlink_to(blocker / "db.json")
    with pytest.raises(ValueError, match=re.escape(str(blocker))):
        db.check_writable(queue.device)


def test_a_copy_aside_that_fails_leaves_no_partial_file(tmp_path, monkeypatch):
    """Where the file system takes no hard link, the unusable database is copied aside; a
    copy that fails (a full disk) leaves no half-written copy, and the file stays."""
    path = tmp_path / "db.json"
    path.write_text("{broken" * 1000)

    def no_link(*a, **kw):
        raise OSError(1, "Operation not permitted")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "link", no_link)
    copied = store.copy_aside(path, "unreadable-")
    assert copied.read_text() == path.read_text()
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        store.copy_aside(path, "unreadable-")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, copied.name])
