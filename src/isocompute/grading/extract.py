"""Answer extraction, the grader's first step: which part of a completion is its answer.

`extract_answer` picks the string that `numeric` and then `sandbox` compare
with the ground truth; `normalize_truth` puts the reference into the same form.
"""

from __future__ import annotations

import re

BOXED = "\\boxed"

# The minus only counts when it cannot be a binary operator ("3-5" ends in 5,
# "= -2" ends in -2). Thousands groups come before plain digits so "1,234"
# is one number; fractions are kept whole so "3/4" is not graded as "4".
_FINAL_NUMBER = re.compile(
    r"(?:(?<![\w)\]}])-)?"
    r"(?:\\[dt]?frac\{\d+\}\{\d+\}"
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])"
    r"|\d+(?:\.\d+)?(?:/\d+(?![\d.]))?)"
)


def _box_contents(text: str, start: int) -> str | None:
    """Contents of the brace group opening at or after `start`, or None if unclosed."""
    n = len(text)
    i = start
    while i < n and text[i].isspace():
        i += 1
    if i >= n or text[i] != "{":
        return None
    depth = 0
    j = i
    while j < n:
        ch = text[j]
        if ch == "\\":
            # \{ and \} are literal braces (sets), not grouping.
            j += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
        j += 1
    return None


def last_boxed(text: str) -> str | None:
    # A truncated final box ("\boxed{12" at the length limit) is not an answer;
    # the last complete, non-empty box is.
    idx = text.rfind(BOXED)
    while idx >= 0:
        inner = _box_contents(text, idx + len(BOXED))
        if inner is not None and inner.strip():
            return inner.strip()
        idx = text.rfind(BOXED, 0, idx)
    return None


def extract_answer(completion: str | None) -> str | None:
    """The answer string that `grade` compares with the ground truth.

    The contents of the last complete, non-empty `\\boxed{...}`; in a
    completion without `\\boxed`, the final number in the text (integer,
    decimal, `a/b`, `\\frac{a}{b}`, with thousands separators removed); None
    when there is no such answer.
    """
    if not completion:
        return None
    if BOXED in completion:
        # Once the model opens a box, only a finished box is its answer: the
        # "61" in a "\boxed{61" cut off at the length limit might have been 612.
        return last_boxed(completion)
    last = None
    for last in _FINAL_NUMBER.finditer(completion):
        pass
    if last is None:
        return None
    number = last.group(0)
    return number.replace(",", "") if "," in number else number


def normalize_truth(ground_truth: object) -> str:
    """The reference answer in the form `extract_answer` gives (no box, no `$..$`)."""
    truth = ground_truth if isinstance(ground_truth, str) else str(ground_truth)
    truth = truth.strip()
    # Some datasets store the reference as "\boxed{..}" or "$..$"; grading the
    # bare answer keeps both sides in the same form.
    if BOXED in truth:
        truth = last_boxed(truth) or truth
    if len(truth) >= 2 and truth[0] == "$" and truth[-1] == "$":
        truth = truth.strip("$").strip()
    return truth
