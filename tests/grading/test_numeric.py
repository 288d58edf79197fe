"""The numeric fast path gives math-verify's verdicts, without starting it."""

from __future__ import annotations

import random
import time

import pytest
from grading_cases import raw_math_verify

from isocompute.grading import grade, grade_many, grade_with_reason, numeric, sandbox


def _random_int_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        a = rng.choice([rng.randint(-10, 10), rng.randint(-10**6, 10**6), rng.randint(0, 10**30)])
        b = a if rng.random() < 0.5 else a + rng.choice([-1, 1, 10, -100, 10**12])
        fmt = rng.choice(["{}", "{}", "{:03d}"])  # leading zeros parse to the same value
        pairs.append((fmt.format(a) if a >= 0 else str(a), str(b)))
    return pairs


@pytest.mark.parametrize(("answer", "truth"), _random_int_pairs(120, seed=1))
def test_fast_path_agrees_on_integers(answer, truth):
    fast = numeric.fast_verdict(answer, truth)
    assert fast is not None
    assert fast == sandbox.mv_compare(answer, truth)
    assert grade(f"so \\boxed{{{answer}}}", truth) == raw_math_verify(f"so \\boxed{{{answer}}}", truth)


def test_fast_path_agrees_on_decimals_and_fractions():
    rng = random.Random(2)

    def number() -> str:
        kind = rng.randrange(5)
        if kind == 0:
            return str(rng.randint(-50, 50))
        if kind == 1:
            return f"{rng.uniform(-20, 20):.{rng.randint(1, 7)}f}"
        if kind == 2:
            return f"\\frac{{{rng.randint(-12, 12)}}}{{{rng.randint(1, 12)}}}"
        if kind == 3:
            return f"{rng.randint(0, 12)}/{rng.randint(1, 12)}"
        return rng.choice(["0.5", "0.25", "0.333333", "0.3333333", "1.000001", "1.0000001", "2.0"])

    pairs = [(number(), number()) for _ in range(150)]
    pairs += [(x, x) for x, _ in pairs[:50]]
    pairs += [("0.333333", "\\frac{1}{3}"), ("0.33333", "\\frac{1}{3}"), ("1.0000001", "1")]
    decided = 0
    for answer, truth in pairs:
        fast = numeric.fast_verdict(answer, truth)
        if fast is not None:
            decided += 1
            assert fast == sandbox.mv_compare(answer, truth), (answer, truth)
    assert decided > 0.9 * len(pairs)


def test_fast_path_spawns_nothing(monkeypatch):
    def no_workers(*args, **kwargs):
        raise AssertionError("the fast path must not start a worker")

    monkeypatch.setattr(sandbox, "_Worker", no_workers)
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    assert grade("\\boxed{17}", "17") and not grade("\\boxed{17}", "18")
    assert grade("\\boxed{\\frac{1}{2}}", "0.5") and grade("it is 2.50", "\\frac{5}{2}")


def test_100k_integer_completions_are_cheap():
    completions = [f"Adding them gives \\boxed{{{i % 1000}}}" for i in range(100_000)]
    truths = [str(i % 997) for i in range(100_000)]
    start = time.process_time()  # CPU seconds: the fast path runs here, and load does not stretch them
    verdicts = grade_many(completions, truths)
    elapsed = time.process_time() - start
    assert sum(verdicts) == sum(i % 1000 == i % 997 for i in range(100_000))
    assert elapsed < 3.0, elapsed


@pytest.mark.parametrize(("answer", "truth", "expected"), [
    ("42e0", "42", True), ("4.2e1", "42", True), ("4.2E1", "42", True), ("-4.2e+1", "-42", True),
    ("5e-1", "\\frac{1}{2}", True), ("1e3", "1000", True), ("4.2e1", "43", False), ("42e1", "42", False),
    ("1\\,234", "1234", True), ("1{,}234", "1234", True), ("12\\,345\\,678", "12345678", True),
    ("-1\\,234.5", "-1234.5", True), ("1\\,234", "1235", False),
])
def test_scientific_notation_and_spaced_thousands_are_numbers(answer, truth, expected):
    # math-verify reads "e" as Euler's number (42e0 = 0) and "1\,234" as a product;
    # the fast path reads them as the numbers a person means.
    assert numeric.fast_verdict(answer, truth) is expected
    assert grade(f"so the answer is \\boxed{{{answer}}}", truth) is expected


def test_spaced_digits_that_are_not_thousands_groups_go_to_math_verify():
    assert numeric.fast_verdict("1\\,23", "123") is None
    assert numeric.fast_verdict("2e", "2") is None


@pytest.mark.parametrize(("answer", "truth"), [
    ("9^{9^{9^{9}}}", "42"), ("99^{99^{99}}", "42"), ("2^{2^{2^{2^{2^{2}}}}}", "1"), ("-10^{10^{10^{10}}}", "0"),
    ("100000!", "42"), ("99999!!", "42"), ("(10^{6})!", "1"), ("2^{100000}!", "0"), ("2^{100000}", "3.5"), ("42", "9^{9^{9}}"), ("10^{2000}", "1e999"),
])
def test_a_huge_power_or_factorial_is_not_a_plain_number(answer, truth):
    # Sizes hundreds of digits apart: decided here, where math-verify would build the integer.
    assert numeric.magnitude_verdict(answer, truth) is False
    assert grade_with_reason(f"\\boxed{{{answer}}}", truth) == (False, "numeric")


@pytest.mark.parametrize(("answer", "truth"), [
    ("2^{10}", "1024"), ("5!", "120"), ("7!!", "105"), ("10^{500}", "1e500"), ("1^{9^{9^{9}}}", "1"), ("2^{-100000}", "0"),
    ("9^{9^{9}}", "9^{9^{9}}"), ("x^{9^{9^{9}}}", "1"),
])
def test_small_or_symbolic_powers_go_to_math_verify(answer, truth):
    assert numeric.magnitude_verdict(answer, truth) is None


def test_nesting_past_the_limit_is_no_answer():
    from isocompute.grading.extract import MAX_NESTING

    braces = "\\boxed{" + "{" * 5_000 + "1" + "}" * 5_000 + "}"
    roots = "\\boxed{" + "\\sqrt{" * 2_000 + "2" + "}" * 2_000 + "}"
    # Braces around the whole answer only wrap it (`limits.unwrap`): read through, however deep.
    assert grade_with_reason(braces, "1") == (True, "numeric")
    assert grade_with_reason("\\boxed{1}", "{" * 5_000 + "1" + "}" * 5_000) == (True, "numeric")
    assert grade_with_reason(roots, "2") == (False, "too deep")
    assert grade_with_reason("\\boxed{" + "{" * 5_000 + "1" + "}" * 5_000 + "+1}", "2") == (False, "too deep")
    nested = "\\boxed{" + "(" * MAX_NESTING + "7" + ")" * MAX_NESTING + "}"
    assert grade_with_reason(nested, "7")[1] != "too deep"
