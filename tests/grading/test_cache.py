"""GradeCache: verdicts saved between runs, keyed by digest, tied to GRADER_VERSION."""

from __future__ import annotations

import json

import pytest
from grading_cases import TABLE

from isocompute.grading import GRADER_VERSION, GradeCache, Verdict, grade, grade_many, judge_many, sandbox


def test_grade_many_matches_grade_and_fills_cache(tmp_path):
    completions = [c for c, _, _ in TABLE]
    truths = [t for _, t, _ in TABLE]
    cache = GradeCache()
    verdicts = grade_many(completions, truths, cache=cache, num_workers=3)
    assert verdicts == [grade(c, t) for c, t in zip(completions, truths)]
    assert verdicts == [e for _, _, e in TABLE]
    assert len(cache) == len({(c, t) for c, t in zip(completions, truths)})
    assert cache.get("\\boxed{42}", "42") is True

    path = tmp_path / "grades.json"
    cache.save(path)
    loaded = GradeCache.load(path)
    assert len(loaded) == len(cache)
    assert all(loaded.get(c, t) == v for c, t, v in zip(completions, truths, verdicts))


def test_grade_many_reuses_cached_grades():
    cache = GradeCache()
    cache.put("\\boxed{42}", "42", False)  # a planted verdict proves the cache is read
    assert grade_many(["\\boxed{42}", "\\boxed{7}"], ["42", "7"], cache=cache) == [False, True]
    assert cache.get("\\boxed{7}", "7") is True


def test_cache_keys_and_versions(tmp_path):
    assert GradeCache.key("ab", "c") != GradeCache.key("a", "bc")
    assert GradeCache.load(tmp_path / "missing.json").get("x", "y") is None
    with pytest.raises(FileNotFoundError):
        GradeCache.load(tmp_path / "missing.json", missing_ok=False)
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"grader_version": "0", "grades": {GradeCache.key("a", "b"): True}}))
    assert len(GradeCache.load(stale)) == 0


@pytest.mark.parametrize("reason", [sandbox.NO_TIME, sandbox.TIMEOUT])
def test_pairs_that_timed_out_are_not_cached(monkeypatch, reason):
    # A timeout says nothing about the pair (the machine was slow): a saved
    # cache must not keep it as a verdict, so the next scoring grades it again.
    monkeypatch.setattr(sandbox, "slow_verdict", lambda *args: (Verdict.TIMED_OUT, reason))
    cache = GradeCache()
    assert judge_many(["\\boxed{x+x}", "\\boxed{2}"], ["2x", "2"], cache=cache) == [Verdict.TIMED_OUT, Verdict.CORRECT]
    assert ("\\boxed{x+x}", "2x") not in cache
    assert cache.get("\\boxed{2}", "2") is True
    monkeypatch.undo()
    sandbox.clear_memo()
    assert judge_many(["\\boxed{x+x}"], ["2x"], cache=cache) == [Verdict.CORRECT]
    assert cache.get("\\boxed{x+x}", "2x") is True


def test_a_tiny_deadline_is_not_cached():
    # A real timeout (no worker answers within microseconds), not a planted one.
    sandbox.clear_memo()
    cache = GradeCache()
    assert judge_many(["\\boxed{3x+3}"], ["3(x+1)"], timeout_s=1e-6, cache=cache) == [Verdict.TIMED_OUT]
    assert len(cache) == 0
    sandbox.clear_memo()


def test_save_is_atomic_and_compact(tmp_path):
    cache = GradeCache()
    cache.put("\\boxed{1}", "1", True)
    path = tmp_path / "run" / "grades.json"
    cache.save(path)
    grades = {GradeCache.key("\\boxed{1}", "1"): True}
    assert json.loads(path.read_text()) == {"grader_version": GRADER_VERSION, "digest": GradeCache.digest(grades),
                                            "grades": grades}
    assert "\n" not in path.read_text()
    assert [p.name for p in path.parent.iterdir()] == ["grades.json"]  # no temporary left behind
