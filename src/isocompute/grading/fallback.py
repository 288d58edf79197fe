"""The unboxed fallback's refusals: when a completion's final number is not its answer.

`extract` reads a completion without `\\boxed` as its final number; `standalone`
says whether that number is an answer on its own. It is not when it sits inside
a construct the fallback does not parse (a group, bracket, set, interval, or an
inline formula broken across lines), is glued to a word or symbol, is an operand
of an operator or relation, or belongs with a digit before it (a mixed number,
spaced thousands, a list, a ratio, a decimal comma). The completion then has no
answer: its last statement is something the fallback cannot read, and no earlier
number is its answer either (docs/methods.md, section 5, "Grading").
"""

from __future__ import annotations

import re

# The fallback's refusals (see `standalone`). Each reads a bounded window
# around the final number, except `_inside_construct`, one pass over the text
# before it.
_CONTEXT_TOKENS = re.compile(r"\\[a-zA-Z]+|\\.|\$\$|[{}()\[\]$\n]", re.DOTALL)
_SPACE_BEFORE = re.compile(r"(?:[ \t~]|\\[,;:! ]|\{,\})*\Z")
_SPACE_AFTER = re.compile(r"(?:[ \t~]|\\[,;:! ])*")
# Right before the number (or its sign): part of a word ("AZYUK2A", "x2",
# "\\sqrt3"), a decimal without its leading zero (".4"), an exponent, index or
# denominator ("x^2", "a_1", "1/2/3").
_GLUED_BEFORE = frozenset("._^/\\")
# Before the number, across spaces: an operator or relation it is an operand of
# ("2 + 3", "3 - 5", "x < 5").
_OPERATOR_BEFORE = re.compile(
    r"(?:[-+*/^×÷·±√<>]|\\(?:times|cdot|div|pm|mp|sqrt|le|ge|leq|geq|lt|gt|neq|ne|approx|in))\Z")
# Before an unsigned number, across spaces: a digit, list comma or ratio colon it
# belongs with ("11 6/6", "1 000", "1,22", "2, 3", "12:00").
_GROUPED_BEFORE = re.compile(r"[0-9](?:[ \t]*[,:])?\Z")
# Right after the number: a word ("2A", "5th", "3x"), an index, a product ("2(3)").
_GLUED_AFTER = frozenset("_([")
# After the number, across spaces: an operator or relation it is an operand of
# ("5 \\geq x", "2 + x", "5!", "2^x"), unless a unit (degrees, text) or markdown.
_OPERATOR_AFTER = re.compile(r"[-+*/^_=<>!×÷·±√]|\\[a-zA-Z]+|\\[^a-zA-Z%$,;:!)\]\\ ]")
_UNIT_AFTER = re.compile(r"\^\s*(?:\\circ|\{\s*\\circ\s*\})|\*\*|\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox"
                         r"|quad|qquad|end|right|rangle|%|\$)(?![a-zA-Z])")


def _inside_construct(text: str, start: int) -> bool:
    """Whether `start` lies inside a group, bracket, set or interval, or an inline formula broken
    across lines (which math-verify does not read), by one pass over the text before it."""
    braces = brackets = 0
    inline = ""  # the open inline formula's delimiter: "$" or "\\("
    broken = False
    for m in _CONTEXT_TOKENS.finditer(text, 0, start):
        token = m.group()
        if token == "{":
            braces += 1
        elif token == "}":
            braces = max(0, braces - 1)
        elif token in ("(", "[", "\\{"):
            brackets += 1
        elif token in (")", "]", "\\}"):
            brackets = max(0, brackets - 1)
        elif token == "$" or token == "\\(":
            if inline and (token == "$") == (inline == "$"):
                inline, broken = "", False
            elif not inline:
                inline = token
        elif token == "\\)":
            inline, broken = "", False
        elif token == "\n" and inline:
            broken = True
    return braces > 0 or brackets > 0 or broken


def standalone(text: str, start: int, end: int) -> bool:
    """Whether the final number text[start:end] is an answer on its own.

    Not when it is glued to a word or an exponent, an operand of an operator
    or relation, part of a mixed number, spaced thousands, a list, a ratio or
    a decimal written with a comma, or inside a construct (`_inside_construct`):
    there the completion's last statement is something the fallback does not
    read, and no earlier number is its answer either.
    """
    # A sign the scan took has no word or closer right before it.
    signed = text[start] == "-"
    before = text[max(0, start - 1) : start]
    if not signed and before and (before.isalnum() or before in _GLUED_BEFORE or before == "-"):
        return False
    window = text[max(0, start - 24) : start]
    window = window[: _SPACE_BEFORE.search(window).start()]
    if _OPERATOR_BEFORE.search(window) and not window.endswith("**"):
        return False
    if not signed and _GROUPED_BEFORE.search(window):
        return False
    after = text[end : end + 1]
    if after and (after.isalnum() or after in _GLUED_AFTER):
        return False
    rest = _SPACE_AFTER.match(text, end).end()
    if _OPERATOR_AFTER.match(text, rest) and not _UNIT_AFTER.match(text, rest):
        return False
    return not _inside_construct(text, start)
