"""Written limits the grader applies before math-verify, in time linear in the text.

Two kinds (docs/methods.md, section 5, "Grading: where the verdict may differ"):

- `unwrap` reads a text that only wraps its answer: grouping braces, boxes
  (`\\boxed`, `\\fbox`) around the whole, and parentheses (`(`, `\\left(`)
  around a plain number are dropped, however deep, so that 42 inside 5,000
  braces or 2,000 nested boxes is 42, as math-verify reads it at shallow depth.
- `too_large` turns away texts whose evaluation sympy cannot finish or whose
  size alone costs math-verify its budget and retry: an integer exponent over
  `MAX_EXPONENT`, a factorial, Gamma or binomial argument over
  `MAX_FACTORIAL`, more than `MAX_TERMS` operators. Such a text is "too large"
  and wrong, even where its value is right (`x^{9^{9^{9}}} - x^{9^{9^{9}}}`
  against 0): a written policy, not a timeout.
"""

from __future__ import annotations

import math
import re

from isocompute.grading.numeric import log10_magnitude

TOO_LARGE = "too large"

# The largest integer exponent a text may carry (`2^{10000}` passes, `2^{10001}`, `x^{9^{9^{9}}}`
# and `(x+1)^{1000000000}` do not). Read where the exponent is an integer or a pure integer
# tower, with or without a minus sign. Olympiad answers use exponents up to a few thousand
# (2^{2024}); sympy builds the integer of 9^{9^{9}} or expands a billion-power for longer than
# any budget.
MAX_EXPONENT = 10_000
# The largest argument of n!, n!!, \Gamma(n) and \binom{n}{k} (either argument): 10000! has
# 35,660 digits and sympy builds it in milliseconds; \Gamma(10^{10}) or \binom{10^{100}}{10^{50}}
# it cannot.
MAX_FACTORIAL = 10_000
# The most operators (+, -, *, \cdot, \times) a text may hold: 10,000 terms of x+x+... cost
# math-verify's parser its whole budget. A sum of plain integers of any length is decided
# before this limit (`numeric.integer_sum`), so 2+2+...+2 is still its value.
MAX_TERMS = 1_000

_OPERATORS = ("+", "-", "*", "\\cdot", "\\times")
_LONGEST_ARGUMENT = 2_000  # an exponent or argument longer than this is no pure integer tower
_EXPONENT_DIGITS = re.compile(r"\s*(\d+)")
_CALLS = re.compile(r"\\(?:Gamma|[dt]?binom)(?![a-zA-Z])\s*")
_TOKENS = re.compile(r"\\[^()]|[{}()]", re.DOTALL)
_PAREN_OPEN = re.compile(r"\s*(?:\\left\s*)?\(")
_BANGS = re.compile(r"!+")
_PLAIN_NUMBER = re.compile(r"\s*-?\d+(?:\.\d+)?\s*")
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")


def _matching(text: str) -> tuple[dict[int, int], dict[int, int]]:
    """({opening position: closing position}, {closing: opening}) of the braces (escaped braces
    are literal) and of the parentheses of `text`, matched in one pass."""
    close: dict[int, int] = {}
    braces: list[int] = []
    parens: list[int] = []
    for m in _TOKENS.finditer(text):
        ch, i = m.group(), m.start()
        if ch in "{(":
            (braces if ch == "{" else parens).append(i)
        elif ch in "})":
            stack = braces if ch == "}" else parens
            if stack:
                close[stack.pop()] = i
    return close, {j: i for i, j in close.items()}


def unwrap(text: str) -> str:
    """`text` without the braces and boxes around all of it, and without the parentheses
    around a plain number in it ("{{42}}", "\\boxed{\\boxed{42}}", "\\left(\\left(42\\right)\\right)"
    are "42"). Linear: the braces are matched once."""
    if not text or text[0] not in "{\\(" or text[-1] not in "})":
        return text
    close = _matching(text)[0] if "{" in text else {}
    lo, hi = 0, len(text)  # the answer is text[lo:hi]
    while True:
        while lo < hi and text[lo].isspace():
            lo += 1
        while hi > lo and text[hi - 1].isspace():
            hi -= 1
        box = _BOX.match(text, lo, hi)
        opening = box.end() - 1 if box else lo
        if text[opening: opening + 1] == "{" and close.get(opening) == hi - 1:
            lo, hi = opening + 1, hi - 1
            continue
        return _unwrap_parentheses(text[lo:hi])


