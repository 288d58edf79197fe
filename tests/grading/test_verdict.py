"""`grade` and `grade_many` agree with math-verify on a table of completions."""

from __future__ import annotations

import pytest
from grading_cases import TABLE, raw_math_verify

from isocompute.grading import grade, grade_many


@pytest.mark.parametrize(("completion", "truth", "expected"), TABLE)
def test_table_agrees_with_math_verify(completion, truth, expected):
    assert grade(completion, truth) is expected
    assert raw_math_verify(completion, truth) is expected


def test_argument_errors():
    with pytest.raises(ValueError):
        grade_many(["\\boxed{1}"], [])
    with pytest.raises(ValueError):
        grade("\\boxed{1}", "1", timeout_s=0)
