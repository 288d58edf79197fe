"""GradeCache: verdicts saved between runs, keyed by digest, tied to GRADER_VERSION."""

from __future__ import annotations

import json

import pytest
from grading_cases import TABLE

from isocompute.grading import GradeCache, grade, grade_many


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
