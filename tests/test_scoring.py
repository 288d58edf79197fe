"""score_run: a run's validation dumps re-graded into its evaluation table, where
samples the grader could not decide in time score as not correct and are counted."""

from __future__ import annotations

import json

from isocompute.grading import GradeCache, Verdict, sandbox
from isocompute.scoring import ScoredRun, ScoreSettings, score_run


def _run_dir(tmp_path):
    run = tmp_path / "bp2_n2"
    (run / "generations").mkdir(parents=True)
    rows = {
        0: [("p1", "\\boxed{x+x}", "2x"), ("p1", "\\boxed{3}", "2"), ("p2", "\\boxed{5}", "5"), ("p2", "\\boxed{6}", "5")],
        2: [("p1", "\\boxed{2}", "2"), ("p1", "\\boxed{2}", "2"), ("p2", "\\boxed{y+y}", "2y"), ("p2", "\\boxed{5}", "5")],
    }
    for step, samples in rows.items():
        lines = [json.dumps({"problem_id": p, "sample": i % 2, "output": out, "gts": gt, "step": step})
                 for i, (p, out, gt) in enumerate(samples)]
        (run / "generations" / f"{step}.jsonl").write_text("\n".join(lines) + "\n")
    (run / "metrics.jsonl").write_text(json.dumps({"step": 2, "data": {"perf/tokens_generated_cumulative": 40}}) + "\n")
    # What the train rule records of the evaluations, which scoring checks the dumps against.
    (run / "run.json").write_text(json.dumps({"eval_steps": [0, 2], "val_problems": 2}))
    return run


def test_timeouts_score_as_not_correct_are_counted_and_not_cached(tmp_path, monkeypatch):
    run = _run_dir(tmp_path)
    # Every symbolic pair times out (the numeric ones never reach math-verify).
    monkeypatch.setattr(sandbox, "slow_verdict", lambda *args: (Verdict.TIMED_OUT, sandbox.TIMEOUT))
    table = score_run(run, ScoredRun("easy", 2, 2), ScoreSettings(2))
    assert table["step"].tolist() == [0, 2]
    assert table["timeouts"].tolist() == [1, 1]
    assert table["avg@2"].tolist() == [0.25, 0.75]  # a timed-out sample is not correct
    cache = GradeCache.load(run / "grades_cache.json")
    assert len(cache) == 4 and ("\\boxed{x+x}", "2x") not in cache
    # Scoring again with a grader that has time grades them on their merits.
    monkeypatch.undo()
    sandbox.clear_memo()
    table = score_run(run, ScoredRun("easy", 2, 2), ScoreSettings(2))
    assert table["timeouts"].tolist() == [0, 0]
    assert table["avg@2"].tolist() == [0.5, 1.0]
    assert len(GradeCache.load(run / "grades_cache.json")) == 6  # distinct pairs
    sandbox.clear_memo()


def test_a_step_with_too_many_timeouts_fails_the_score_naming_run_step_and_share(tmp_path, monkeypatch):
    import pytest

    from isocompute.grading import TooManyTimeouts

    run = _run_dir(tmp_path)
    monkeypatch.setattr(sandbox, "slow_verdict", lambda *args: (Verdict.TIMED_OUT, sandbox.TIMEOUT))
    # One of each step's 4 samples times out: a share of 0.25.
    table = score_run(run, ScoredRun("easy", 2, 2, 1), ScoreSettings(2, max_timeout_share=0.25))
    assert table["timeouts"].tolist() == [1, 1]
    with pytest.raises(TooManyTimeouts, match=r"score easy bp2_n2_s1 step 0: 1 of 4 graded pairs timed out "
                                              r"\(share 0\.25 > grading\.max_timeout_share = 0\.2\)"):
        score_run(run, ScoredRun("easy", 2, 2, 1), ScoreSettings(2, max_timeout_share=0.2))
    sandbox.clear_memo()
