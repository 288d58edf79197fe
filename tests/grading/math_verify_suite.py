"""math-verify 0.9.0's own test cases, read from its vendored test files, and the
verdicts of `isocompute.grading.judge` on them.

`cases()` reads every parametrized (gold, prediction, expected) case of the files
in `math_verify_0_9_0/` with `ast` (the files are never imported), with the
math-verify configuration its test function calls (`compare_strings`' match
types, precision, strictness and set-relation flag, or plain
`verify(parse(gold), parse(pred))`). `agreement()` feeds each case to `judge` in
two feeds -- the prediction as written, and, where it is a bare answer, a
completion that boxes it -- beside math-verify with the test's configuration, and
`table()` counts agreement per file and feed, with each disagreement's direction
and cause. Run as a script it prints the table:

    PYTHONPATH=src python tests/grading/math_verify_suite.py
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

SUITE_DIR = Path(__file__).parent / "math_verify_0_9_0"
FILES = ("test_all.py", "test_boxed.py", "test_numina_cases.py", "test_open_thoughts.py", "test_strict.py",
         "test_yujianll.py")

AS_WRITTEN = "as written"
BOXED = "boxed"


@dataclass(frozen=True)
class Config:
    """The math-verify call a test function makes."""

    match_types: tuple[str, ...] | None = None  # None: parse's defaults (plain verify(parse, parse))
    precision: int = 6
    strict: bool = True
    allow_set_relation_comp: bool = False


@dataclass(frozen=True)
class Case:
    file: str
    function: str
    index: int
    gold: str
    pred: str
    expected: bool
    config: Config = field(default_factory=Config)

    @property
    def name(self) -> str:
        return f"{self.file}::{self.function}[{self.index}]"


def _value(node: ast.expr):
    """A literal case value; f-strings (test_float_precision's) are evaluated with `math` only."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return eval(compile(ast.Expression(node), "<math-verify case>", "eval"), {"__builtins__": {}, "math": math})


def _config(function: ast.FunctionDef, row: dict) -> Config:
    """The math-verify configuration the test body calls, with parametrized arguments filled in."""
    calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)]
    compare = [c for c in calls if isinstance(c.func, ast.Name) and c.func.id == "compare_strings"]
    if not compare:
        verify = [c for c in calls if isinstance(c.func, ast.Name) and c.func.id == "verify"]
        if len(verify) != 1 or verify[0].keywords:
            raise ValueError(f"{function.name}: neither compare_strings nor a plain verify(parse, parse)")
        return Config()
    kwargs = {}
    for kw in compare[0].keywords:
        kwargs[kw.arg] = row[kw.value.id] if isinstance(kw.value, ast.Name) else ast.literal_eval(kw.value)
    return Config(match_types=tuple(kwargs.pop("match_types", ("latex", "expr"))), **kwargs)


def _expected_name(names: list[str]) -> str:
    for name in ("expected", "result"):
        if name in names:
            return name
    raise ValueError(f"no expected-verdict argument among {names}")


def read_file(name: str) -> list[Case]:
    """Every parametrized (gold, pred) case of one vendored test file."""
    tree = ast.parse((SUITE_DIR / name).read_text(encoding="utf-8"), filename=name)
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        marks = [d for d in node.decorator_list
                 if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("mark.parametrize")]
        if not marks:
            continue
        names = [n.strip() for n in ast.literal_eval(marks[0].args[0]).split(",")]
        if "gold" not in names or "pred" not in names:
            continue
        rows = marks[0].args[1]
        if not isinstance(rows, (ast.List, ast.Tuple)):
            raise ValueError(f"{name}::{node.name}: cases are not a literal list")
        for i, elt in enumerate(rows.elts):
            if not isinstance(elt, ast.Tuple) or len(elt.elts) != len(names):
                raise ValueError(f"{name}::{node.name}[{i}]: expected a {len(names)}-tuple")
            row = dict(zip(names, (_value(v) for v in elt.elts)))
            out.append(Case(name, node.name, i, row["gold"], row["pred"], bool(row[_expected_name(names)]),
                            _config(node, row)))
    return out


def cases() -> list[Case]:
    return [case for name in FILES for case in read_file(name)]


