"""Cases shared by the grader's tests: a table of verdicts math-verify agrees
with, and math-verify's own verdict to compare against."""

from __future__ import annotations

import time

from math_verify import parse, verify

# Pathological for sympy: latex2sympy adds up the exponent (9^9 + 1 = 387,420,490) and
# sympy builds 9 to that power, which never finishes within a budget. A pure integer
# tower is decided before math-verify (`limits.MAX_EXPONENT`: too large); an exponent
# that is a sum is not read by that limit, so this still reaches math-verify, which is
# what the timeout tests need. SLOW(b) is the same with base b.
def SLOW(base: int) -> str:  # noqa: N802 -- a constant's family
    return f"\\boxed{{x + {base}^{{9^{{9}}+1}}}}"


TOWER = SLOW(9)


def raw_math_verify(completion: str, ground_truth: str) -> bool:
    """math-verify used directly on the whole completion, as its README does."""
    return verify(parse("\\boxed{" + ground_truth + "}"), parse(completion))


# (completion, ground truth, expected verdict)
TABLE = [
    ("\\boxed{42}", "42", True),
    ("\\boxed{42}", "43", False),
    ("The answer is \\boxed{-7}.", "-7", True),
    ("The answer is \\boxed{-7}.", "7", False),
    ("\\boxed{\\frac{1}{2}}", "0.5", True),
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", True),
    ("\\boxed{0.5}", "\\frac{1}{2}", True),
    ("\\boxed{\\frac{1}{2}}", "0.25", False),
    ("We have $x = -12$, hence \\boxed{-12}", "-12", True),
    ("Subtracting both sides gives -15", "-15", True),
    ("\\boxed{42} is the answer. Check: 6 * 7 = 42, done in 3 steps.", "42", True),
    ("\\boxed{42}. Then I added 5 more to get 47", "42", True),
    ("so the result is 61", "61", True),
    ("so the result is 61", "16", False),
    ("\\boxed{\\frac{3}{4}}", "\\frac{3}{4}", True),
    ("\\boxed{\\frac{3}{4}}", "0.75", True),
    ("\\boxed{\\frac{3}{4}}", "\\frac{4}{3}", False),
    ("", "42", False),
    ("I am not sure how to solve this.", "42", False),
    ("\\boxed{41}", "42", False),
    ("12+49=\\boxed{61}", "61", True),
    ("\\boxed{61}", "61", True),
    ("\\boxed{61", "61", False),  # cut off inside the box: no answer
    ("\\boxed{x^2+1}", "x^2+1", True),
    ("\\boxed{1+x^2}", "x^2+1", True),
    ("\\boxed{x^2-1}", "x^2+1", False),
    ("The farmer has 1,234 apples in total.", "1234", True),
    ("\\boxed{1} ... \\boxed{2}", "1", False),
    ("The final answer is $\\frac{5}{8}$", "0.625", True),
    ("\\boxed{\\sqrt{2}}", "\\sqrt{2}", True),
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", True),
    ("\\boxed{\\pi}", "3", False),
]


def timed(fn, *args, **kwargs):
    """(fn's result, wall-clock seconds it took)."""
    start = time.monotonic()
    result = fn(*args, **kwargs)
    return result, time.monotonic() - start
