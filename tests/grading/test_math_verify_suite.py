"""math-verify 0.9.0's own test suite through `isocompute.grading.judge`.

Every parametrized case of the pinned math-verify's test files (vendored in
math_verify_0_9_0/, read by `math_verify_suite`) is graded by `judge` -- the
call training, the verl reward and scoring share -- in two feeds: the
prediction as written, and, where it is a bare answer, a completion that boxes
it. The project may say wrong where math-verify says correct (its deliberate
policies, docs/methods.md "Grading"), but never correct where math-verify with
the test's configuration and the test's verdict both say wrong: that would be a
reward for a wrong answer.
"""

from __future__ import annotations

from collections import Counter

import pytest
from math_verify_suite import AS_WRITTEN, BOXED, FILES, agreement, bare_answer, cases, table

from isocompute.grading import judge
from isocompute.grading.outcome import Verdict

# Cases per vendored file: the reader must find every one (a file edited or
# replaced without its counts updated fails here, not silently).
CASES_PER_FILE = {"test_all.py": 197, "test_boxed.py": 3, "test_numina_cases.py": 30,
                  "test_open_thoughts.py": 29, "test_strict.py": 2, "test_yujianll.py": 14}

# Agreement with the tests' verdicts measured when the fallback and truth
# policies of grader version 5 were written (as written: 164 -> 175 of 275,
# boxed: 115 -> 121 of 129 against version 4). A floor, so a change that
# loses agreement says so; raise it when one gains.
AGREEMENT_FLOOR = {AS_WRITTEN: 175, BOXED: 121}


@pytest.fixture(scope="module")
def outcomes():
    results = agreement(cases())
    print("\n" + table(results))  # the agreement table, shown with pytest -s
    return results


def test_every_case_of_every_file_is_read():
    all_cases = cases()
    assert Counter(c.file for c in all_cases) == CASES_PER_FILE
    assert set(CASES_PER_FILE) == set(FILES)
    assert len({c.name for c in all_cases}) == len(all_cases)
    # The configurations the files call, as the test bodies spell them.
    configs = {(c.function, c.config.match_types) for c in all_cases}
    assert ("test_number_extraction", ("expr",)) in configs
    assert ("test_latex_notation", ("latex",)) in configs
    assert ("test_string_extraction", None) in configs  # test_yujianll: plain verify(parse, parse)
    strict = {c.config.strict for c in all_cases if c.function == "test_strict_variable_comparison"}
    assert strict == {True, False}


def test_bare_answers_are_boxed_and_prose_is_not():
    assert bare_answer("$\\frac{1}{3}$") == "\\frac{1}{3}"
    assert bare_answer("-5") == "-5"
    assert bare_answer("$$(1, +\\infty)$$") == "(1, +\\infty)"
    assert bare_answer("$\\boxed{1,2}$") is None
    assert bare_answer("Therefore $x \\geq 5$ is the solution.") is None
    assert bare_answer("the number is not 10 which is 1,000.99€") is None


@pytest.mark.parametrize("feed", [AS_WRITTEN, BOXED])
def test_no_false_positive(outcomes, feed):
    false_positives = [o for o in outcomes if o.feed == feed and o.false_positive]
    assert not false_positives, "\n".join(
        f"{o.case.name}: gold {o.case.gold!r}, completion {o.completion!r} graded correct ({o.reason})"
        for o in false_positives)


@pytest.mark.parametrize("feed", [AS_WRITTEN, BOXED])
def test_agreement_does_not_fall(outcomes, feed):
    items = [o for o in outcomes if o.feed == feed]
    assert sum(o.agrees for o in items) >= AGREEMENT_FLOOR[feed]
    assert not [o for o in items if o.project == Verdict.TIMED_OUT.value]


@pytest.mark.parametrize(
    ("completion", "truth"),
    [
        # The fallback's false positives of grader version 4.
        ("$\\frac{1+\\sqrt{5}}{2}$", "2"),  # a denominator
        ("$-[0,1)$", "1"),  # an interval
        ("AZYUK2A", "2"),  # a digit inside a word
        # Mixed numbers: cases math-verify's tests gained after 0.9.0.
        ("11 6/6", "1"),
        ("11 7/6", "7/6"),
        ("$11\\frac{7}{6}$", "\\frac{7}{6}"),
        ("so 1 000", "0"),  # spaced thousands
        ("x = 1,22", "22"),  # a decimal comma
        ("3-5", "5"),  # an operand
        ("$x^2$", "2"),  # an exponent
        ("so $\\sqrt{2}$", "2"),
        ("the answer is 5!", "5"),
        ("$5 \\geq x$", "5"),  # a relation
        ("Answer $ \n 9 \n $", "9"),  # inline math across lines: math-verify does not read it
    ],
)
def test_fallback_takes_no_number_from_inside_a_construct(completion, truth):
    assert judge(completion, truth) == (Verdict.WRONG, "no answer")


@pytest.mark.parametrize(
    ("completion", "truth"),
    [
        ("so the result is 61.", "61"),
        ("x = -2", "-2"),
        ("3-5=-2", "-2"),
        ("total: 1,234,567", "1234567"),
        ("**Answer:** 42", "42"),
        ("The angle is $90^\\circ$.", "90"),
        ("The length is $5 \\text{ cm}$.", "5"),
        ("it is $\\frac{5}{8}$", "0.625"),
        ("The answer is 28 percent.", "28\\%"),
    ],
)
def test_fallback_still_reads_a_final_number(completion, truth):
    assert judge(completion, truth)[0] is Verdict.CORRECT


@pytest.mark.parametrize(
    ("completion", "truth", "verdict"),
    [
        # Several boxes in a ground truth, read as math-verify reads such a truth itself.
        ("\\boxed{1, 2}", "\\boxed{1} papers and \\boxed{2} bins", Verdict.CORRECT),
        ("\\boxed{2}", "\\boxed{1} papers and \\boxed{2} bins", Verdict.WRONG),  # a part is not the answer
        ("\\boxed{2, 1}", "\\boxed{1} and \\boxed{2}", Verdict.CORRECT),
        ("\\boxed{2}", "First \\boxed{1}. Later we find \\boxed{2}", Verdict.CORRECT),  # apart: the last
        ("\\boxed{1,2}", "\\boxed{1} no no no no no \\boxed{2}", Verdict.WRONG),
        # Percents: math-verify 0.9.0's percent rows.
        ("\\boxed{28}", "28\\%", Verdict.CORRECT),
        ("\\boxed{28\\%}", "28\\%", Verdict.CORRECT),
        ("\\boxed{0.28}", "28\\%", Verdict.WRONG),
        ("\\boxed{28}", "0.28", Verdict.WRONG),
        # Spaced thousands and decimal commas are numbers, not products or sets.
        ("\\boxed{1000}", "1 000", Verdict.CORRECT),
        ("\\boxed{1 000}", "1000", Verdict.CORRECT),
        ("\\boxed{0}", "1 000", Verdict.WRONG),
        ("\\boxed{1.22}", "1,22", Verdict.CORRECT),
        ("\\boxed{0.111}", "0,111", Verdict.CORRECT),
        ("\\boxed{1.234}", "1,234", Verdict.WRONG),  # English thousands: 1234
        ("\\boxed{1234}", "1,234", Verdict.CORRECT),
        ("\\boxed{22}", "1,22", Verdict.WRONG),
    ],
)
def test_ground_truths_as_math_verify_reads_them(completion, truth, verdict):
    assert judge(completion, truth)[0] is verdict
