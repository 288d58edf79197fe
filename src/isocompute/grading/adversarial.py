"""Adversarial completions: text a policy could write that once stalled the grader.

`corpus(n, seed)` draws `n` of them deterministically, for the bounded-time
test (tests/grading/test_adversarial.py) and benchmarks/bench_grader_adversarial.py.
Kinds that reach math-verify draw from small fixed pools: `grade_many`
compares a batch's repeats of a pair once, so a corpus of 1,000 costs one
timeout per distinct pathological answer, not one per case.
"""

from __future__ import annotations

import random
from typing import Callable, NamedTuple

from isocompute.grading.extract import MAX_CHARS


class Case(NamedTuple):
    kind: str
    completion: str
    ground_truth: str


# sympy tries to evaluate these and never finishes (9^9^9^9 has ~10^(3.7e8) digits).
TOWERS = ("9^{9^{9^{9}}}", "8^{8^{8^{8}}}", "7^{7^{7^{7^{7}}}}", "99^{99^{99}}", "2^{2^{2^{2^{2^{2}}}}}", "10^{10^{10^{10}}}")
_FRACTION_DIGITS = (400, 4_000, 40_000)
_SQRT_DEPTHS = (200, 2_000)
_UNICODE_DIGITS = {
    "arabic-indic": "٠١٢٣٤٥٦٧٨٩",
    "fullwidth": "０１２３４５６７８９",
    "devanagari": "०१२३४५६७८९",
    "bengali": "০১২৩৪৫৬৭৮৯",
    "mathematical bold": "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗",
}
_CONTROLS = ["\x1b[31m", "\x1b[0m", "\x00", "\x07", "\x08", "\x0b", "\x0c", "\x7f", "\x85", "\x9b31m", "\x1b]0;x\x07"]


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + "".join(rng.choices("0123456789", k=n - 1))


def _near_limit(rng: random.Random) -> int:
    """A length around MAX_CHARS: just under (fully read) or just over (rejected unread)."""
    return MAX_CHARS + rng.choice([-1_000, -100, -1, 1, 1_000])


