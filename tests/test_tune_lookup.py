"""gemm() picking up the tuned parameters: logs and databases validated on load (a bad
line or entry is skipped with a warning), written atomically, shipped databases, the
nearest entry and the best kernel, and for an untuned shape the near entry predicted
fastest (waves of resident groups, tile waste, what the device can launch, a sibling
kernel's entry)."""

import errno
import json
import os
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

import clgemm
from clgemm import db, device, kernels, store, tunelog, verify
from clgemm.cli import main
from clgemm.gemm import GemmPlan
from clgemm.tune import tune

from .conftest import SKINNY, SMALL


SHIPPED = db._shipped


pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


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
        recs = list(tunelog.read_log(log, kernels.get("2")))
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


def test_which_entries_fit_is_asked_once_per_database_state(queue, monkeypatch):
    """Whether an entry fits the device does not depend on the shape: a new shape's plan
    ranks the entries already found to fit (asking each entry again for every new shape
    took most of a new plan's host time), and a database write asks afresh."""
    from clgemm import choice
    dev = queue.device
    for k in (64, 128, 256):
        db.record_best(dev, "3", 64, 64, k, dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4), 10.0)
    asked = []
    real = choice._fits
    monkeypatch.setattr(choice, "_fits", lambda *a: asked.append(a[3]["shape"]) or real(*a))
    for k in (70, 90, 200, 300):                 # four new shapes, one database state
        assert GemmPlan(queue, "3", shape=(64, 64, k)).params["TSM"] == 32
    assert sorted(asked) == [(64, 64, 64), (64, 64, 128), (64, 64, 256)]
    f = choice.facts(dev)                        # other facts: the same entries fit
    other = type(f)(f.compute_units, f.max_alloc, dict(f.thresholds))
    assert choice.tuned_entry(queue, "3", (64, 64, 80), other)[1]["params"]["TSM"] == 32
    assert len(asked) == 3
    near = dict(TSM=16, TSN=16, TSK=8, WPTM=2, WPTN=2)
    db.record_best(dev, "3", 64, 64, 100, near, 12.0)       # a write: asked again, and taken
    assert GemmPlan(queue, "3", shape=(64, 64, 101)).params == near
    assert len(asked) == 7


def test_an_entry_is_predicted_at_its_own_shape_once_per_database_state(queue, monkeypatch):
    """choose_entry predicts each near entry at the new shape over its steps at its own
    tuned shape; the latter does not depend on the new shape, so new shapes reuse it (it
    was half of a new shape's predictions), until a database write."""
    from clgemm.heuristics import waves
    dev = queue.device
    resident = {"resident": {"checked": 2, "exact": 2}}      # (what choose_entry predicts by)
    own = [(64, 64, 64), (64, 64, 128), (64, 64, 256)]
    for shape in own:
        db.record_best(dev, "3", *shape, dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4), 10.0,
                       resident)
    asked = []
    real = waves.wave_steps
    monkeypatch.setattr(waves, "wave_steps",
                        lambda *a, **k: asked.append(tuple(a[2])) or real(*a, **k))
    for k in (100, 110, 90):                     # three new shapes near all three entries
        GemmPlan(queue, "3", shape=(64, 64, k))
    at_own = sorted(s for s in asked if s in own)
    assert at_own == own                         # each entry once, not once a shape
    assert any(s == (64, 64, 110) for s in asked)    # the new shapes were predicted
    db.record_best(dev, "3", 64, 64, 512, dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4), 9.0,
                   resident)                     # a write: the next plan predicts afresh
    GemmPlan(queue, "3", shape=(64, 64, 120))
    assert len([s for s in asked if s in own]) > len(own)


def test_database_write_is_atomic(queue, monkeypatch):
    dev = queue.device
    path = db.record_best(dev, "2", 64, 64, 64, {"TS": 8}, 10.0)
    before = path.read_text()

    def boom(*a, **k):       # the write's flush to disk, as a full disk fails it
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError) as failed:
        db.record_best(dev, "2", 32, 32, 32, {"TS": 4}, 10.0)
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir() if p.name != store.LOCKS] == [path.name]
    # the error names the file it could not write (`clgemm` prints it so)
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == str(path.resolve())


def test_shipped_databases_are_valid():
    from clgemm.entries import load as _load
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


