"""The grader's fast path: plain numbers decided in microseconds, in this thread.

`fast_verdict` gives math-verify's verdict on two plain numbers (integers,
decimals, fractions) without starting it, or None to send the pair to `sandbox`.
"""

from __future__ import annotations

import re
from fractions import Fraction

_INT = re.compile(r"-?\d{1,300}")
_SIMPLE = re.compile(
    r"(-?)(?:(\d+)(?:\.(\d+))?"
    r"|\\[dt]?frac\{(-?\d+)\}\{(\d+)\}"
    r"|(\d+)/(\d+))"
)
# math-verify rounds to 6 decimals when a float is involved, and its rounding
# has quirks (1.0000001 != 1 there, 1/3 == 0.333333), so near-misses are left
# to it; beyond this gap no rounding can make two values equal.
_FLOAT_UNDECIDED_GAP = Fraction(1, 10**5)
# sympy Floats carry 15 significant digits; longer decimals go to math-verify.
_MAX_DECIMAL_DIGITS = 15


def _simple_value(s: str) -> tuple[Fraction, bool] | None:
    """(exact value, is_decimal) for a plain number, else None."""
    if len(s) > 64:
        return None
    m = _SIMPLE.fullmatch(s)
    if m is None:
        return None
    neg, whole, frac_digits, num, den, snum, sden = m.groups()
    if whole is not None:
        if frac_digits is None:
            value = Fraction(int(whole))
            is_decimal = False
        else:
            if len((whole + frac_digits).lstrip("0")) > _MAX_DECIMAL_DIGITS:
                return None
            value = Fraction(int(whole + frac_digits), 10 ** len(frac_digits))
            is_decimal = True
    else:
        numerator, denominator = (num, den) if num is not None else (snum, sden)
        if int(denominator) == 0:
            return None  # zoo: math-verify's business
        value = Fraction(int(numerator), int(denominator))
        is_decimal = False
    return (-value if neg else value), is_decimal


def fast_verdict(answer: str, truth: str) -> bool | None:
    """The verdict math-verify would give on two plain numbers; None to defer to it."""
    if _INT.fullmatch(answer) and _INT.fullmatch(truth):
        return int(answer) == int(truth)
    a = _simple_value(answer)
    if a is None:
        return None
    t = _simple_value(truth)
    if t is None:
        return None
    if a[0] == t[0]:
        return True
    if not (a[1] or t[1]):
        return False  # exact rationals: sympy compares them exactly too
    if abs(a[0] - t[0]) > _FLOAT_UNDECIDED_GAP:
        return False
    return None