def _nested_boxes(rng: random.Random) -> tuple[str, str]:
    depth = rng.choice([10, 1_000, 5_000, 14_000])
    closing = rng.choice([depth, depth // 2, 0])  # complete, half closed, never closed
    return "\\boxed{" * depth + str(depth) + "}" * closing, str(depth)


def _open_boxes(rng: random.Random) -> tuple[str, str]:
    # The case that once stalled it: 16,000 unclosed boxes (over the limit); 14,000 are read.
    count = rng.choice([16_000, 14_000, rng.randint(1, 14_000)])
    return rng.choice(["\\boxed{", "\\boxed {", "\\boxed{ }"]) * count, "42"


def _power_tower(rng: random.Random) -> tuple[str, str]:
    return f"so the answer is \\boxed{{{rng.choice(TOWERS)}}}", "42"


def _thousands_chain(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.2:
        return "123," * 25_000 + "1", "42"  # the case that once stalled it: over the limit
    groups = rng.choice([24_999, rng.randint(1, 24_999)])  # read in full
    tail = rng.choice(["1", "1234", "", ".5", ".5,", ",12"])
    return rng.choice(["123,", "1,234,"]) * groups + tail, "42"


def _number_soup(rng: random.Random) -> tuple[str, str]:
    unit = rng.choice(["1/", "1.", "1-", "-1", "1,", ",123", "12/3.", "\\frac{1}{", "-\\frac{1}{2}"])
    length = rng.choice([1_000, _near_limit(rng)])
    return (unit * (length // len(unit) + 1))[:length], "1"


def _long_prose(rng: random.Random) -> tuple[str, str]:
    words = ["the", "sum", "is", "so", "we", "get", "=", "+", "\\boxed", "{", "}", "x", "$"] + [str(i) for i in range(10)]
    text = " ".join(rng.choices(words, k=_near_limit(rng) // 3))
    return text[: _near_limit(rng)] + " so the answer is \\boxed{7}", "7"


def _megabyte(rng: random.Random) -> tuple[str, str]:
    unit = rng.choice(["\\boxed{", "123,", "{", "9", "a "])
    return unit * (1_000_000 // len(unit)) + "\\boxed{1}", "1"


def _unbalanced_braces(rng: random.Random) -> tuple[str, str]:
    n = rng.choice([100, 10_000, 45_000])
    soup = "".join(rng.choices(["{", "}", "\\{", "\\}", "\\", "{{", "}}", "1"], k=n))
    return rng.choice(["\\boxed{", "", "\\boxed{1}"]) + soup + rng.choice(["", "\\boxed{1", "}" * 10]), "1"


def _backslashes(rng: random.Random) -> tuple[str, str]:
    n = rng.choice([1_000, 49_000])
    return rng.choice(["\\boxed{", ""]) + "\\" * n + rng.choice(["}", "\\boxed{1}", "1"]), "1"


def _huge_fraction(rng: random.Random) -> tuple[str, str]:
    digits = rng.choice(_FRACTION_DIGITS)
    numerator = _digits(random.Random(digits), digits)  # one fraction per size: a small pool
    return f"\\boxed{{\\frac{{{numerator}}}{{{numerator[::-1]}}}}}", "1"


def _deep_latex(rng: random.Random) -> tuple[str, str]:
    depth = rng.choice(_SQRT_DEPTHS)
    return "\\boxed{" + "\\sqrt{" * depth + "2" + "}" * depth + "}", "2"


def _control_characters(rng: random.Random) -> tuple[str, str]:
    answer = str(rng.randint(-999, 999))
    cut = rng.randint(0, len(answer))
    text = rng.choice(["\\boxed{{{}}}", "The answer is {}", "{}"]).format(
        answer[:cut] + rng.choice(_CONTROLS) + answer[cut:]
    )
    return text * rng.choice([1, 1, 5_000 // len(text)]), answer


def _unicode_digits(rng: random.Random) -> tuple[str, str]:
    table = _UNICODE_DIGITS[rng.choice(sorted(_UNICODE_DIGITS))]
    value = rng.randint(-10**6, 10**6)
    written = ("-" if value < 0 else "") + "".join(table[int(d)] for d in str(abs(value)))
    form = rng.choice(["\\boxed{{{}}}", "the answer is {}", "{}"])
    padding = (written + " ") * rng.choice([0, 0, 90_000 // (len(written) + 1)])
    return padding + form.format(written), str(value)


# kind -> (weight, generator of (completion, ground truth))
KINDS: dict[str, tuple[int, Callable[[random.Random], tuple[str, str]]]] = {
    "nested boxes": (8, _nested_boxes),
    "open boxes": (8, _open_boxes),
    "power tower": (6, _power_tower),
    "thousands chain": (8, _thousands_chain),
    "number soup": (10, _number_soup),
    "100k prose": (6, _long_prose),
    "1M characters": (1, _megabyte),
    "unbalanced braces": (10, _unbalanced_braces),
    "backslashes": (5, _backslashes),
    "huge fraction": (6, _huge_fraction),
    "deep latex": (4, _deep_latex),
    "control characters": (14, _control_characters),
    "unicode digits": (14, _unicode_digits),
}


def corpus(n: int = 1_000, seed: int = 0) -> list[Case]:
    """`n` adversarial cases, the same for the same (n, seed); every kind at least once."""
    rng = random.Random(seed)
    names = sorted(KINDS)
    kinds = names + rng.choices(names, weights=[KINDS[k][0] for k in names], k=max(0, n - len(names)))
    return [Case(kind, *KINDS[kind][1](rng)) for kind in kinds[:n]]


# Answers math-verify would spend its whole budget (and a retry) on, which the grader
# decides before it (`numeric.magnitude_verdict`, `extract.MAX_NESTING`, `limits`): each
# must come back in microseconds, wrong, except the nested braces, which only wrap 1
# (`limits.unwrap`). Kept out of `corpus` so its draws stay as they were.
DECIDED_BEFORE_MATH_VERIFY = tuple(
    [Case("power tower", f"so the answer is \\boxed{{{tower}}}", "42") for tower in TOWERS]
    + [Case("huge factorial", f"\\boxed{{{n}}}", "42") for n in ("100000!", "(10^{6})!", "99999!!", "2^{100000}!")]
    + [Case("nested braces", "\\boxed{" + "{" * depth + "1" + "}" * depth + "}", "1") for depth in (65, 5_000)]
    + [Case("deep latex", "\\boxed{" + "\\sqrt{" * depth + "2" + "}" * depth + "}", "2") for depth in _SQRT_DEPTHS]
)


class LimitCase(NamedTuple):
    kind: str
    completion: str
    ground_truth: str
    correct: bool  # the grader's verdict, decided before math-verify
    reason: str  # how: "numeric" (read, then compared), "too large" or "too deep" (a written limit)


_TOWER = "9^{9^{9}}"
_CONTINUED = "1+\\frac{1}{" * 500 + "1" + "}" * 500  # F(502) / F(501)


def _fibonacci_ratio(n: int) -> str:
    a, b = 1, 1
    for _ in range(n):
        a, b = b, a + b
    return f"\\frac{{{b}}}{{{a}}}"


# The cases a review tried as a new user would, each decided before math-verify by a
# written limit (`limits`, `extract.MAX_NESTING`): nine that took math-verify its whole budget
# and retry (10.9-12.1 s each at the production deadline), all turned away as too large, right
# or not; seven right answers math-verify could not read in time, five now read as right and
# two turned away as too deep.
DECIDED_BY_A_LIMIT = (
    LimitCase("tower difference", f"\\boxed{{x^{{{_TOWER}}} - x^{{{_TOWER}}}}}", "0", False, "too large"),
    LimitCase("tower difference", f"\\boxed{{{_TOWER} - {_TOWER}}}", "0", False, "too large"),
    LimitCase("tower quotient", f"\\boxed{{\\frac{{x^{{{_TOWER}}}}}{{x^{{{_TOWER}}}}}}}", "1", False, "too large"),
    LimitCase("tower quotient", f"\\boxed{{\\frac{{{_TOWER}}}{{{_TOWER}}}}}", "1", False, "too large"),
    LimitCase("billion-power expansion", "\\boxed{(x+1)^{1000000000} - (x+1)^{1000000000}}", "0", False, "too large"),
    LimitCase("billion-power expansion", "\\boxed{(x+1)^{1000000000}}", "x^{1000000000}+1", False, "too large"),
    LimitCase("binomial of googols", "\\boxed{\\binom{10^{100}}{10^{50}}}", "1", False, "too large"),
    LimitCase("Gamma of 10^10", "\\boxed{\\Gamma(10^{10})}", "1", False, "too large"),
    LimitCase("sine of a tower", f"\\boxed{{\\sin({_TOWER})}}", "0", False, "too large"),
    LimitCase("5,000 braces", "\\boxed{" + "{" * 5_000 + "42" + "}" * 5_000 + "}", "42", True, "numeric"),
    LimitCase("left( 1,000 deep", "\\boxed{" + "\\left(" * 1_000 + "42" + "\\right)" * 1_000 + "}", "42", True,
              "numeric"),
    LimitCase("1,000-deep fraction", "\\boxed{" + "\\frac{" * 1_000 + "42" + "}{1}" * 1_000 + "}", "42", False,
              "too deep"),
    LimitCase("500-deep continued fraction", "\\boxed{" + _CONTINUED + "}", _fibonacci_ratio(500), False, "too deep"),
    LimitCase("2,000 boxes in a truth", "\\boxed{42}", "\\boxed{" * 2_000 + "42" + "}" * 2_000, True, "numeric"),
    LimitCase("fbox", "so the answer is \\fbox{42}", "42", True, "numeric"),
    LimitCase("10,000 terms", "\\boxed{" + "+".join(["2"] * 10_000) + "}", "20000", True, "numeric"),
)
