"""The tuner's split-K stage and the counts it records: every count timed is checked, the
finalists' (configuration, count) pairs interleaved in rounds, a failing, wrong or hung
pair handled, the fewest slices within the margin recorded, and gemm() launching a tuned
count (as tuned at its shape, kept deep and its workspace small elsewhere)."""

import functools
import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import clgemm
from clgemm import db, timing, verify
from clgemm.cli import main
from clgemm.gemm import GemmPlan
from clgemm.tune import tune

from .conftest import SKINNY, SMALL


pytestmark = pytest.mark.usefixtures("home")   # conftest: a database of its own


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
    from clgemm import operands, thresholds
    p = SMALL["5"][0]                          # 32 x 32 tiles
    db.record_best(queue.device, "5", 64, 64, 1024, p, 1.0, {"splits": 1})   # 4 groups
    # 32 x 32 x 256: one group; the same total would be 4 slices of 64, thinner than 512
    assert GemmPlan(queue, "5", shape=(32, 32, 256)).splits(32, 32, 256) == 1
    # 32 x 32 x 4096: 4 slices of 1024 are deep enough
    assert GemmPlan(queue, "5", shape=(32, 32, 4096)).splits(32, 32, 4096) == 4
    db.record_best(queue.device, "5", *SKINNY, p, 1.0, {"splits": 16})
    # SKINNY's 16 slices are 32 deep: 1 x 64 x 384 may take slices of 16 (SPLIT_THINNER = 2),
    # so 16 slices; half that depth again is too thin (1 x 64 x 192: 8 slices, not 16)
    assert thresholds.DEFAULTS["split_thinner"] == 2
    assert GemmPlan(queue, "5", shape=(1, 64, 384)).splits(1, 64, 384) == 16
    assert GemmPlan(queue, "5", shape=(1, 64, 192)).splits(1, 64, 192) == 8
    plan = GemmPlan(queue, "5", shape=SKINNY)
    assert plan.splits(*SKINNY) == 16
    monkeypatch.setattr(operands, "MAX_ELEMENTS", 4 * 64)   # 4 slices of 1 x 64
    plan = GemmPlan(queue, "5", shape=SKINNY)   # (a plan keeps its answers: a new one asks)
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
