"""Grading under load: honest pairs that must stay correct, towers that must never pass, and the
CPU burners that load the machine.

`honest_pairs(n, seed)` draws `n` distinct honest symbolic pairs (a correct answer written
differently from the ground truth: 3x+3 against 3(x+1), x+x against 2x, equivalent fractions,
roots, expanded products; with a fixed seed, each checked equal with sympy as it is drawn, so a
"wrong" verdict on one can only be the grader's); `towers(n, seed)` inputs sympy cannot finish
(x + 9^{9^{9}+1} and kin, and deeply nested roots). `start_burners` / `stop_burners`: processes
spinning at normal priority, stopped by PID. For the load test (tests/grading/test_load.py) and
benchmarks/bench_grader_load.py.
"""

from __future__ import annotations

import random
import subprocess
import sys

_VARS = "xyzabn"  # not t, m, g, s...: math-verify reads "7t" as 7 tonnes (7)


def _lin(k: int, c: int, v: str) -> str:
    """k*v + c, written plainly (3x+3, -x-2, 2x)."""
    head = {1: v, -1: f"-{v}"}.get(k, f"{k}{v}")
    return head if c == 0 else f"{head}{'+' if c > 0 else '-'}{abs(c)}"


def _honest(rng: random.Random) -> tuple[str, str, str]:
    """(kind, answer, ground truth): two writings of one value."""
    v = rng.choice(_VARS)
    a, b = rng.randint(2, 9), rng.choice([i for i in range(-9, 10) if i])
    kind = rng.choice(["factor", "repeat", "fraction", "sqrt", "product", "powers", "half"])
    if kind == "factor":  # 3x+3 vs 3(x+1)
        return kind, _lin(a, a * b, v), f"{a}({_lin(1, b, v)})"
    if kind == "repeat":  # x+x+x vs 3x
        return kind, "+".join([v] * a), f"{a}{v}"
    if kind == "fraction":  # \frac{6}{8} + \frac{1}{8} vs \frac{7}{8}, reduced or not
        d = rng.randint(2, 30)
        n1, n2 = rng.randint(1, 40), rng.randint(1, 40)
        from fractions import Fraction

        total = Fraction(n1 + n2, d)
        return kind, f"\\frac{{{n1}}}{{{d}}}+\\frac{{{n2}}}{{{d}}}", f"\\frac{{{total.numerator}}}{{{total.denominator}}}"
    if kind == "sqrt":  # \sqrt{12} vs 2\sqrt{3}
        m = rng.choice([2, 3, 5, 6, 7, 10, 11, 13])
        return kind, f"\\sqrt{{{a * a * m}}}", f"{a}\\sqrt{{{m}}}"
    if kind == "product":  # (x+2)(x-3) vs x^2-x-6
        c = rng.choice([i for i in range(-9, 10) if i])
        mid, const = b + c, b * c
        expanded = f"{v}^2" + ("" if mid == 0 else f"{'+' if mid > 0 else '-'}{abs(mid) if abs(mid) != 1 else ''}{v}")
        expanded += f"{'+' if const > 0 else '-'}{abs(const)}"
        return kind, f"({_lin(1, b, v)})({_lin(1, c, v)})", expanded
    if kind == "powers":  # x^2 x^3 vs x^5
        p, q = rng.randint(2, 9), rng.randint(2, 9)
        return kind, f"{v}^{{{p}}}\\cdot {v}^{{{q}}}", f"{v}^{{{p + q}}}"
    return kind, f"\\frac{{{v}}}{{{a}}}\\cdot {a}", v  # half: \frac{x}{3}\cdot 3 vs x


def honest_pairs(n: int, seed: int) -> list[tuple[str, str, str]]:
    """`n` distinct (kind, completion, truth), each answer checked equal to its truth with sympy."""
    import sympy

    from math_verify import parse

    rng = random.Random(seed)
    seen, pairs = set(), []
    while len(pairs) < n:
        kind, answer, truth = _honest(rng)
        if answer == truth or (answer, truth) in seen:
            continue
        seen.add((answer, truth))
        # By construction equal; checked anyway, outside the grader, so that a
        # "wrong" below can only be the grader's.
        # No signal-based parse timeout: on a loaded machine it fires (5 s) and the check fails.
        gold = parse("\\boxed{" + truth + "}", parsing_timeout=None)
        pred = parse("\\boxed{" + answer + "}", parsing_timeout=None)
        assert gold and pred and sympy.simplify(gold[0] - pred[0]) == 0, (answer, truth)
        pairs.append((kind, f"so the answer is \\boxed{{{answer}}}", truth))
    return pairs


def towers(n: int, seed: int) -> list[tuple[str, str, str]]:
    """`n` distinct inputs expensive for sympy: powers whose exponent is a sum of a power and 1
    (x + b^{a^{c}+1}, which reach math-verify) and deeply nested roots (deeper than extract.MAX_NESTING: wrong, "too deep",
    before math-verify since grader version 5)."""
    rng = random.Random(seed + 1)
    out, seen = [], set()
    while len(out) < n:
        if len(out) % 5 == 4:
            depth = rng.randint(300, 3_000)
            text = "\\sqrt{" * depth + str(rng.randint(2, 9)) + "}" * depth
            kind = "nested roots"
        else:
            # A pure integer tower is too large before math-verify (limits.MAX_EXPONENT, grader 6);
            # an exponent that is a sum is not read by that limit, and sympy builds b^(a^c + 1).
            base, a, c = rng.randint(5, 99), rng.randint(9, 99), rng.randint(9, 12)
            text = f"x + {base}^{{{a}^{{{c}}}+1}}"
            kind = "tower"
        if text not in seen:
            seen.add(text)
            out.append((kind, f"so the answer is \\boxed{{{text}}}", str(rng.randint(2, 99))))
    return out


def start_burners(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_burners(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()
