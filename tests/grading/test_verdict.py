"""`grade` and `grade_many` agree with math-verify on a table of completions,
say why a completion was graded as it was, and keep one deadline per call."""

from __future__ import annotations

import time

import pytest
from grading_cases import TABLE, TOWER, raw_math_verify, timed

from isocompute.grading import grade, grade_many, grade_with_reason, sandbox, verdict, warm_up


@pytest.mark.parametrize(("completion", "truth", "expected"), TABLE)
def test_table_agrees_with_math_verify(completion, truth, expected):
    assert grade(completion, truth) is expected
    assert raw_math_verify(completion, truth) is expected


def test_argument_errors():
    with pytest.raises(ValueError):
        grade_many(["\\boxed{1}"], [])
    with pytest.raises(ValueError):
        grade("\\boxed{1}", "1", timeout_s=0)
    with pytest.raises(ValueError, match="max_chars"):
        grade("\\boxed{1}", "1", max_chars=0)


@pytest.mark.parametrize(
    ("completion", "truth", "expected"),
    [
        ("\\boxed{42}", "42", (True, "numeric")),
        ("\\boxed{41}", "42", (False, "numeric")),
        ("\\boxed{1+x^2}", "x^2+1", (True, "math-verify")),
        ("\\boxed{x^2-1}", "x^2+1", (False, "math-verify")),
        ("I am not sure.", "42", (False, "no answer")),
        ("\\boxed{42", "42", (False, "no answer")),
        ("\\boxed{42}", "", (False, "no ground truth")),
        ("\\boxed{42\x1b[31m}", "31", (False, "control character")),
    ],
)
def test_reasons(completion, truth, expected):
    assert grade_with_reason(completion, truth) == expected


def test_one_deadline_covers_extraction(monkeypatch):
    warm_up()
    read_answer = verdict.read_answer

    def slow_read_answer(*args, **kwargs):
        time.sleep(0.6)
        return read_answer(*args, **kwargs)

    monkeypatch.setattr(verdict, "read_answer", slow_read_answer)
    sandbox.clear_memo()
    # math-verify gets what extraction left of the second: 0.4 s, not 1 s.
    (correct, reason), seconds = timed(grade_with_reason, TOWER, "42", timeout_s=1.0)
    assert (correct, reason) == (False, "timeout")
    assert 0.9 <= seconds < 1.0 + 0.5
    # Extraction that outlasts the deadline leaves math-verify nothing.
    (correct, reason), seconds = timed(grade_with_reason, "\\boxed{x+1}", "1+x", timeout_s=0.5)
    assert (correct, reason) == (False, "no time left")
    assert seconds < 0.5 + 0.5
    sandbox.clear_memo()


def test_grade_many_gives_each_pair_its_own_timeout():
    # Three ready workers: the honest answer need not wait for the
    # replacement of a worker killed on a tower (that wait would count).
    warm_up(3)
    sandbox.clear_memo()
    towers = ["\\boxed{9^{9^{9^{9}}}}", "\\boxed{8^{8^{8^{8}}}}"]
    verdicts, seconds = timed(grade_many, towers + ["\\boxed{2x}"], ["1", "1", "x+x"], timeout_s=1.0)
    assert verdicts == [False, False, True]
    assert seconds < 3 * 1.0 + 0.5