def math_verify(gold: str, pred: str, config: Config) -> bool:
    """math-verify 0.9.0 as the test calls it (`compare_strings` in its test_all.py)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    if config.match_types is None:
        return bool(verify(parse(gold), parse(pred)))
    targets = [LatexExtractionConfig(boxed_match_priority=0) if t == "latex" else ExprExtractionConfig()
               for t in config.match_types]
    return bool(verify(parse(gold, targets), parse(pred, targets), float_rounding=config.precision,
                       strict=config.strict, allow_set_relation_comp=config.allow_set_relation_comp))


_DELIMITED = re.compile(r"\$\$(.*)\$\$|\$(.*)\$|\\\((.*)\\\)|\\\[(.*)\\\]", re.DOTALL)
_PROSE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}\s+[a-zA-Z]{2,}")


def bare_answer(pred: str) -> str | None:
    """The answer of a prediction that is nothing but an answer (optionally in one pair of math
    delimiters), else None: such a prediction is what a model would box."""
    if "\\boxed" in pred:
        return None
    text = pred.strip()
    m = _DELIMITED.fullmatch(text)
    if m is not None:
        inner = next(g for g in m.groups() if g is not None)
        if "$" in inner or "\\(" in inner or "\\[" in inner:
            return None
        text = inner.strip()
    elif "$" in text or "\\(" in text or "\\[" in text:
        return None
    if not text or "\n" in text or _PROSE.search(text.replace("\\text{", " ")):
        return None
    return text


@dataclass(frozen=True)
class Outcome:
    case: Case
    feed: str
    completion: str
    project: str  # judge's Verdict value: correct, wrong, timed out
    reason: str
    math_verify: bool  # math-verify with the test's configuration, on this feed's completion

    @property
    def agrees(self) -> bool:
        return (self.project == "correct") == self.case.expected

    @property
    def false_positive(self) -> bool:
        """Correct by the project, wrong by both math-verify (test's configuration) and the test."""
        return self.project == "correct" and not self.math_verify and not self.case.expected

    @property
    def direction(self) -> str:
        if self.agrees:
            return "agree"
        return "project correct, test wrong" if self.project == "correct" else "project wrong, test correct"

    @property
    def cause(self) -> str:
        """Why the project and the test differ (a coarse, mechanical label)."""
        if self.agrees:
            return ""
        if self.math_verify != self.case.expected:
            return "math-verify 0.9.0 fails this test too"
        if self.project == "timed out":
            return "timed out"
        if "\\boxed" not in self.completion:
            if self.reason == "no answer":
                return "unboxed fallback: no standalone final number"
            return f"unboxed fallback ({self.reason})"
        if self.reason in ("no answer", "too long", "control character", "no ground truth"):
            return f"extraction: {self.reason}"
        if self.completion.count("\\boxed") > 1:
            return f"last box wins ({self.reason})"
        return f"{self.reason} with the project's configuration"


def feeds(case: Case) -> Iterable[tuple[str, str]]:
    yield AS_WRITTEN, case.pred
    bare = bare_answer(case.pred)
    if bare is not None:
        yield BOXED, "\\boxed{" + bare + "}"


def agreement(all_cases: list[Case], timeout_s: float = 5.0) -> list[Outcome]:
    from isocompute.grading import judge

    out = []
    for case in all_cases:
        for feed, completion in feeds(case):
            verdict, reason = judge(completion, case.gold, timeout_s)
            mv = math_verify(case.gold, completion, case.config)
            out.append(Outcome(case, feed, completion, verdict.value, reason, mv))
    return out


def table(outcomes: list[Outcome]) -> str:
    """Agreement per file and feed, then each disagreement's direction and cause."""
    lines = [f"{'file':24} {'feed':11} {'cases':>5} {'agree':>5} {'proj+ test-':>11} {'proj- test+':>11} {'FP':>3}"]
    groups: dict[tuple[str, str], list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault((o.case.file, o.feed), []).append(o)
        groups.setdefault(("all", o.feed), []).append(o)
    for (file, feed), items in sorted(groups.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        d = Counter(o.direction for o in items)
        lines.append(f"{file:24} {feed:11} {len(items):5d} {d['agree']:5d} {d['project correct, test wrong']:11d} "
                     f"{d['project wrong, test correct']:11d} {sum(o.false_positive for o in items):3d}")
    lines.append("")
    causes = Counter((o.feed, o.direction, o.cause) for o in outcomes if not o.agrees)
    for (feed, direction, cause), n in sorted(causes.items()):
        lines.append(f"{n:4d}  {feed:11} {direction:28} {cause}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    results = agreement(cases())
    print(table(results))
    if "-v" in sys.argv:
        for o in results:
            if not o.agrees:
                print(f"{o.direction:28} {o.feed:10} {o.case.name}: gold={o.case.gold[:60]!r} "
                      f"completion={o.completion[:80]!r} -> {o.project} ({o.reason}); mv={o.math_verify}")
