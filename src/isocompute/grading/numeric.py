"""The grader's fast path: plain numbers decided in microseconds, in this thread.

`fast_verdict` gives math-verify's verdict on two plain numbers (integers,
decimals, fractions, and the written forms math-verify misreads: scientific
notation with a lower-case e, which it reads as Euler's number, and thousands
groups spaced with LaTeX's thin spaces) without starting it, or None to send
the pair to `sandbox`.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_INT = re.compile(r"-?\d{1,300}")
_SIMPLE = re.compile(
    r"(-?)(?:(\d+)(?:\.(\d+))?"
    r"|\\[dt]?frac\{(-?\d+)\}\{(\d+)\}"
    r"|(\d+)/(\d+))"
)
# 42e0, 4.2e-1: a decimal times a bounded power of ten (math-verify reads "e" as
# Euler's number, 42e0 = 0). The exponent's three digits bound the value's size.
_SCIENTIFIC = re.compile(r"(-?\d+(?:\.\d+)?)[eE]([+-]?\d{1,3})")
# 1\,234 and 1{,}234: thousands groups spaced or braced in LaTeX (math-verify
# reads "1\,234" as the product 1*234).
# 1 000 000: groups spaced with plain spaces, the SI style (math-verify reads "1 000"
# in a box as the product 1*0).
_SPACED_GROUPS = re.compile(r"-?\d{1,3}(?:(?:\\[,;:! ]|\{,\}|~| )\d{3})+(?:\.\d+)?")
_GROUP_SEPARATOR = re.compile(r"\\[,;:! ]|\{,\}|~| ")
# A ground truth written with a decimal comma (1,22 or 0,111: one comma, and not
# English thousands groups), which math-verify reads boxed as the set {1, 22}.
_DECIMAL_COMMA = re.compile(r"-?\d+,\d+")
_THOUSANDS = re.compile(r"-?[1-9]\d{0,2}(?:,\d{3})+")
_POINT_DECIMAL = re.compile(r"-?\d+\.\d+")
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
    if _SPACED_GROUPS.fullmatch(s):
        s = _GROUP_SEPARATOR.sub("", s)
    sci = _SCIENTIFIC.fullmatch(s)
    if sci is not None:
        mantissa = _simple_value(sci.group(1))
        if mantissa is None:
            return None
        return mantissa[0] * Fraction(10) ** int(sci.group(2)), True
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


def decimal_comma_match(answer: str, truth: str) -> bool:
    """Whether `truth` is a number written with a decimal comma and `answer` the same number
    written with a decimal point (1,22 and 1.22). Only this way round: an answer's comma
    separates thousands or list items, as math-verify reads it."""
    if not (_DECIMAL_COMMA.fullmatch(truth) and _POINT_DECIMAL.fullmatch(answer)) or _THOUSANDS.fullmatch(truth):
        return False
    a, t = _simple_value(answer), _simple_value(truth.replace(",", "."))
    return a is not None and t is not None and a[0] == t[0]


# A sum of plain integers (2+2+...+2), any number of terms: its value, exactly. math-verify
# gives the same verdict on a short one (1+1 against 2 is correct) and runs out of time on
# 10,000 terms; `limits.MAX_TERMS` turns away every other text of that many operators.
_INTEGER_SUM = re.compile(r"-?\d{1,300}(?:\s*[-+]\s*\d{1,300})+")
_SIGNED_TERMS = re.compile(r"([-+]?)\s*(\d+)")


def integer_sum(s: str) -> tuple[Fraction, bool] | None:
    """(value, False) of a sum or difference of plain integers, else None."""
    if "+" not in s and "-" not in s[1:] or not _INTEGER_SUM.fullmatch(s):
        return None
    return Fraction(sum(int(d) if sign != "-" else -int(d) for sign, d in _SIGNED_TERMS.findall(s))), False


def fast_verdict(answer: str, truth: str) -> bool | None:
    """The verdict math-verify would give on two plain numbers (a sum of plain integers is one
    too); None to defer to it."""
    if "," in truth and decimal_comma_match(answer, truth):
        return True
    if _INT.fullmatch(answer) and _INT.fullmatch(truth):
        return int(answer) == int(truth)
    a = _simple_value(answer) or integer_sum(answer)
    if a is None:
        return None
    t = _simple_value(truth) or integer_sum(truth)
    if t is None:
        return None
    if a[0] == t[0]:
        return True
    if not (a[1] or t[1]):
        return False  # exact rationals: sympy compares them exactly too
    if abs(a[0] - t[0]) > _FLOAT_UNDECIDED_GAP:
        return False
    return None


# Magnitudes: an answer that is a pure power tower, power or factorial of integers
# (9^{9^{9^{9}}}, 2^{100000}, 100000!) whose value has more than this many digits
# cannot equal a plain-number truth (at most 64 characters), and math-verify would
# try to build the integer (9^{9^{9^{9}}} has ~10^(3.7e8) digits): it is wrong here,
# in microseconds.
HUGE_DIGITS = 400
_TOWER_BASE = re.compile(r"(\d{1,50})\s*\^\s*(.+)", re.DOTALL)
_MAX_TOWER_DEPTH = 32


def log10_magnitude(s: str, depth: int = 0) -> float | None:
    """log10 of the value of a pure tower of non-negative integers (inf past floats), or None."""
    s = s.strip()
    if depth > _MAX_TOWER_DEPTH or not s:
        return None
    while len(s) >= 2 and s[0] == "{" and s[-1] == "}" and s.count("{") == s.count("}"):
        s = s[1:-1].strip()
    if s.isdigit() and len(s) <= 50:
        value = int(s)
        return math.log10(value) if value else -math.inf
    if s.endswith("!"):
        return _log10_factorial(s, depth)
    m = _TOWER_BASE.fullmatch(s)
    if m is None:
        return None
    base = int(m.group(1))
    exponent = log10_magnitude(m.group(2), depth + 1)
    if exponent is None or base < 2:
        return None  # 0^x and 1^x are small: math-verify's business
    if exponent > 300:
        return math.inf
    return 10**exponent * math.log10(base)


def _log10_factorial(s: str, depth: int) -> float | None:
    """A lower bound of log10 of n! or n!! (n!! >= sqrt(n!)), n itself a tower or number."""
    double = s.endswith("!!")
    inner = s[: -2 if double else -1].strip()
    if len(inner) >= 2 and inner[0] == "(" and inner[-1] == ")":
        inner = inner[1:-1]
    n_digits = log10_magnitude(inner, depth + 1)
    if n_digits is None or n_digits < 0:
        return None
    if n_digits > 300:
        return math.inf
    n = 10**n_digits
    # log10(n!) >= n log10(n / e) (Stirling); exact through lgamma while n is small.
    digits = math.lgamma(round(n) + 1) / math.log(10) if n < 1e15 else n * (n_digits - math.log10(math.e))
    return digits / 2 if double else digits


def magnitude_verdict(answer: str, truth: str) -> bool | None:
    """False when one side is a huge pure tower, power or factorial and the other a plain
    number (their sizes differ by hundreds of digits); None to defer."""
    for huge, plain in ((answer, truth), (truth, answer)):
        if "^" not in huge and "!" not in huge:
            continue
        signless = huge[1:] if huge.startswith("-") else huge
        magnitude = log10_magnitude(signless)
        if magnitude is None or magnitude <= HUGE_DIGITS:
            continue
        value = _simple_value(plain)
        if value is None:
            continue
        v = abs(value[0])
        # log10 of the plain number to within one digit (1e999 is a plain number too).
        plain_digits = (v.numerator.bit_length() - v.denominator.bit_length()) * math.log10(2) if v else -math.inf
        if magnitude > plain_digits + 5:
            return False
    return None
