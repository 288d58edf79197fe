"""Ordinary integer answers grade exactly as the grader before the bounded-time
rewrite (GRADER_VERSION 1) graded them: verdicts frozen from that code, except
where version 5's unboxed fallback refuses an operand ("3-5" is no answer 5)."""

from __future__ import annotations

import hashlib
import random

import pytest

from isocompute.grading import extract_answer, grade, grade_many

# (completion, ground truth, verdict, extracted answer), as grader version 1 gave them.
FROZEN = [
('\\boxed{61}', '61', True, '61'),
    ('\\boxed{61}', '62', False, '61'),
    ('\\boxed{-123}', '-123', True, '-123'),
    ('\\boxed{-123}', '123', False, '-123'),
    ('\\boxed{ 7 }', '7', True, '7'),
    ('\\boxed{007}', '7', True, '007'),
    ('\\boxed{0}', '0', True, '0'),
    ('\\boxed{-0}', '0', True, '-0'),
    ('12+49=\\boxed{61}', '61', True, '61'),
    ('12*3-5=\\boxed{31}', '31', True, '31'),
    ('12*3-5=\\boxed{31}', '-31', False, '31'),
    ('\\boxed{61', '61', False, None),
    ('\\boxed{6', '61', False, None),
    ('\\boxed{}', '0', False, None),
    ('\\boxed{-}', '0', False, '-'),
    ('\\boxed{61}}', '61', True, '61'),
    ('\\boxed{61}\\boxed{62}', '62', True, '62'),
    ('\\boxed{61}\\boxed{62}', '61', False, '62'),
    ('\\boxed{61} \\boxed{6', '61', True, '61'),
    ('\\boxed{{61}}', '61', True, '{61}'),
    ('\\boxed{6 1}', '61', False, '6 1'),
    ('The answer is \\boxed{1234}.', '1234', True, '1234'),
    ('\\boxed{1,234}', '1234', True, '1,234'),
    ('\\boxed{1234}', '1,234', True, '1234'),
    ('\\boxed{61.0}', '61', True, '61.0'),
    ('\\boxed{61.5}', '61', False, '61.5'),
    ('\\boxed{12345678901234567890}', '12345678901234567890', True, '12345678901234567890'),
    ('\\boxed{12345678901234567890}', '12345678901234567891', False, '12345678901234567890'),
    ('\\boxed{-98765}', '-98765', True, '-98765'),
    ('so the result is 61', '61', True, '61'),
    ('so the result is 61.', '61', True, '61'),
    ('the sum is 12, so 61', '61', True, '61'),
    ('the sum is 61, so 12', '61', False, '12'),
    ('12+49=61', '61', True, '61'),
    ('3-5=-2', '-2', True, '-2'),
    ('3-5', '-2', False, None),  # version 5: an operand is no answer (version 1: '5', graded 5)
    ('3-5', '5', False, None),
    ('x = -2', '-2', True, '-2'),
    ('= -15', '-15', True, '-15'),
    ('total: 1,234,567', '1234567', True, '1234567'),
    ('total 1234567', '1,234,567', True, '1234567'),
    ('no digits here', '0', False, None),
    ('', '0', False, None),
    ('answer: 42\n', '42', True, '42'),
    ('answer:\n-42', '-42', True, '-42'),
    ('$61$', '61', True, '61'),
    ('$\\boxed{61}$', '61', True, '61'),
    ('\\boxed{61}', '\\boxed{61}', True, '61'),
    ('\\boxed{61}', '$61$', True, '61'),
    ('\\boxed{61}', 61, True, '61'),
    ('\\boxed{-7}', -7, True, '-7'),
    ('61', ' 61 ', True, '61'),
    ('\\boxed{1/2}', '0.5', True, '1/2'),
    ('\\boxed{\\frac{6}{2}}', '3', True, '\\frac{6}{2}'),
    ('7 apples and 5 pears make 12', '12', True, '12'),
    ('3.14', '3.14', True, '3.14'),
    ('\\boxed{2+3}', '5', True, '2+3'),
    ('\\boxed{999999999999}', '999999999999', True, '999999999999'),
]


@pytest.mark.parametrize(("completion", "truth", "verdict", "answer"), FROZEN)
def test_ordinary_verdicts_are_frozen(completion, truth, verdict, answer):
    assert extract_answer(completion) == answer
    assert grade(completion, truth) is verdict


def _arithmetic_completions(n: int, seed: int) -> list[tuple[str, str]]:
    """What the embedded study's policy writes: boxed, bare and truncated answers."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b, op = rng.randint(0, 999), rng.randint(0, 999), rng.choice("+-*")
        value = {"+": a + b, "-": a - b, "*": a * b}[op]
        shown = value + rng.choice([0, 0, 0, 1, -1, 10])
        completion = [
            f"\\boxed{{{shown}}}",
            f"{a}{op}{b}=\\boxed{{{shown}}}",
            f"{a}{op}{b}={shown}",
            f"The answer is {shown}.",
            f"{a}{op}{b}=\\boxed{{{shown}",
            f"\\boxed{{{shown}}} so {a}{op}{b} = {shown:,}",
        ][rng.randrange(6)]
        out.append((completion, str(value)))
    return out


def test_generated_arithmetic_verdicts_are_frozen():
    cases = _arithmetic_completions(3000, seed=14)
    verdicts = grade_many([c for c, _ in cases], [t for _, t in cases])
    # Count and digest of the 3,000 verdicts grader version 1 gave.
    assert sum(verdicts) == 1259
    assert hashlib.sha256(bytes(verdicts)).hexdigest()[:16] == "f6a1a2a1545ee372"
