"""Corrupted or incomplete run artifacts are refused with one line naming the file, or
detected and recomputed; never silently used: validation dumps checked against run.json,
grade caches checksummed and spot-checked, evaluation tables with metrics out of their
order, garbled run.json, truncated parquet files and torn run logs."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest

from isocompute.analysis.fits.synthetic import synthetic_evals
from isocompute.analysis.inputs.check import check_evals
from isocompute.analysis.inputs.collect import read_run_tables
from isocompute.cli import main
from isocompute.errors import InputError
from isocompute.grading import GradeCache, Verdict, sandbox, spot_check_cache
from isocompute.scoring import ScoredRun, ScoreSettings, score_run

PROBLEMS, SAMPLES, STEPS = 3, 4, (0, 2, 4)


def write_run(tmp_path, *, record_problems: bool = True):
    """A finished run's folder as the train rule leaves it: a dump per evaluation step (3 problems
    x 4 samples, plain numbers: graded without math-verify), metrics, run.json and its val set."""
    run = tmp_path / "bp2_n2"
    (run / "generations").mkdir(parents=True)
    pd.DataFrame({"problem_id": [f"p{i}" for i in range(PROBLEMS)]}).to_parquet(tmp_path / "val.parquet")
    for step in STEPS:
        lines = [{"input": f"q{p}", "output": f"\\boxed{{{(p + s + step) % 3}}}", "gts": str(p), "step": step,
                  "problem_id": f"p{p}", "sample": s} for p in range(PROBLEMS) for s in range(SAMPLES)]
        (run / "generations" / f"{step}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 4, "data": {"perf/tokens_generated_cumulative": 9}}) + "\n")
    meta = {"B_p": 2, "n": 2, "split": "easy", "replicate": 0, "eval_steps": list(STEPS),
            "val_file": str(tmp_path / "val.parquet"), "config": {"experiment": "x", "eval": {"extra_sets": []}}}
    if record_problems:
        meta["val_problems"] = PROBLEMS
    (run / "run.json").write_text(json.dumps(meta))
    return run


def score(run, **kw):
    return score_run(run, ScoredRun("easy", 2, 2), ScoreSettings(4, samples=SAMPLES), **kw)


def drop_lines(path, keep):
    lines = path.read_text().splitlines()
    path.write_text("".join(line + "\n" for line in lines if keep(json.loads(line))))


# --- 1, 2: every dump the run recorded, each with every problem and every sample -------------

@pytest.mark.parametrize("record_problems", [True, False])  # run.json's count, or the val file's
def test_a_dump_missing_a_problem_is_refused_naming_file_and_step(tmp_path, record_problems):
    run = write_run(tmp_path, record_problems=record_problems)
    assert score(run)["problems"].tolist() == [PROBLEMS] * len(STEPS)
    drop_lines(run / "generations" / "2.jsonl", lambda r: r["problem_id"] != "p1")
    with pytest.raises(InputError, match=r"generations/2\.jsonl: step 2: problem\(s\) \['p1'\] missing"):
        score(run)


@pytest.mark.parametrize("record_problems", [True, False])
def test_a_problem_missing_from_every_dump_is_refused_against_the_validation_set(tmp_path, record_problems):
    run = write_run(tmp_path, record_problems=record_problems)
    for step in STEPS:
        drop_lines(run / "generations" / f"{step}.jsonl", lambda r: r["problem_id"] != "p2")
    source = "run.json" if record_problems else "val.parquet"
    with pytest.raises(InputError, match=rf"0\.jsonl: step 0: 2 problems, expected the 3 of .*{source}"):
        score(run)


def test_a_problem_with_fewer_samples_is_refused(tmp_path):
    run = write_run(tmp_path)
    drop_lines(run / "generations" / "4.jsonl", lambda r: not (r["problem_id"] == "p0" and r["sample"] == 3))
    with pytest.raises(InputError, match=r"4\.jsonl: step 4: problem 'p0' has 3 samples, expected 4 \(eval\.samples\)"):
        score(run)


def test_a_deleted_dump_is_refused_naming_it_and_run_json(tmp_path):
    run = write_run(tmp_path)
    (run / "generations" / "2.jsonl").unlink()
    with pytest.raises(InputError, match=r"generations/2\.jsonl: missing, but .*run\.json records step 2"):
        score(run)
    # A rung's scoring checks the steps up to it only, against the rung's marker when it has one.
    assert score(run, max_step=0)["step"].tolist() == [0]
    (run / "rungs" / "1").mkdir(parents=True)
    meta = json.loads((run / "run.json").read_text())
    (run / "rungs" / "1" / "rung.json").write_text(json.dumps({**meta, "stop_at_step": 2, "eval_steps": [0, 2]}))
    (run / "run.json").unlink()  # the run has not reached M_max yet
    with pytest.raises(InputError, match=r"generations/2\.jsonl: missing, but .*rungs/1/rung\.json records step 2"):
        score(run, max_step=2)
    with pytest.raises(InputError, match=r"run\.json: not found; the run has not finished"):
        score(run)


def test_a_null_ground_truth_in_a_dump_is_refused(tmp_path):
    run = write_run(tmp_path)
    path = run / "generations" / "4.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[5]["gts"] = None
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"4\.jsonl: line 6: gts is null"):
        score(run)


# --- 4: the grade cache -----------------------------------------------------------------------

def test_an_edited_or_torn_grade_cache_is_ignored_and_rebuilt(tmp_path, caplog):
    run = write_run(tmp_path)
    truth = score(run)
    cache_path = run / "grades_cache.json"
    saved = json.loads(cache_path.read_text())
    assert saved["digest"] == GradeCache.digest(saved["grades"])
    # An edit that leaves the digest as it was.
    edited = {**saved, "grades": {k: True for k in saved["grades"]}}
    cache_path.write_text(json.dumps(edited))
    with caplog.at_level(logging.WARNING):
        pd.testing.assert_frame_equal(score(run), truth)
    assert f"ignoring grade cache {cache_path}: its digest does not match" in caplog.text
    # An edit with its digest recomputed: the spot check finds it.
    edited["digest"] = GradeCache.digest(edited["grades"])
    cache_path.write_text(json.dumps(edited))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        pd.testing.assert_frame_equal(score(run), truth)
    assert f"ignoring grade cache {cache_path}:" in caplog.text and "spot-checked verdicts differ" in caplog.text
    # A torn file (a copy cut short) no longer crashes the score job.
    cache_path.write_text(cache_path.read_text()[: len(cache_path.read_text()) // 2])
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        pd.testing.assert_frame_equal(score(run), truth)
    assert f"ignoring grade cache {cache_path}: unreadable" in caplog.text
    assert len(GradeCache.load(cache_path)) == len(saved["grades"])  # rebuilt whole


def test_a_spot_check_that_times_out_is_no_disagreement(monkeypatch):
    pair = ("\\boxed{x+x}", "2x")  # symbolic: graded by math-verify, which can time out
    cache = GradeCache()
    cache.put(*pair, False)  # a wrong verdict
    monkeypatch.setattr(sandbox, "slow_verdict", lambda *args: (Verdict.TIMED_OUT, sandbox.TIMEOUT))
    assert spot_check_cache(cache, [pair[0]], [pair[1]], "cache") is cache
    monkeypatch.undo()
    sandbox.clear_memo()
    assert len(spot_check_cache(cache, [pair[0]], [pair[1]], "cache")) == 0
    sandbox.clear_memo()


# --- 3: metrics out of the order they have by construction --------------------------------------

def test_metrics_out_of_order_are_refused_and_analyze_exits_2(tmp_path, capsys):
    evals = synthetic_evals(B_ps=(32, 64), ns=(8, 16), points=12, noise=0.0, seed=1)
    check_evals(evals)
    bad = evals.copy()
    bad.loc[5, "avg@4"] = bad.loc[5, "best@4"] + 0.1
    with pytest.raises(InputError, match=r"row 5 \(step \d+\) has avg@4 = .* above best@4"):
        check_evals(bad)
    bad.to_parquet(tmp_path / "evals.parquet")
    assert main(["analyze", str(tmp_path / "evals.parquet"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "above best@4" in err
    unbiased = evals.assign(**{"pass@1": evals["avg@4"], "pass@4_unbiased": evals["avg@4"] - 0.01})
    with pytest.raises(InputError, match=r"pass@1 = .* above pass@4_unbiased"):
        check_evals(unbiased)


def test_a_scored_table_is_in_order(tmp_path):
    check_evals(score(write_run(tmp_path)))


# --- 6: garbled run.json, truncated parquet files, torn run logs ---------------------------------

def test_a_garbled_run_json_is_refused_naming_it(tmp_path):
    run = write_run(tmp_path)
    score(run).to_parquet(run / "evals.parquet")
    (run / "run.json").write_text('{"B_p": 2, "n"')
    with pytest.raises(InputError, match=r"run\.json: not valid JSON .*delete it so the rule"):
        score(run)
    with pytest.raises(InputError, match=r"run\.json: not valid JSON"):
        read_run_tables(run)


def test_a_truncated_parquet_is_refused_naming_it(tmp_path, capsys):
    run = write_run(tmp_path)
    score(run).to_parquet(run / "evals.parquet")
    data = (run / "evals.parquet").read_bytes()
    (run / "evals.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"evals\.parquet: not a readable parquet file .*delete it so the rule"):
        read_run_tables(run)
    (tmp_path / "difficulty.parquet").write_bytes(data[:100])
    from isocompute.data.pool import Family, embedded_pool

    embedded_pool([Family("a", 2, (1, 1), "+", 0.5)], 3, 0, "Put it in \\boxed{}.").to_parquet(tmp_path / "pool.parquet")
    params = json.dumps({"seed": 0, "splits": {}})
    assert main(["splits", "--params", params, "--pool", str(tmp_path / "pool.parquet"), "--difficulty",
                 str(tmp_path / "difficulty.parquet"), "--out-dir", str(tmp_path / "splits")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "difficulty.parquet: not a readable parquet file" in err


def test_a_torn_last_log_line_is_dropped_and_other_damage_refused(tmp_path, caplog):
    run = write_run(tmp_path)
    score(run).to_parquet(run / "evals.parquet")
    rates = [{"step": s, "problem_id": "t0", "pass_rate": 0.5} for s in (1, 2, 3)]
    text = "".join(json.dumps(r) + "\n" for r in rates)
    (run / "train_pass_rates.jsonl").write_text(text + '{"step": 4, "probl')  # a writer killed mid-line
    with caplog.at_level(logging.WARNING):
        _, got = read_run_tables(run)
    assert got["step"].tolist() == [1, 2, 3] and "dropped its torn last line 4" in caplog.text
    lines = text.splitlines()
    (run / "train_pass_rates.jsonl").write_text("\n".join([lines[0], lines[1][:9], lines[2]]) + "\n")
    with pytest.raises(InputError, match=r"train_pass_rates\.jsonl: line 2 is not JSON, and lines follow it"):
        read_run_tables(run)
