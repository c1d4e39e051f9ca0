"""`clgemm bench`: every contender verified, peers that are missing reported as skipped with
their reason, results written as JSON, CSV and a plot."""

import ctypes
import json
import os

import pyopencl as cl
import pytest
from click.testing import CliRunner

from clgemm import bench as benchmod
from clgemm import contenders
from clgemm import store
from clgemm.cli import main


def clblast_loads() -> bool:
    try:
        ctypes.CDLL(os.environ.get("CLGEMM_CLBLAST") or "libclblast.so.1")
        return True
    except OSError:
        return False


def test_bench_times_the_matrix_vector_kernels_where_their_form_is(queue, home):
    """--kernels takes the matrix-vector kernels by name: timed and verified at a shape of
    their form, skipped with the reason elsewhere; bad names are refused by the command."""
    rows = benchmod.bench(queue, [None, "matvec-sweep", "matvec-dot"], [(1, 30, 70), (5, 5, 5)], [],
                          repeat=2, rounds=1, least_ms=0)
    by = {(r["m"], r["contender"]): r for r in rows}
    assert by[1, "clgemm-matvec-sweep"]["status"] == "ok" and by[1, "clgemm-matvec-sweep"]["verified"]
    assert by[1, "clgemm"]["kernel"] == by[1, "clgemm-matvec-sweep"]["kernel"] == "matvec-sweep"
    assert "these operands take matvec-sweep" in by[1, "clgemm-matvec-dot"]["reason"]
    assert "needs m = 1 or n = 1, not 5x5x5" in by[5, "clgemm-matvec-sweep"]["reason"]
    r = CliRunner().invoke(main, ["bench", "--kernels", "5,matvec", "--against", "none"])
    assert r.exit_code == 2 and "unknown tunable kernel 'matvec'" in r.output


def test_bench_rows(queue):
    rows = benchmod.bench(queue, [None, "2", "5"], [(33, 47, 21), (64, 64, 64)],
                          ["clblast", "cublas"], repeat=2, rounds=2, least_ms=0)
    by = {(r["m"], r["contender"]): r for r in rows}
    for m in (33, 64):
        for name in ("clgemm", "clgemm-2", "clgemm-5"):
            r = by[m, name]
            assert r["status"] == "ok" and r["verified"] and r["gflops"] > 0
            assert r["repeat"] == 4 and r["call_ms_min"] <= r["call_ms_median"] <= r["call_ms_max"]
            assert r["call_gflops"] == pytest.approx(2 * m * r["n"] * r["k"] / r["call_ms_median"] / 1e6)
            assert r["ms_min"] <= r["ms_median"] <= r["ms_max"] and r["timing"] == "events"
            assert r["splits"] == 1 and r["padded"] is False and r["a_kmajor"] is False   # small
        assert by[m, "clgemm-2"]["kernel"] == "2" and by[m, "clgemm"]["kernel"] in ("3", "4", "5", "6")
        assert by[m, "copy"]["gbps"] > 0
        cub = by[m, "cublas"]
        assert cub["status"] == "skipped" or cub["verified"]
        if cub["status"] == "skipped":
            assert "torch" in cub["reason"] or "CUDA" in cub["reason"]
        clb = by[m, "clblast"]
        if clblast_loads():
            assert clb["status"] == "ok" and clb["verified"]
            assert by[m, "clgemm-5"]["vs_clblast"] == pytest.approx(
                by[m, "clgemm-5"]["gflops"] / clb["gflops"])
            assert by[m, "clgemm"]["vs_clblast_call"] == pytest.approx(
                by[m, "clgemm"]["call_gflops"] / clb["call_gflops"])
        else:
            assert clb["status"] == "skipped" and "CLBlast not installed" in clb["reason"]


@pytest.mark.skipif(not clblast_loads(), reason="needs libclblast (set CLGEMM_CLBLAST)")
def test_clblast_parameter_override(queue):
    sets = {"small": {"GEMMK": 0, "KREG": 1, "KWG": 16, "KWI": 2, "MDIMA": 8, "MDIMC": 8, "MWG": 32,
                      "NDIMB": 8, "NDIMC": 8, "NWG": 32, "SA": 1, "SB": 1, "STRM": 0, "STRN": 0,
                      "VWM": 1, "VWN": 1}}
    rows = benchmod.bench(queue, [], [(40, 40, 40)], ["clblast"], repeat=2, clblast_sets=sets,
                          rounds=1)
    tuned = next(r for r in rows if r["contender"] == "clblast-small")
    assert tuned["status"] == "ok" and tuned["verified"]


