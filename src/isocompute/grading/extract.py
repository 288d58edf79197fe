"""Answer extraction, the grader's first step: which part of a completion is its answer.

`read_answer` picks the string that `numeric` and then `sandbox` compare with
the ground truth (or says why there is none); `normalize_truth` puts the
reference into the same form. Both run in time linear in the input, on any
input, because they run before any timeout can apply.

Text policies, decided once here:
- A completion over `max_chars` characters: no answer ("too long"), judged
  from the length alone (`grade` applies the same limit to the ground truth).
- A control character other than tab, newline and carriage return in the
  completion (ANSI colour codes, NUL, C1 codes): no answer ("control
  character"). Terminal escapes are not something a solution writes, and
  stripping them would grade text other than what was stored:
  "\\boxed{42\\x1b[31m}" is neither 31 nor 42.
- Unicode decimal digits (Arabic-Indic "٤٢", fullwidth "４２", Devanagari ...),
  in completion and ground truth, read as the ASCII digits they stand for, as
  Python's `int` already read them on the fast path. Other digit-like
  characters (superscripts, vulgar fractions, circled numbers) are left as
  they are: NFKC would turn "x²" into "x2".
"""

from __future__ import annotations

import re
import unicodedata

from isocompute.grading.fallback import standalone

BOXED = "\\boxed"
# math-verify reads \fbox{..} as it reads \boxed{..} (latex2sympy2_extended's box search
# looks for both), so the grader does too.
_FBOX = re.compile(r"\\fbox(?![a-zA-Z])")

# Longest completion (and ground truth) the grader reads, in characters. The
# paper's 8,192-token responses are 20-40k characters; anything longer is
# degenerate output whose extraction alone could cost more than a timeout.
MAX_CHARS = 100_000

# Why a text has no answer; `grade_with_reason` passes these on.
NO_ANSWER = "no answer"
TOO_LONG = "too long"
CONTROL_CHARACTER = "control character"
TOO_DEEP = "too deep"

# Deepest nesting of groups and brackets an answer or ground truth may have. No
# written answer nests 64 deep; 5,000 nested braces or \\sqrt{\\sqrt{...}} 2,000 deep
# only cost math-verify its whole budget (or its recursion limit).
MAX_NESTING = 64
_NESTING_TOKENS = re.compile(r"\\.|[{}()\[\]]", re.DOTALL)

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"\s*")
# An escape pair (\{ \} \\ ...) or a grouping brace; one pass over these
# matches every brace of a text.
_BRACE_TOKENS = re.compile(r"\\.|[{}]", re.DOTALL)

# The final number: the last match of a left-to-right scan with grader
# version 1's regex,
#   (?:(?<![\w)\]}])-)?
#   (?:\\[dt]?frac\{\d+\}\{\d+\}
#   |\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])
#   |\d+(?:\.\d+)?(?:/\d+(?![\d.]))?)
# The minus only counts when it cannot be a binary operator ("3-5" ends in 5,
# "= -2" ends in -2); thousands groups come before plain digits so "1,234" is
# one number; fractions are kept whole so "3/4" is not graded as "4". Run as
# one regex, the thousands alternative re-walks a chain of groups from every
# group ("123,123,...,1": quadratic), so `_NUMBER` is that regex without it and
# `_thousands_end` decides it by hand, walking each chain once.
_NUMBER = re.compile(
    r"(?:(?<![\w)\]}])-)?"
    r"(?:\\[dt]?frac\{\d+\}\{\d+\}"
    r"|\d+(?:\.\d+)?(?:/\d+(?![\d.]))?)"
)
_DIGITS = re.compile(r"[0-9]*")
_GROUPS = re.compile(r"(?:,[0-9]{3})+")
_LAST_DIGIT = re.compile(r".*[0-9]", re.DOTALL)
# No match contains one of these characters ('-' only as its first, ',' only
# before exactly three digits), so a scan restarted at the last of them before
# the last digit finds the same final number as a scan from the start.
_LAST_RESTART = re.compile(r".*(?:[^0-9,./\\dtfrac{}]|,(?![0-9]{3}(?![0-9])))", re.DOTALL)


