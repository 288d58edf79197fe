"""The grader's version: what a saved verdict (`cache.GradeCache`) was decided by.

A leaf of the grader, so the cache (which stamps and checks it) and the verdict
pipeline (which takes a cache) need not import each other's module both ways.
"""

# Bump whenever the verdict on an ordinary completion could change (extraction
# rules, fast path, math-verify pin); saved GradeCache files from another
# version are then ignored. The bounded-time rewrite of the grader keeps version 1:
# ordinary completions grade as before (tests/grading/test_ordinary.py); only
# malformed ones may not (control characters, Unicode digits that reach
# math-verify, over MAX_CHARS characters). Version 2: a pair that ran out of
# time is timed out, not wrong, and never saved; version 1 caches may hold
# correct answers saved as False after a worker's start-up ate their deadline.
# Version 3: 42e0 and 4.2e1 equal 42, and 1\,234 equals 1234 (the fast path;
# math-verify graded them wrong). Version 4: an answer equal to a bare-variable ground truth as an
# identity (3x/3, 2x - x vs x) is correct; math-verify compares a bare variable as text.
# Version 5 (docs/methods.md, section 5, "Grading"): an unboxed completion's final number
# is no answer when it sits inside a construct, a word, a list or an operation (version
# 4 graded \frac{1+\sqrt{5}}{2} equal to 2); a ground truth with several boxes is read
# whole, as math-verify reads it (version 4 kept its last box); a percent truth accepts
# its number (28\% and \boxed{28}); spaced thousands (1 000) and a truth's decimal comma
# (1,22 and 1.22) are numbers.
# The whole-cost bound per pair (verdict.PAIR_BUDGET_FACTOR) changed no version: it can
# only turn a comparison that would have run past the bound (6x the deadline, 5x since
# version 6) into a timeout, which is never saved.
# Version 6 (docs/methods.md, section 5, "decided before math-verify"): wrappers around an
# answer or truth (braces, nested boxes, parentheses around a number) are read through
# (version 5 graded 42 inside 5,000 braces too deep), \fbox is a box, a sum of plain
# integers is its value, and exponents, factorial arguments and sizes over the written
# limits of `limits` are too large (wrong) where version 5 timed them out.
GRADER_VERSION = "6"