def test_bench_cli_writes_results(tmp_path):
    r = CliRunner().invoke(main, ["bench", "--kernels", "4-5", "--sizes", "32,64", "--shapes",
                                  "1x70x33,70x33x1", "--against", "none", "--repeat", "2",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "method: whole calls as users make them" in r.output
    files = sorted(p.suffix for p in tmp_path.glob("*/bench-*"))
    assert ".json" in files and ".csv" in files
    doc = json.loads(next(tmp_path.glob("*/bench-*.json")).read_text())
    assert doc["commit"] == store.commit() and doc["date"] and doc["command"].startswith("clgemm bench")
    ok = [x for x in doc["rows"] if x["contender"].startswith("clgemm")]
    assert len(ok) == 3 * 4 and all(x["verified"] for x in ok)
    assert {x["contender"] for x in ok} == {"clgemm", "clgemm-4", "clgemm-5"}
    import importlib.util
    if importlib.util.find_spec("matplotlib"):      # the test extra installs it
        assert ".png" in files
    # a second run the same day is written beside the first, which stays as it was
    first = {f.name: f.read_bytes() for f in tmp_path.glob("*/bench-*")}
    r = CliRunner().invoke(main, ["bench", "--kernels", "5", "--sizes", "16", "--against", "none",
                                  "--repeat", "1", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert {f.name: f.read_bytes() for f in tmp_path.glob("*/bench-*") if f.name in first} == first
    # no square shape: no plot, and the run says why instead of leaving it out unsaid
    r = CliRunner().invoke(main, ["bench", "--kernels", "5", "--shapes", "1x9x5",
                                  "--against", "none", "--repeat", "1", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "no plot: no square shape" in r.output and not list(tmp_path.glob("o/*/*.png"))
    second = [f for f in tmp_path.glob("*/bench-*-2.json")]
    assert len(second) == 1 and json.loads(second[0].read_text())["rows"][0]["m"] == 16


def test_a_contender_that_fails_costs_neither_the_others_nor_the_shapes_before(
        monkeypatch, tmp_path):
    """Kernel 2 raises at the second shape, as a driver error would: its row records the
    error, the other contenders are timed and verified, the first shape's rows were on
    disk before the second was measured, and the command exits 1 after writing them all.
    Any error there ended the bench with nothing written."""
    real = benchmod.clgemm_contender
    seen = []

    def flaky(p, kernel):
        if kernel == "2" and p.shape[0] == 24:
            raise cl.RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")
        return real(p, kernel)

    def written(self, rows, complete=False):
        seen.append((len(rows), complete, json.loads(real_write(self, rows, complete)[0]
                                                     .read_text())["complete"]))
        return self.paths

    real_write = benchmod.Results.write
    monkeypatch.setattr(benchmod, "clgemm_contender", flaky)
    monkeypatch.setattr(benchmod.Results, "write", written)
    r = CliRunner().invoke(main, ["bench", "--kernels", "2,5", "--sizes", "16,24",
                                  "--against", "none", "--repeat", "1", "--out", str(tmp_path)])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "clgemm-2: FAILED (RuntimeError: clEnqueueNDRangeKernel failed" in r.output
    assert seen[0] == (4, False, False) and seen[-1] == (8, True, True)
    doc = json.loads(next(tmp_path.glob("*/bench-*.json")).read_text())
    by = {(x["m"], x["contender"]): x for x in doc["rows"]}
    assert by[24, "clgemm-2"]["status"] == "failed" and "OUT_OF_RESOURCES" in by[24, "clgemm-2"]["reason"]
    assert all(by[m, c]["verified"] for m in (16, 24) for c in ("clgemm", "clgemm-5"))
    assert by[16, "clgemm-2"]["verified"]


def test_results_are_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """A write that fails (a full disk) leaves no file cut off mid-object, and its error
    names the file: the old file of that name stays as it was."""
    path = tmp_path / "bench.json"
    path.write_text('{"rows": []}')

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as e:
        store.write_text_atomic(path, '{"rows": [1, 2, 3]}')
    assert e.value.filename == str(path) and e.value.errno == 28
    assert path.read_text() == '{"rows": []}' and [p.name for p in tmp_path.iterdir()] == ["bench.json"]


@pytest.mark.parametrize("args,words", [
    (["--kernels", "0"], ">= 1"),
    (["--kernels", "9"], "valid kernels"),
    (["--sizes", "12,x"], "not a number"),
    (["--shapes", "4x4"], "MxNxK"),
    (["--against", "mkl"], "unknown peer"),
    (["--sizes", "64,100000"], "32-bit integers"),
])
def test_bench_cli_errors(args, words, tmp_path):
    r = CliRunner().invoke(main, ["bench", *args, "--out", str(tmp_path)])
    assert r.exit_code != 0 and words in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("doc", ['{"sets": 5}', '{"sets": [1]}', '[1, 2]', '{"MWG": "64"}'])
def test_clblast_params_file_must_hold_sets(tmp_path, doc):
    f = tmp_path / "p.json"
    f.write_text(doc)
    r = CliRunner().invoke(main, ["bench", "--sizes", "16", "--against", "clblast",
                                  "--clblast-params", str(f)])
    assert r.exit_code != 0 and "expected a JSON object of NAME: integer" in r.output
    assert "Traceback" not in r.output


def test_short_calls_are_timed_for_a_least_duration():
    """A call shorter than least_ms / repeat is made as many times as fill least_ms (the
    host's jitter needs more samples of a short call), a long one `repeat` times."""
    import time
    calls = []
    out = benchmod.wall(lambda: calls.append(1), lambda: None, repeat=3, least_ms=5.0)
    assert len(out) > 3 and len(calls) == len(out) + 1
    slow = benchmod.wall(lambda: time.sleep(0.004), lambda: None, repeat=3, least_ms=5.0)
    assert len(slow) == 3


def test_device_span_falls_back_to_host_time():
    """Where markers cannot be timed, the row says so and the host time stands in."""
    class Blind:
        def begin(self):
            pass

        def end(self):
            return None
    calls = []
    dev, host = benchmod.measure(lambda: calls.append(1), Blind(), repeat=3)
    assert dev is None and len(host.ms) == 3 and len(calls) == 4


def test_device_span_brackets_every_kernel_of_a_call(queue):
    """A call that enqueues two launches is timed from before the first kernel starts to
    after the second one ends, by the kernels' own profiling times. (Comparing the spans of
    one and two launches flaked on 2 cores, where a launch's span swings 1-2x.)"""
    import numpy as np
    from clgemm import operands, timing
    from clgemm.gemm import GemmPlan
    plan = GemmPlan(queue, "2", {"TS": 8})
    a = operands.raw(queue, np.ones((128, 128), np.float32), 1)
    c = operands.empty(queue, 128, 128, 128)
    span = contenders.OpenCLSpan(queue)
    for _ in range(3):
        span.begin()
        evs = timing.events(plan.launch(a, a, c)) + timing.events(plan.launch(a, a, c))
        ms = span.end()
        assert ms is not None and len(evs) == 2
        first, last = evs[0].profile, evs[-1].profile
        assert last.start >= first.end                    # in order: the second after the first
        assert ms * 1e6 >= (last.end - first.start) * (1 - 1e-9)   # the span covers both kernels


def test_the_default_set_on_a_cpu_device_stops_at_2048_cubed(monkeypatch, tmp_path):
    """On a CPU device the default set keeps the products up to 2048^3's work (the whole
    set, 8192^3 at half a minute a call on pocl, would take hours) and says which it left
    out; elsewhere it is the whole set. Shapes named are run whatever their size. The
    devices are stand-ins, so that the test holds on any device it runs on."""
    class Device:
        def __init__(self, type_):
            self.type = type_
    cpu, gpu = Device(cl.device_type.CPU), Device(cl.device_type.GPU)
    kept, left = benchmod.default_shapes(cpu)
    every = ([(s, s, s) for s in benchmod.DEFAULT_SIZES] + list(benchmod.DEFAULT_SHAPES)
             + list(benchmod.ODD_SHAPES))
    assert sorted(kept + left) == sorted(every)
    assert (2048, 2048, 2048) in kept and (2, 8192, 8192) in kept and (4096, 32, 4096) in kept
    assert (4096, 4096, 4096) in left and (8192, 8192, 8192) in left and (5003, 3001, 2039) in left
    assert all(2 * m * n * k <= benchmod.CPU_DEFAULT_FLOPS for m, n, k in kept)
    assert benchmod.default_shapes(gpu) == (every, [])

    # the CLI on a CPU device, whatever device this is
    real = benchmod.default_shapes
    monkeypatch.setattr(benchmod, "default_shapes", lambda device: real(cpu))
    asked = []
    monkeypatch.setattr(benchmod, "bench", lambda q, keys, shapes, *a, **k: asked.append(shapes) or [])
    r = CliRunner().invoke(main, ["bench", "--against", "none", "--out", str(tmp_path)])
    assert r.exit_code == 0 and asked[-1] == kept, r.output
    assert "left out 4096x4096x4096" in r.output and "8192x8192x8192" in r.output
    r = CliRunner().invoke(main, ["bench", "--against", "none", "--sizes", "4096", "--out", str(tmp_path)])
    assert r.exit_code == 0 and asked[-1] == [(4096, 4096, 4096)] and "left out" not in r.output


def test_results_name_the_commit_of_their_code(tmp_path, monkeypatch):
    """store.commit, which the bench's JSON and the result scripts record: $CLGEMM_COMMIT
    where set (a tree copied without .git), else the checkout's HEAD, "+changes" where a
    tracked file differs from it, "unknown" outside a checkout."""
    import subprocess
    monkeypatch.setenv("CLGEMM_COMMIT", "abc1234")
    assert store.commit() == "abc1234"
    monkeypatch.delenv("CLGEMM_COMMIT")
    assert store.commit(tmp_path) == "unknown"
    git = lambda *a: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a],  # noqa: E731
                                    cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    (tmp_path / "f").write_text("1")
    git("add", "f")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "--short", "HEAD")
    assert store.commit(tmp_path) == head
    (tmp_path / "g").write_text("untracked")          # untracked files do not count
    assert store.commit(tmp_path) == head
    (tmp_path / "f").write_text("2")
    assert store.commit(tmp_path) == head + "+changes"
    (tmp_path / "sub").mkdir()                        # a folder inside another checkout
    assert store.commit(tmp_path / "sub") == "unknown"


def test_an_error_in_a_contenders_check_is_a_failure_not_a_skip(monkeypatch, tmp_path):
    """Only a refusal as planned (a kernel this device cannot run, a matrix-vector kernel
    named where its form is not) skips a contender; any other ValueError, a bug in the
    check say, fails its row and the command (it was turned into a skip, exit status 0)."""
    def broken(self, rows_out):
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(contenders.Problem, "check", broken)
    r = CliRunner().invoke(main, ["bench", "--kernels", "2", "--sizes", "8", "--against", "none",
                                  "--repeat", "1", "--out", str(tmp_path)])
    assert r.exit_code == 1 and "clgemm-2: FAILED (ValueError: operands could not" in r.output


def test_two_benches_of_a_day_take_names_of_their_own(queue, tmp_path):
    """The name is taken when a bench starts, not when it first writes: two started the
    same day, each before the other had measured a shape, chose one name and wrote over
    each other's results."""
    first = benchmod.Results(queue, tmp_path, "clgemm bench (first)")
    second = benchmod.Results(queue, tmp_path, "clgemm bench (second)")
    assert first.stem != second.stem
    first.write([{"m": 1, "n": 1, "k": 1, "contender": "clgemm", "status": "ok"}])
    second.write([])
    assert json.loads(first.stem.with_suffix(".json").read_text())["command"] == "clgemm bench (first)"
    assert json.loads(second.stem.with_suffix(".json").read_text())["rows"] == []


def test_a_refused_bench_leaves_no_file(tmp_path):
    """A bench refused before it measures (a shape too large) gives its reserved name back."""
    r = CliRunner().invoke(main, ["bench", "--sizes", "64,100000", "--against", "none",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 2 and "32-bit integers" in r.output
    assert list(tmp_path.glob("*/bench-*")) == []


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_a_bench_stopped_before_its_first_shape_leaves_no_file(monkeypatch, tmp_path, error):
    def stopped(*a, **kw):
        raise error("planted")
    monkeypatch.setattr(benchmod, "bench", stopped)
    r = CliRunner().invoke(main, ["bench", "--sizes", "8", "--against", "none",
                                  "--out", str(tmp_path)])
    assert r.exit_code == (130 if error is KeyboardInterrupt else 1)
    assert list(tmp_path.glob("*/bench-*")) == []


def test_a_bench_needs_no_hard_links(queue, tmp_path, monkeypatch):
    """The results' name is taken by creating the file exclusively: taken by a hard link,
    every bench failed at its start on a file system without them (vfat, some network
    shares)."""
    def no_link(*a, **kw):
        raise OSError(1, "Operation not permitted")
    monkeypatch.setattr(os, "link", no_link)
    first = benchmod.Results(queue, tmp_path, "clgemm bench")
    second = benchmod.Results(queue, tmp_path, "clgemm bench")
    assert first.stem != second.stem and first.write([]) and second.write([])