class _AsciiDigitTable(dict):
    """`str.translate` table sending each Unicode decimal digit to its ASCII digit.

    Filled in per character as texts meet them (every other character maps to
    itself), so a text costs one dictionary look-up per character.
    """

    def __missing__(self, code: int) -> int | str:
        ch = chr(code)
        value: int | str = str(unicodedata.decimal(ch)) if ch.isdecimal() else code
        self[code] = value
        return value


_ASCII_DIGITS = _AsciiDigitTable()


def _ascii_digits(text: str) -> str:
    # One character for one: positions, and so extraction, are unchanged.
    return text if text.isascii() else text.translate(_ASCII_DIGITS)


def _fbox_as_boxed(text: str) -> str:
    return _FBOX.sub(lambda _: BOXED, text) if "\\fbox" in text else text


def too_deep(text: str, limit: int = MAX_NESTING) -> bool:
    """Whether `text` nests groups or brackets more than `limit` deep (escapes are literal)."""
    if len(text) <= 2 * limit:
        return False  # too short to hold limit + 1 pairs
    depth = 0
    for m in _NESTING_TOKENS.finditer(text):
        ch = m.group()
        if ch in "{([":
            depth += 1
            if depth > limit:
                return True
        elif ch in "})]":
            depth = max(0, depth - 1)
    return False


def _closing_braces(text: str, start: int) -> dict[int, int]:
    """{position of '{': position of its matching '}'} for the braces from `start` on."""
    close: dict[int, int] = {}
    open_at: list[int] = []
    for m in _BRACE_TOKENS.finditer(text, start):
        i = m.start()
        ch = text[i]
        if ch == "{":
            open_at.append(i)
        elif ch == "}" and open_at:
            close[open_at.pop()] = i
    return close


def _box_open(text: str, idx: int) -> int:
    """Where the group of the `\\boxed` at `idx` opens, after any spaces."""
    i = idx + len(BOXED)
    return i if text[i : i + 1] == "{" else _SPACES.match(text, i).end()


def _simple_box(text: str, i: int) -> str | None:
    """Contents of the group opening at `i` when it holds no brace or backslash."""
    j = text.find("}", i + 1)
    if j < 0:
        return None
    inner = text[i + 1 : j]
    return inner if "{" not in inner and "\\" not in inner else None


def last_boxed(text: str) -> str | None:
    """Contents of the last complete, non-empty `\\boxed{...}` of `text`, stripped.

    A truncated final box ("\\boxed{12" at the length limit) is not an answer;
    the last complete, non-empty box is. `\\{` and `\\}` are literal braces.
    """
    idx = text.rfind(BOXED)
    if idx < 0:
        return None
    i = _box_open(text, idx)
    if text[i : i + 1] == "{":
        inner = _simple_box(text, i)  # "\boxed{42}": the usual answer, decided here
        if inner is not None:
            inner = inner.strip()
            if inner:
                return inner
    # Braces are matched once for the whole text, not once per box: a run of
    # unclosed boxes ("\boxed{" * 16000) would otherwise cost its square.
    close = _closing_braces(text, text.find(BOXED))
    while idx >= 0:
        i = _box_open(text, idx)
        j = close.get(i)
        if j is not None:
            inner = text[i + 1 : j].strip()
            if inner:
                return inner
        idx = text.rfind(BOXED, 0, idx)
    return None


def _thousands_end(text: str, comma: int, chain: tuple[int, int]) -> tuple[int, tuple[int, int]]:
    """End of "d,ddd,ddd[.dd]" whose first comma is at `comma`, or -1; and the chain measured.

    `chain` is (first comma, end) of the groups measured last: a chain is
    walked once, however many of its groups start a number.
    """
    first, end = chain
    if not (first <= comma < end and (comma - first) % 4 == 0):
        groups = _GROUPS.match(text, comma)
        first, end = comma, (groups.end() if groups else comma)
        chain = (first, end)
    if end == comma:
        return -1, chain
    after = text[end : end + 1]
    if after == ".":
        decimals_end = _DIGITS.match(text, end + 1).end()
        if decimals_end > end + 1 and text[decimals_end : decimals_end + 1] != ",":
            return decimals_end, chain
        return end, chain
    if after and after in "0123456789,":
        return -1, chain
    return end, chain


