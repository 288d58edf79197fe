"""The grader's written limits (`grading.limits`, `extract.MAX_NESTING`), decided before
math-verify: wrappers read through, and exponents, factorials and sizes over a limit turned
away as "too large", right answers included (docs/methods.md, section 5)."""

from __future__ import annotations

import time

import pytest

from isocompute.grading import adversarial, grade_with_reason, sandbox
from isocompute.grading.limits import MAX_EXPONENT, MAX_FACTORIAL, MAX_TERMS, too_large, unwrap
from isocompute.grading.numeric import fast_verdict, integer_sum


@pytest.fixture
def no_math_verify(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("decided before math-verify")

    monkeypatch.setattr(sandbox, "slow_verdict", refuse)


@pytest.mark.parametrize("case", adversarial.DECIDED_BY_A_LIMIT, ids=lambda c: c.kind)
def test_the_reviews_cases_are_decided_before_math_verify(case, no_math_verify):
    start = time.process_time()
    assert grade_with_reason(case.completion, case.ground_truth, timeout_s=1.0) == (case.correct, case.reason)
    assert time.process_time() - start < 0.5  # CPU seconds: load cannot fail it


@pytest.mark.parametrize(("text", "large"), [
    (f"2^{{{MAX_EXPONENT}}}", False), (f"2^{{{MAX_EXPONENT + 1}}}", True), (f"x^{{-{MAX_EXPONENT + 1}}}", True),
    ("2^{2024}", False), ("x^{9^{9^{9}}}", True), ("e^{10^{10}}", True), ("2^100001", True), ("(x+1)^{10^{9}}", True),
    (f"{MAX_FACTORIAL}!", False), (f"{MAX_FACTORIAL + 1}!", True), ("(10^{6})!!", True), ("{10^{5}}!", True),
    (f"\\Gamma({MAX_FACTORIAL})", False), (f"\\Gamma\\left({MAX_FACTORIAL + 1}\\right)", True),
    (f"\\binom{{{MAX_FACTORIAL + 1}}}{{2}}", True), (f"\\dbinom{{5}}{{{MAX_FACTORIAL + 1}}}", True),
    ("\\binom{2024}{1012}", False), ("\\sin(10^{100})", False),
    ("+".join(["x"] * (MAX_TERMS + 1)), False), ("+".join(["x"] * (MAX_TERMS + 2)), True),
])
def test_each_limit_at_its_edge(text, large):
    assert too_large(text) is large


def test_a_right_answer_over_a_limit_is_turned_away(no_math_verify):
    # Written policy: x^{N} - x^{N} is 0, but N over MAX_EXPONENT makes it too large, not read.
    big = MAX_EXPONENT + 1
    assert grade_with_reason(f"\\boxed{{x^{{{big}}} - x^{{{big}}}}}", "0") == (False, "too large")
    assert grade_with_reason(f"\\boxed{{{MAX_FACTORIAL + 1}! - {MAX_FACTORIAL + 1}!}}", "0") == (False, "too large")
    terms = "+".join(["x"] * (MAX_TERMS + 2))
    assert grade_with_reason(f"\\boxed{{{terms}}}", f"{MAX_TERMS + 2}x") == (False, "too large")


@pytest.mark.parametrize(("text", "read"), [
    ("{{42}}", "42"), ("\\boxed{\\boxed{ 42 }}", "42"), ("\\fbox{\\boxed{{7}}}", "7"), ("((42))", "42"),
    ("\\left( \\left(-4.5\\right) \\right)", "-4.5"), ("{1}+{2}", "{1}+{2}"), ("(1, 2)", "(1, 2)"), ("(x)", "(x)"),
    ("((42)", "((42)"), ("\\boxed{1} and \\boxed{2}", "\\boxed{1} and \\boxed{2}"), ("{(3)}", "3"),
])
def test_wrappers_are_read_through(text, read):
    assert unwrap(text) == read


def test_sums_of_integers_are_their_value():
    from isocompute.grading.sandbox import mv_compare

    for answer, truth in [("1+1", "2"), ("2 - 5", "-3"), ("-1+2+3", "4"), ("10-3", "8"), ("2+2", "4.0")]:
        assert fast_verdict(answer, truth) is mv_compare(answer, truth), (answer, truth)
    assert integer_sum("12") is None and integer_sum("1+x") is None and integer_sum("1,000+2") is None


@pytest.mark.parametrize("text", [
    ")!" * 50_000, "}!" * 50_000, "(" * 49_999 + "1" + ")" * 49_999 + "!", "^{" * 50_000, "2^" * 50_000,
    "\\Gamma(" * 14_000, "\\binom{" * 14_000, "{" * 50_000 + "}" * 50_000, "\\left(" * 16_000 + "1",
    "\\boxed{" * 14_000 + "}" * 14_000, "-" * 100_000,
])
def test_limits_are_linear(text):
    start = time.process_time()
    too_large(text)
    unwrap(text)
    assert time.process_time() - start < 1.0