def _unwrap_parentheses(text: str) -> str:
    """A plain number in any number of parentheses is the number; anything else as it was."""
    pos = opens = 0
    while (opening := _PAREN_OPEN.match(text, pos)) is not None:
        pos, opens = opening.end(), opens + 1
    if not opens:
        return text
    end = len(text)
    for _ in range(opens):
        e = end
        while e > pos and text[e - 1].isspace():
            e -= 1
        if e <= pos or text[e - 1] != ")":
            return text
        e -= 1
        k = e
        while k > pos and text[k - 1].isspace():
            k -= 1
        end = k - len("\\right") if text.endswith("\\right", pos, k) else e
    return text[pos:end].strip() if _PLAIN_NUMBER.fullmatch(text, pos, end) else text


def _group_after(text: str, i: int, close: dict[int, int]) -> tuple[str | None, int]:
    """(the argument starting at `i`: a braced group, a parenthesised one, or a run of digits;
    where it ends)."""
    paren = _PAREN_OPEN.match(text, i)
    opening = paren.end() - 1 if paren else i
    j = close.get(opening) if text[opening: opening + 1] in ("{", "(") else None
    if j is not None:
        if j - opening > _LONGEST_ARGUMENT:
            return None, j + 1
        inner = text[opening + 1: j].strip()
        return (inner[: -len("\\right")] if inner.endswith("\\right") else inner), j + 1
    digits = _EXPONENT_DIGITS.match(text, i)
    return (digits.group(1), digits.end()) if digits else (None, i)


def _group_before(text: str, j: int, opened: dict[int, int]) -> str | None:
    """The operand ending just before `j` (a factorial's): a group, parentheses, or digits."""
    if j == 0:
        return None
    i = opened.get(j - 1)
    if i is not None:
        return text[i + 1: j - 1] if j - i <= _LONGEST_ARGUMENT else None
    k = j
    while k > 0 and j - k <= _LONGEST_ARGUMENT and text[k - 1].isdigit():
        k -= 1
    return text[k:j] or None


def _over(argument: str | None, limit: int) -> bool:
    """Whether `argument` is an integer or integer tower (a leading minus allowed) above `limit`."""
    if argument is None or len(argument) > _LONGEST_ARGUMENT:
        return False
    argument = argument.strip()
    magnitude = log10_magnitude(argument[1:] if argument.startswith("-") else argument)
    return magnitude is not None and magnitude > math.log10(limit)


def too_large(text: str) -> bool:
    """Whether `text` carries an exponent over `MAX_EXPONENT`, a factorial, Gamma or binomial
    argument over `MAX_FACTORIAL`, or more than `MAX_TERMS` operators (see the module docstring)."""
    if sum(text.count(op) for op in _OPERATORS) > MAX_TERMS:
        return True
    if "^" not in text and "!" not in text and "\\" not in text:
        return False
    close, opened = _matching(text)
    start = text.find("^")
    while start >= 0:
        if _over(_group_after(text, start + 1, close)[0], MAX_EXPONENT):
            return True
        start = text.find("^", start + 1)
    for call in _CALLS.finditer(text):
        first, end = _group_after(text, call.end(), close)
        if _over(first, MAX_FACTORIAL):
            return True
        if first is not None and "binom" in call.group() and _over(_group_after(text, end, close)[0], MAX_FACTORIAL):
            return True
    # Once per run of "!": n!! is looked at once, its operand before the first "!".
    return any(_over(_group_before(text, m.start(), opened), MAX_FACTORIAL) for m in _BANGS.finditer(text))