def _final_number(text: str) -> str | None:
    last_digit = _LAST_DIGIT.match(text)
    if last_digit is None:
        return None
    restart = _LAST_RESTART.match(text, 0, last_digit.end())
    pos = restart.end() - 1 if restart else 0
    chain = (-1, -1)
    found = None
    while pos >= 0:
        resume = -1
        for m in _NUMBER.finditer(text, pos):
            start, end = m.span()
            found = (start, end)
            if text[end : end + 1] == ",":
                # Up to three bare digits before a comma: the thousands
                # alternative, tried first, may have matched here instead.
                digits = start + 1 if text[start] == "-" else start
                if end - digits <= 3 and _DIGITS.match(text, digits).end() == end:
                    thousands_end, chain = _thousands_end(text, end, chain)
                    if thousands_end > 0:
                        found = (start, thousands_end)
                        resume = thousands_end
                        break
                    if chain[1] - end > 4:
                        # A spoiled chain ("123,123,...,123,"): every group
                        # ahead is a plain "123" that fails the same way, so
                        # the scan goes on from the last group's digits.
                        resume = chain[1] - 3
                        break
        pos = resume
    if found is None or not standalone(text, *found):
        return None
    number = text[found[0] : found[1]]
    return number.replace(",", "") if "," in number else number


def read_answer(completion: str | None, max_chars: int = MAX_CHARS) -> tuple[str | None, str]:
    """(answer, "") as `extract_answer` defines it, or (None, why there is none)."""
    if not completion:
        return None, NO_ANSWER
    # Judged from the length alone: nothing below reads a text over the limit.
    if len(completion) > max_chars:
        return None, TOO_LONG
    # isprintable() settles most one-line completions without the regex.
    if not completion.isprintable() and _CONTROL.search(completion):
        return None, CONTROL_CHARACTER
    text = _fbox_as_boxed(_ascii_digits(completion))
    if BOXED in text:
        # Once the model opens a box, only a finished box is its answer: the
        # "61" in a "\boxed{61" cut off at the length limit might have been 612.
        answer = last_boxed(text)
    else:
        answer = _final_number(text)
    return answer, ("" if answer is not None else NO_ANSWER)


def extract_answer(completion: str | None, max_chars: int = MAX_CHARS) -> str | None:
    """The answer string that `grade` compares with the ground truth.

    The contents of the last complete, non-empty `\\boxed{...}`; in a
    completion without `\\boxed`, the final number in the text (integer,
    decimal, `a/b`, `\\frac{a}{b}`, with thousands separators removed); None
    when there is no such answer, and for a completion over `max_chars`
    characters or with a control character (see the module docstring).
    Unicode decimal digits come back as ASCII digits.
    """
    return read_answer(completion, max_chars)[0]


def all_boxed(text: str) -> list[str]:
    """Contents of every complete, non-empty outermost `\\boxed{...}` of `text`, stripped, in order."""
    out: list[str] = []
    first = text.find(BOXED)
    if first < 0:
        return out
    close = _closing_braces(text, first)
    idx, after = first, -1
    while idx >= 0:
        if idx > after:  # not a box inside the previous one
            i = _box_open(text, idx)
            j = close.get(i)
            if j is not None:
                after = j
                inner = text[i + 1 : j].strip()
                if inner:
                    out.append(inner)
        idx = text.find(BOXED, idx + len(BOXED))
    return out


def normalize_truth(ground_truth: object) -> str:
    """The reference answer in the form `extract_answer` gives (no box, no `$..$`).

    A truth with one box is its contents. A truth with several is kept whole,
    boxes and text between them, for math-verify to read as it reads such a
    truth itself (`worker.gold_text`): boxes joined by a comma, "and" or "or" are
    one answer of several parts ("\\boxed{1} papers and \\boxed{2} bins" is
    {1, 2}), and of boxes apart in prose the last one counts.
    """
    truth = ground_truth if isinstance(ground_truth, str) else str(ground_truth)
    truth = _fbox_as_boxed(_ascii_digits(truth.strip()))
    # Some datasets store the reference as "\boxed{..}" or "$..$"; grading the
    # bare answer keeps both sides in the same form.
    if BOXED in truth:
        boxes = all_boxed(truth)
        if len(boxes) > 1:
            return truth
        truth = boxes[0] if boxes else truth
    if len(truth) >= 2 and truth[0] == "$" and truth[-1] == "$":
        truth = truth.strip("$").strip()
    return truth
