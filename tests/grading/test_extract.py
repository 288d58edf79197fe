"""Answer extraction: the last complete box, else the final number."""

from __future__ import annotations

import pytest

from isocompute.grading import extract_answer, grade


def test_last_box_wins():
    # Deliberate divergence: math-verify collects every box into {1, 2}; a
    # model that corrects itself is graded on its last answer.
    completion = "First guess \\boxed{1} ... wait, no: \\boxed{2}"
    assert extract_answer(completion) == "2"
    assert grade(completion, "2") is True
    assert grade(completion, "1") is False


@pytest.mark.parametrize(
    ("completion", "answer"),
    [
        ("\\boxed{\\frac{3}{4}}", "\\frac{3}{4}"),
        ("\\boxed{ 42 }.", "42"),
        ("a \\boxed{\\{1,2\\}} b", "\\{1,2\\}"),
        ("\\boxed{3} then \\boxed{}", "3"),
        ("\\boxed{7} then \\boxed{8", "7"),
        ("the sum is 12, so \\boxed{1", None),
        ("so the result is 61.", "61"),
        ("total: 1,234,567 items", "1234567"),
        ("it is 3/4", "3/4"),
        ("it is $\\frac{5}{8}$", "\\frac{5}{8}"),
        ("from 3-5 we get", "5"),
        ("x = -2.5 here", "-2.5"),
        ("", None),
        ("no digits here", None),
    ],
)
def test_extract_answer(completion, answer):
    assert extract_answer(completion) == answer


def test_ground_truth_forms():
    assert grade("\\boxed{42}", "\\boxed{42}") is True
    assert grade("\\boxed{42}", "$42$") is True
    assert grade("\\boxed{42}", 42) is True  # datasets that store ints
    assert grade("\\boxed{42}", "") is False