def test_a_file_under_another_driver_counts_only_where_none_names_this_one(
        queue, tmp_path, monkeypatch):
    """Shipped files of this device under an older driver and under this one: the entries
    and the thresholds both come from this driver's file alone (the old file's thresholds
    were measured with entries that are left out); with no file of this driver, from the
    older one."""
    dev = queue.device
    name, driver = db.device_key(dev).split(" | ")

    def shipped(drv, ts, waste):
        f = tmp_path / f"{drv}.json"
        f.write_text(json.dumps({"schema": 1, "device": f"{name} | {drv}",
                                 "thresholds": {"tile_waste": waste},
                                 "entries": {"2": {"100x100x100": {"params": {"TS": ts},
                                                                   "gflops": 3.0}}}}))
        return f
    old, now = shipped("0.0-older", 8, 1.75), shipped(driver, 16, 1.25)
    monkeypatch.setattr(db, "_shipped", lambda: [old])
    assert GemmPlan(queue, "2", shape=(90, 90, 90)).params == {"TS": 8}
    assert db.thresholds(dev)["tile_waste"] == 1.75
    monkeypatch.setattr(db, "_shipped", lambda: [old, now])
    assert GemmPlan(queue, "2", shape=(90, 90, 90)).params == {"TS": 16}
    assert db.thresholds(dev)["tile_waste"] == 1.25
    now.write_text(json.dumps({"schema": 1, "device": f"{name} | {driver}", "entries": {
        "2": {"100x100x100": {"params": {"TS": 16}, "gflops": 3.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [now, old])     # a fresh look
    assert "tile_waste" not in db.thresholds(dev)


def test_the_users_tunes_under_an_older_driver_count_until_this_one_is_tuned(queue):
    """After a driver update the user's own database of the device is still used, as a
    shipped one of another driver is (it was set aside without a word); the newest one
    where there are several; the first tune under the new driver takes its place."""
    dev = queue.device
    name, driver = db.device_key(dev).split(" | ")
    folder = db.db_path(dev).parent
    folder.mkdir(parents=True, exist_ok=True)

    def users(drv, ts, age):
        f = folder / f"{store.slug(f'{name} | {drv}')}.json"
        f.write_text(json.dumps({"schema": 1, "device": f"{name} | {drv}",
                                 "thresholds": {"tile_waste": 1.0 + ts / 100}, "entries": {
                                     "2": {"100x100x100": {"params": {"TS": ts}, "gflops": 3.0}}}}))
        os.utime(f, (time.time() - age, time.time() - age))
    users("0.0-oldest", 4, 7200)
    users("0.1-older", 16, 3600)
    (folder / "another-device-1.0.json").write_text(json.dumps({
        "schema": 1, "device": "Another Device | 1.0", "entries": {
            "2": {"100x100x100": {"params": {"TS": 32}, "gflops": 3.0}}}}))
    plan = GemmPlan(queue, "2", shape=(90, 90, 90))
    assert (plan.source, plan.params) == ("tuned", {"TS": 16})
    assert db.thresholds(dev)["tile_waste"] == 1.16          # its thresholds as well
    db.record_best(dev, "2", 50, 50, 50, {"TS": 32}, 5.0)
    assert GemmPlan(queue, "2", shape=(90, 90, 90)).params == {"TS": 32}


def test_a_device_of_the_same_architecture_takes_its_entries_under_its_own(
        queue, tmp_path, monkeypatch):
    """A device no shipped database names (an H100 SXM beside the shipped H200's) takes the
    entries and thresholds of a shipped database of its architecture, and says whose they
    are; a database of another architecture, or none, is not taken; the user's own tunes go
    over them shape by shape; a shipped database that names the device takes their place."""
    from clgemm import device as devmod
    dev, arch = queue.device, "NVIDIA sm_90, 132 compute units"
    p2 = {"TS": 16}
    def shipped(name, architecture, ts, waste):
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps({"schema": 1, "device": f"{name} | 1.0", "architecture": architecture,
                                 "thresholds": {"tile_waste": waste},
                                 "entries": {"2": {"100x100x100": {"params": {"TS": ts}, "gflops": 3.0},
                                                   "500x500x500": {"params": {"TS": ts}, "gflops": 3.0}}}}))
        return f
    alike, other = shipped("Sibling", arch, 16, 1.25), shipped("Other", "NVIDIA sm_80, 108 compute units", 8, 1.75)
    nameless = tmp_path / "nameless.json"           # no architecture field: never taken
    nameless.write_text(json.dumps({"schema": 1, "device": "Third | 1.0", "entries": {
        "2": {"90x90x90": {"params": {"TS": 4}, "gflops": 3.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [other, alike, nameless])
    monkeypatch.setattr(devmod, "architecture", lambda d: None)       # pocl: says nothing
    assert GemmPlan(queue, "2", shape=(90, 90, 90)).source == "defaults"
    assert "tile_waste" not in db.thresholds(dev)
    # a device's architecture never changes, so the entries are kept by the databases'
    # stamp: another list of shipped files makes this a fresh look
    monkeypatch.setattr(db, "_shipped", lambda: [nameless, other, alike])
    monkeypatch.setattr(devmod, "architecture", lambda d: arch)
    plan = GemmPlan(queue, "2", shape=(90, 90, 90))
    assert (plan.source, plan.params, plan.tuned_on) == ("tuned", p2, "Sibling | 1.0")
    assert db.thresholds(dev)["tile_waste"] == 1.25
    assert clgemm.Plan(queue, 90, 90, 90, kernel="2").describe()["tuned_on"] == "Sibling | 1.0"
    r = CliRunner().invoke(main, ["run", "--kernel", "2", "--size", "90", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["tuned_on"] == "Sibling | 1.0"
    r = CliRunner().invoke(main, ["run", "--kernel", "2", "--size", "90"])
    assert "tuned for Sibling (the same architecture) at 100x100x100" in r.output
    a = np.random.default_rng(2).random((90, 90), dtype=np.float32)
    np.testing.assert_allclose(clgemm.gemm(queue, a, a, kernel="2"), a.astype(np.float64) @ a,
                               rtol=1e-5)
    # the user's own tunes go over the sibling's entries shape by shape; the rest of them,
    # and its thresholds, stay (a first tune that dropped them all put every other shape
    # back to the defaults)
    db.record_best(dev, "2", 300, 300, 300, {"TS": 8}, 5.0)
    db.record_best(dev, "2", 100, 100, 100, {"TS": 4}, 5.0)
    plan = GemmPlan(queue, "2", shape=(300, 300, 300))
    assert (plan.params, plan.tuned_at, plan.tuned_on) == ({"TS": 8}, "300x300x300", None)
    plan = GemmPlan(queue, "2", shape=(90, 90, 90))
    assert (plan.params, plan.tuned_at, plan.tuned_on) == ({"TS": 4}, "100x100x100", None)
    assert db.thresholds(dev)["tile_waste"] == 1.25
    assert db.entries_for(dev)["2"]["500x500x500"]["tuned_on"] == "Sibling | 1.0"
    # a shipped database of this device's own name takes the place of the sibling's
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"schema": 1, "device": db.device_key(dev), "entries": {
        "2": {"50x50x50": {"params": {"TS": 32}, "gflops": 3.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [alike, own])
    entries = db.entries_for(dev)["2"]
    assert {s: e["params"]["TS"] for s, e in entries.items()} == {
        "50x50x50": 32, "100x100x100": 4, "300x300x300": 8}
    assert all("tuned_on" not in e for e in entries.values())
    assert "tile_waste" not in db.thresholds(dev)


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
    with pytest.warns(db.DataWarning, match=f"{shipped}: .*kernel 3 at 512x512x512 skipped"):
        c = clgemm.gemm(queue, a, a)
    np.testing.assert_allclose(c, a.astype(np.float64) @ a, rtol=1e-5)
    # a matrix-vector entry likewise (it was passed over without a word), and an entry
    # filed under its kernel's name counts as one under its number
    shipped.write_text(json.dumps({"schema": 1, "device": db.device_key(queue.device), "entries": {
        "matvec-sweep": {"1x512x512": {"params": {"CV": 256, "LANES": 32, "UNROLL": 8},
                                       "gflops": 9.0}},
        "2": {"64x64x64": {"params": {"TS": 8}, "gflops": 2.0}},
        "tiled": {"128x128x128": {"params": {"TS": 16}, "gflops": 2.0},
                  "64x64x64": {"params": {"TS": 4}, "gflops": 2.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [shipped, tmp_path / "none.json"])
    assert kernels.get("matvec-sweep", "matvec").violations({"CV": 256, "LANES": 32}, queue.device)
    with pytest.warns(db.DataWarning, match=f"{shipped}: .*kernel matvec-sweep at 1x512x512 skipped"):
        assert clgemm.Plan(queue, 1, 512, 512).describe()["params_source"] == "defaults"
    # one under its key is never shadowed by one under its name (the file is written with
    # sorted keys, "2" before "tiled": a tune's new entry lost to an old hand-filed one)
    assert {s: e["params"]["TS"] for s, e in db.entries_for(queue.device)["2"].items()} == {
        "64x64x64": 8, "128x128x128": 16}


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

    # predicted at the target, in units of (cu+1)/cu GFLOPS (both 2-warp groups, a wave of
    # g groups costing (2g + latency_warps 4) / 2 of its steps): A 120 / 2 waves = 60. B,
    # under one wave in both places, its busiest unit's groups going from 2 to 3 (and 9 k
    # steps to 8): 100 x 64/72 x (4 x 9)/(5 x 8) = 80, a third faster
    assert record(resident_b=2 * (cu + 1)) == b
    assert GemmPlan(queue, "3", shape=target).tuned_at == f"32x{32 * cu}x72"
    # B with 2 per unit fills exactly one wave where it was tuned and needs two here:
    # 100 x 64/72 x (4 x 9)/(2 x 4 x 8) = 50, so the nearest stays
    assert record(resident_b=2) == a
    # without resident counts there is nothing to predict with: the nearest
    assert record(resident_b=None) == a
    # a tuned shape itself always takes its own entry
    assert GemmPlan(queue, "3", shape=(32, 32 * cu, 64)).params == a


def test_a_unit_with_fewer_groups_runs_each_faster(queue, monkeypatch):
    """Entry A (the nearest: 4-warp groups, two a unit where it was tuned at 100 GFLOPS)
    against entry B (8-warp groups, one a unit where it was tuned, twice the work, at 90) at
    a shape that runs one group a unit for either, a quarter of B's steps. Counting k steps
    times groups, A's lone group a unit would take half its tuned time and stay (predicted
    0.5 x 1/100 against 0.25 x 2/90, B within 5%); with a wave of g groups of w warps costing
    (g*w + latency_warps) / w steps, A's one 4-warp group hides its latency behind no other
    group's: 2/3 x 1/100 against 0.25 x 2/90, so B is taken (as 1999x999x999 took 1024^3's
    8-warp entry rather than 1850^3's 4-warp one, x1.20 as fast on an H100: docs/levers.md)."""
    from clgemm import choice, thresholds
    dev = queue.device
    cu = dev.max_compute_units
    a = dict(TSM=64, TSN=128, TSK=16, WPTM=16, WPTN=4, WIDTH=4, PAD=0)    # 128 items
    b = dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=0)     # 256 items
    two = {"resident": {"checked": 2, "exact": 2}}
    db.record_best(dev, "5", 128, 128 * cu, 256, a, 100.0, two)     # 2 groups a unit
    db.record_best(dev, "5", 64, 128 * cu, 1024, b, 90.0, two)      # 1 group a unit
    target = (64, 128 * cu, 256)                                    # 1 a unit for both
    assert db.near(dev, "5", *target)[0][1]["params"] == a           # the nearest
    assert thresholds.DEFAULTS["latency_warps"] == 4
    assert GemmPlan(queue, "5", shape=target).params == b
    monkeypatch.setitem(thresholds.DEFAULTS, "latency_warps", 0)    # steps x groups alone
    choice.forget()
    assert GemmPlan(queue, "5", shape=target).params == a


def _plans_script(monkeypatch):
    """scripts/plans.py as a module, with scripts/ first on the path as when it runs."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "scripts" / "plans.py"
    monkeypatch.syspath_prepend(str(path.parent))
    spec = importlib.util.spec_from_file_location("plans_script", path)
    plans = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plans)
    return plans


def test_plans_script_variants_choose_entries_with_their_own_thresholds(queue, rng,
                                                                        monkeypatch):
    """scripts/plans.py measures a threshold before it becomes a rule: a variant of
    latency_warps (or near_within, wave_margin, tile_waste) must choose its own entry,
    not the one choice.tuned_entry kept from the variant made before it."""
    import pyopencl.array as cla
    plans = _plans_script(monkeypatch)
    dev = queue.device
    cu = dev.max_compute_units
    a = dict(TSM=64, TSN=128, TSK=16, WPTM=16, WPTN=4, WIDTH=4, PAD=0)
    b = dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=0)
    two = {"resident": {"checked": 2, "exact": 2}}
    db.record_best(dev, "5", 128, 128 * cu, 256, a, 100.0, two)    # as in the test above
    db.record_best(dev, "5", 64, 128 * cu, 1024, b, 90.0, two)
    m, n, k = 64, 128 * cu, 256
    p = SimpleNamespace(dev_a=cla.to_device(queue, rng.random((m, k), dtype=np.float32)),
                        dev_b=cla.to_device(queue, rng.random((k, n), dtype=np.float32)))
    chosen = [plans.make_plan(queue, (m, n, k), {}, {}, t, p).describe()["params"]
              for t in ({}, {"latency_warps": 0}, {})]
    assert chosen == [b, a, b]


def test_plans_script_sums_each_variant_against_the_first(monkeypatch):
    """plans.py's closing lines: each later variant x the first (first's ms over its own),
    geomean over the shapes where its plan differs from the first's and, apart, where it is
    the same; a shape either side failed at is left out."""
    plans = _plans_script(monkeypatch)

    def row(shape, variant, ms, plan):
        return {"m": shape, "n": 1, "k": 1, "variant": variant, "call_ms_median": ms,
                "plan": {"splits": plan}}
    rows = [row(1, "gemm", 2.0, 1), row(1, "off", 1.0, 2),      # changed, x2
            row(2, "gemm", 1.0, 1), row(2, "off", 2.0, 4),      # changed, x0.5
            row(3, "gemm", 1.0, 1), row(3, "off", 1.0, 1),      # same, x1
            row(4, "gemm", 1.0, 1), {"m": 4, "n": 1, "k": 1, "variant": "off",
                                     "status": "failed"}]
    assert plans.against_first(rows, ["gemm", "off"]) == [
        "off over gemm, plan changed: 2 of 3 shapes, geomean x1.000 (x0.50-2.00), faster "
        "by over 5% at 1, slower by over 5% at 1",
        "off over gemm, same plan (the rounds' noise): 1 of 3 shapes, geomean x1.000 "
        "(x1.00-1.00), faster by over 5% at 0, slower by over 5% at 0"]


def test_wave_steps_counts_latency_warps_and_slow_split_builds():
    """wave_steps by hand: a wave of g groups of w warps costs (g*w + latency_warps)/w of
    its k steps, a launch beyond one wave whole waves of the resident groups, and a launch
    in slices of a block of split_slow_block sums or more split_block_cost times its steps
    (16x8 blocks in 2-4 slices ran x0.80-0.87 as fast as wave_steps said against unsplit
    16x4 ones on an H100; the 16x4 block's slices are counted as they are)."""
    from clgemm import heuristics
    from clgemm.thresholds import DEFAULTS, Facts
    f = Facts(132)
    k5 = kernels.get("5")
    big = dict(TSM=128, TSN=128, TSK=8, WPTM=16, WPTN=8, WIDTH=4, PAD=1)      # 4 warps
    small = dict(TSM=64, TSN=128, TSK=16, WPTM=16, WPTN=4, WIDTH=4, PAD=0)    # 4 warps
    two = {"checked": 2, "exact": 2}
    h, cost = DEFAULTS["latency_warps"], DEFAULTS["split_block_cost"]
    assert (h, cost, DEFAULTS["split_slow_block"]) == (4, 1.2, 128)
    # 128 x 1024: 8 groups of 128 x 128 on 132 units, one a unit, 32 steps of 8
    assert heuristics.wave_steps(k5, big, (128, 1024, 256), f, two) == (4 + h) / 4 * 32
    # ...512 deep, split_few_min_k cuts it in 2 slices of 256: 16 groups, still one a unit
    assert heuristics.wave_steps(k5, big, (128, 1024, 512), f, two) == (4 + h) / 4 * 32 * cost
    # 2048^2: 256 groups, two a unit; 17 x 16 tiles: 272, a second wave of two a unit
    assert heuristics.wave_steps(k5, big, (2048, 2048, 512), f, two) == (8 + h) / 4 * 64
    assert heuristics.wave_steps(k5, big, (2176, 2048, 512), f, two) == 2 * (8 + h) / 4 * 64
    # the same 256 tiles in 2 slices of 32 steps: 512 groups, two waves of two a unit
    split = ((2048, 2048, 512), 2)
    assert heuristics.wave_steps(k5, big, (2048, 2048, 512), f, two, split) \
        == 2 * (8 + h) / 4 * 32 * cost
    # 64 x 128 tiles of a 64-sum block: 512 groups, 2 slices, no extra cost
    assert heuristics.wave_steps(k5, small, (1024, 4096, 512), f, {"checked": 3, "exact": 3},
                                 ((1024, 4096, 512), 2)) == 3 * (12 + h) / 4 * 16


def test_an_entry_whose_tiles_waste_c_is_passed_over(queue):
    """Skinny products: an entry tuned at m = 16 with 16-row tiles is the nearest to m = 2
    by the log distance, but computes 8 times the rows there; the entry with 4-row tiles
    (2 times, the least) is taken. At m = 16 both waste nothing and the nearest stands; at
    m = 12 the 16-row tile wastes 4/3 against 1 (within TILE_WASTE = 1.5), so it does too.
    An entry tuned at the very shape is kept whatever it wastes."""
    from clgemm import thresholds
    dev = queue.device
    tall = dict(TSM=16, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)
    flat = dict(TSM=4, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)
    db.record_best(dev, "5", 16, 256, 256, tall, 10.0)
    db.record_best(dev, "5", 1, 512, 512, flat, 1.0)
    assert thresholds.DEFAULTS["tile_waste"] == 1.5
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


def test_a_far_entry_is_taken_only_for_a_large_predicted_gain():
    """Entries farther than near_within from the nearest are candidates only within
    far_within, and win only where predicted faster by far_margin: at 1138x395x6974 the
    H200's 256x256x6144 entry (64x128 tiles of 8x4 in 4 slices) is nearest (distance 2.05)
    and 2240^3's 16x4 point lies 1.5 farther, predicted 2.3 times as fast. A far entry
    whose resident groups were never recorded cannot be predicted and is left out."""
    from clgemm import heuristics
    from clgemm.thresholds import DEFAULTS, Facts
    near = dict(shape=(256, 256, 6144), gflops=25178.4, resident={"checked": 2, "exact": 3},
                splits=16, params=dict(TSM=64, TSN=128, TSK=16, WPTM=8, WPTN=4, WIDTH=4, PAD=1))
    far = dict(shape=(2240,) * 3, gflops=41259.5, resident={"checked": 3, "exact": 3},
               params=dict(TSM=64, TSN=128, TSK=16, WPTM=16, WPTN=4, WIDTH=4, PAD=0))
    shape = (1138, 395, 6974)
    assert 0.7 < db.distance(far["shape"], shape) - db.distance(near["shape"], shape) < 1.5

    def chosen(ranked, **given):
        return heuristics.choose_entry(ranked, "5", shape,
                                       Facts(132, thresholds=dict(DEFAULTS, **given)))[1]
    ranked = [("5", near), ("5", far)]
    assert chosen(ranked) is near                                   # far_within 0: none
    assert chosen(ranked, far_within=1.5, far_margin=1.2) is far
    assert chosen(ranked, far_within=1.5, far_margin=3.0) is near   # too small a gain
    assert chosen(ranked, far_within=1.0, far_margin=1.2) is near   # too far
    unknown = dict(far)
    del unknown["resident"]
    assert chosen([("5", near), ("5", unknown)], far_within=1.5, far_margin=1.2) is near
    # within near_within the margin is wave_margin's, as before
    assert chosen(ranked, near_within=1.5, far_within=1.5, far_margin=3.0) is far


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


def test_with_no_kernel_named_the_devices_own_tune_beats_another_devices_entry(
        queue, tmp_path, monkeypatch):
    """Where several kernels were tuned at one shape the fastest speaks, but speeds measured
    on two devices do not compare: a user's own tune (kernel 5 here) goes over a shipped
    entry of a device of the same architecture (kernel 6, faster there) at that shape."""
    from clgemm import choice, device as devmod
    dev, arch = queue.device, "NVIDIA sm_90, 132 compute units"
    p = dict(TSM=32, TSN=32, TSK=8, WPTM=4, WPTN=4, WIDTH=4, PAD=0)
    sibling = tmp_path / "sibling.json"
    sibling.write_text(json.dumps({"schema": 1, "device": "Sibling | 1.0", "architecture": arch,
                                   "entries": {"6": {"64x64x64": {"params": p, "gflops": 900.0}}}}))
    monkeypatch.setattr(db, "_shipped", lambda: [sibling])
    monkeypatch.setattr(devmod, "architecture", lambda d: arch)
    assert choice.tuned_entry(queue, None, (64, 64, 64), choice.facts(dev))[0] == "6"
    db.record_best(dev, "5", 64, 64, 64, dict(p, PAD=1), 5.0)
    key, entry = choice.tuned_entry(queue, None, (64, 64, 64), choice.facts(dev))
    assert (key, entry["params"]["PAD"], "tuned_on" in entry) == ("5", 1, False)


def test_changed_choices_compares_two_versions_choices():
    """scripts/changed_choices.py, which lists the shapes where two versions launch kernel
    5 differently (the shapes a GPU A/B of a choosing rule must time): a version against
    itself changes nothing; against a copy whose thresholds read no unaligned row in place,
    exactly the shapes this one reads in place change, and their entries and slices do not;
    an entry of the same parameters taken instead counts only without --launches."""
    import json as jsonlib
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    script = root / "scripts" / "changed_choices.py"
    shapes = "999x999x999,1023x1023x1023,2047x2047x63,4096x4096x4096,5003x3001x2039"

    def run(versions, *extra):
        out = subprocess.run([sys.executable, str(script), "--versions", versions, "--shapes",
                              shapes, *extra], capture_output=True, text=True, cwd=root,
                             check=True)
        return out.stdout.splitlines()

    assert run(f"a={root},b={root}")[0].startswith("0 of 5 shapes change")
    bad = subprocess.run([sys.executable, str(script), "--versions", f"a={root},b={root}",
                          "--shapes", "999x999x999,12x"], capture_output=True, text=True,
                         cwd=root)
    assert bad.returncode == 2 and "'12x' is not MxNxK" in bad.stderr
    other = Path(tempfile.mkdtemp())
    try:
        shutil.copytree(root / "clgemm", other / "clgemm")
        doc = jsonlib.loads((other / "clgemm/tuned/nvidia-h200.json").read_text())
        doc["thresholds"].update(unaligned_max_volume=0, unaligned_light_volume=0,
                                 unaligned_heavy_volume=0)
        (other / "clgemm/tuned/nvidia-h200.json").write_text(jsonlib.dumps(doc))
        lines = run(f"a={root},b={other}")
        picked = run(f"a={root},b={other}", "--pick", "1", "--seed", "3")
        # an entry at 4001^3 with 4000^3's parameters (its --shapes replaces run's): at
        # 4001^3 another entry, the same launch, which --launches does not count
        doc = jsonlib.loads((root / "clgemm/tuned/nvidia-h200.json").read_text())
        doc["entries"]["5"]["4001x4001x4001"] = doc["entries"]["5"]["4000x4000x4000"]
        (other / "clgemm/tuned/nvidia-h200.json").write_text(jsonlib.dumps(doc))
        same = run(f"a={root},b={other}", "--shapes", "4001x4001x4001")
        launches = run(f"a={root},b={other}", "--shapes", "4001x4001x4001", "--launches")
    finally:
        shutil.rmtree(other)
    assert same[0].startswith("1 of 1 shapes change (entry's tuned shape,")
    before, after = (jsonlib.loads(x) for x in same[1].split(None, 1)[1].split(" -> "))
    assert (before[0], after[0]) == ("4000x4000x4000", "4001x4001x4001")
    assert before[1:] == after[1:]                       # slices, floats, parameters
    assert launches[0].startswith("0 of 1 shapes change (slices,")
    changed = lines[1:-1]
    assert lines[0].startswith(f"{len(changed)} of 5 shapes change") and changed
    for line in changed:
        before, after = (jsonlib.loads(x) for x in line.split(None, 1)[1].split(" -> "))
        assert before[:2] == after[:2] and before[2] and not after[2]
    # --pick: the same report, then one of the changed shapes, named on the last line
    assert picked[:-2] == lines and picked[-2].startswith("1 of them at random")
    assert picked[-1] in lines[-1].split(",")


def test_changed_choices_draws_the_ranges_it_is_given(monkeypatch):
    """changed_choices.py's --random draw: its defaults draw what they drew on 2026-12-06
    (400 draws, 391 shapes of at most 2^36 multiply-adds, the count its docstring and
    results/h100 cite), and --sizes, --depths and --max-volume widen it to the sizes users
    bring; a range that is not LO:HI is named."""
    import argparse
    import importlib.util
    import math
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "scripts" / "changed_choices.py"
    monkeypatch.syspath_prepend(str(path.parent))      # as when run: scripts/ first
    spec = importlib.util.spec_from_file_location("changed_choices", path)
    cc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cc)
    assert len(cc.draw(400, 20261206)) == 391
    wide = cc.draw(500, 7, cc.log_range("16:8192"), cc.log_range("16:8192"), 0)
    assert len(wide) > 450 and all(16 <= x <= 8192 for s in wide for x in s)
    assert min(math.prod(s) for s in wide) < 501 ** 2 * 63        # below the default range
    assert max(math.prod(s) for s in wide) > 2 ** 36                 # past the default cap
    for bad in ("16", "a:b", "0:8", "9:2"):
        with pytest.raises(argparse.ArgumentTypeError, match="LO:HI"):
            cc.log_range(bad)


def test_job_summary_compare_names_each_sides_launch(tmp_path):
    """scripts/job_summary.py compare (gpu_job.sh compare and ship-and-compare): the median
    whole call of each side over its rounds, the speedup, and the launch each side took (the
    entry's tuned shape, slices, floats read in place), which said only "5 tuned" when a
    new entry took a shape over, then the geomean of the shapes whose launch changed and of
    those whose launch did not; an unverified row is refused, not tabled."""
    import json as jsonlib
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]

    def row(ms, **launch):
        return {"m": 300, "n": 200, "k": 70, "contender": "clgemm", "kernel": "5",
                "params_source": "tuned", "verified": True, "call_ms_median": ms,
                "vs_cublas_call": 0.1 / ms, **launch}
    sides = {"before": [row(0.2, tuned_at="6144x6144x256", splits=1, floats=True),
                        row(0.4, tuned_at="6144x6144x256", splits=1, floats=True)],
             "after": [row(0.1, tuned_at="4096x4096x64", splits=2, floats=False),
                       row(0.1, tuned_at="4096x4096x64", splits=2, floats=False)]}
    for side, rows in sides.items():
        for i, r in enumerate(rows, 1):
            d = tmp_path / f"{side}-{i}" / "dev"
            d.mkdir(parents=True)
            (d / "bench-2026-12-07.json").write_text(jsonlib.dumps({"rows": [r]}))

    def run():
        return subprocess.run([sys.executable, str(root / "scripts/job_summary.py"), "compare",
                               str(tmp_path)], capture_output=True, text=True)
    out = run()
    assert out.returncode == 0, out.stderr
    line = out.stdout.splitlines()[1]
    assert line.split()[:4] == ["300x200x70", "0.3000", "0.1000", "3.00"]
    assert line.endswith("5 6144x6144x256 floats -> 5 4096x4096x64 2 slices")
    # the lines a decision reads: the changed launches' geomean, the unchanged ones' (noise)
    assert out.stdout.splitlines()[-2:] == [
        "launch changed: 1 of 1 shapes, geomean x3.000 (x3.00-3.00), faster by over 5% at 1, "
        "slower by over 5% at 0", "same launch (the rounds' noise): 0 of 1 shapes"]
    table = jsonlib.loads((tmp_path / "summary.json").read_text())
    assert table[0]["speedup"] == pytest.approx(3.0) and table[0]["rounds"] == 2
    sides["after"][0]["verified"] = False
    (tmp_path / "after-1" / "dev" / "bench-2026-12-07.json").write_text(
        jsonlib.dumps({"rows": [sides["after"][0]]}))
    out = run()
    assert out.returncode == 1 and "was not verified" in out.stderr
