"""Benchmark of the grader on a real-shaped pool: verdicts against math-verify and throughput.

Writes a pool in the verl-schema parquet layout the Guru and DAPO data use
(`data_source`, `prompt`, `ability`, `reward_model` {style, ground_truth},
`extra_info`), a few hundred rows with ground truths in the forms those datasets
store (integers, `$..$`, `\\boxed{..}`, decimals, fractions, percents, units,
radicals, intervals, thousands groups, several boxes), and for each row one
completion of a shape models write (a boxed answer after some reasoning,
unboxed text ending in the answer, several boxes, a percent or a unit in the
box, a wrong answer of each shape). Reads it back as verl would and grades every
row with `grade_many`, then with the numeric fast path off (every pair through
math-verify), and with math-verify alone on the whole completion
(`verify(parse(truth), parse(completion))`, its defaults).

Prints, per shape and overall: the rows; agreement with the label the row was
written with (its answer right or wrong); the grader's and math-verify's false
positives against that label; the grader's disagreements with math-verify by
direction; pairs per second and CPU seconds, fast path on and off.

    .venv/bin/python benchmarks/bench_grader_pool.py [--rows 400] [--seed 0] [--out pool.json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

# (truth as a dataset stores it, the answer a model writes for it, a wrong answer of the same form)
TRUTHS = [
    ("42", "42", "24"),
    ("$-7$", "-7", "7"),
    ("\\boxed{120}", "120", "121"),
    ("3.5", "3.5", "3.05"),
    ("\\frac{3}{4}", "\\frac{3}{4}", "\\frac{4}{3}"),
    ("\\dfrac{5}{8}", "0.625", "0.6"),
    ("28\\%", "28\\%", "0.28\\%"),
    ("20\\%", "20", "2"),
    ("5 \\text{ cm}", "5\\text{ cm}", "6\\text{ cm}"),
    ("2\\sqrt{3}", "\\sqrt{12}", "3\\sqrt{2}"),
    ("(1, 2]", "(1,2]", "[1,2)"),
    ("1,234", "1234", "1243"),
    ("\\boxed{1} and \\boxed{2}", "1, 2", "1"),
    ("x^2 - 1", "(x-1)(x+1)", "(x-1)^2"),
    ("\\pi", "\\pi", "3"),
]

PROSE = ("We set up the equation from the problem statement and simplify step by step. "
         "Checking the edge cases, nothing else satisfies the constraints. ")


def completion(shape: str, answer: str, other: str, rng: random.Random) -> str:
    reasoning = PROSE * rng.randint(1, 6)
    if shape == "boxed":
        return f"{reasoning}Therefore the answer is $\\boxed{{{answer}}}$."
    if shape == "unboxed":
        return f"{reasoning}So the answer is {answer}."
    if shape == "corrected":  # a first guess boxed, then the final one
        return f"{reasoning}At first I got $\\boxed{{{other}}}$, but rechecking: $\\boxed{{{answer}}}$."
    if shape == "final answer line":
        return f"{reasoning}\n\nFinal Answer: The final answer is ${answer}$. I hope it is correct."
    raise ValueError(shape)


SHAPES = ("boxed", "unboxed", "corrected", "final answer line")


def build_rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        truth, right, wrong = TRUTHS[i % len(TRUTHS)]
        shape = SHAPES[(i // len(TRUTHS)) % len(SHAPES)]
        correct = rng.random() < 0.5
        answer, other = (right, wrong) if correct else (wrong, right)
        rows.append({
            "data_source": "bench/pool",
            "prompt": [{"role": "user", "content": f"Problem {i}. Put the final answer in \\boxed{{}}."}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {"index": i, "shape": shape, "label": correct,
                           "completion": completion(shape, answer, other, rng)},
        })
    return rows


def write_and_read(rows: list[dict], folder: Path):
    import pandas as pd

    path = folder / "pool.parquet"
    pd.DataFrame(rows).to_parquet(path)
    frame = pd.read_parquet(path)
    truths = [r["ground_truth"] for r in frame["reward_model"]]
    completions = [e["completion"] for e in frame["extra_info"]]
    shapes = [e["shape"] for e in frame["extra_info"]]
    labels = [bool(e["label"]) for e in frame["extra_info"]]
    return completions, truths, shapes, labels


def math_verify_alone(completion_text: str, truth: str) -> bool:
    from math_verify import parse, verify

    gold = truth if ("$" in truth or "\\boxed" in truth) else f"${truth}$"
    return bool(verify(parse(gold), parse(completion_text)))


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=400, help="pool rows (default: 400)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the rows' labels and lengths (default: 0)")
    parser.add_argument("--out", type=Path, default=None, help="write the per-row verdicts and the summary as JSON")
    args = parser.parse_args(argv)

    from isocompute.grading import grade_many, sandbox, verdict, warm_up

    with tempfile.TemporaryDirectory() as tmp:
        completions, truths, shapes, labels = write_and_read(build_rows(args.rows, args.seed), Path(tmp))
    warm_up(1)

    def fresh_grade():
        sandbox.clear_memo()  # nothing remembered from the previous run
        return grade_many(completions, truths)

    fast = verdict.fast_verdict
    runs_on, runs_off = [], []
    for _ in range(2):  # alternated, best of two each: a loaded machine's noise is not the fast path's
        runs_on.append(timed(fresh_grade))
        verdict.fast_verdict = lambda answer, truth: None  # every pair through math-verify
        try:
            runs_off.append(timed(fresh_grade))
        finally:
            verdict.fast_verdict = fast
    ours, wall_on, cpu_on = min(runs_on, key=lambda r: r[1])
    slow, wall_off, cpu_off = min(runs_off, key=lambda r: r[1])
    mv, wall_mv, cpu_mv = timed(lambda: [math_verify_alone(c, t) for c, t in zip(completions, truths)])

    print(f"pool: {len(completions)} rows, verl schema, {len(TRUTHS)} ground-truth forms x {len(SHAPES)} shapes")
    header = f"{'shape':18} {'rows':>4} {'grader=label':>12} {'grader FP':>9} {'mv=label':>8} {'mv FP':>5} " \
             f"{'grader+ mv-':>11} {'grader- mv+':>11}"
    print(header)
    groups = defaultdict(list)
    for i, shape in enumerate(shapes):
        groups[shape].append(i)
        groups["all"].append(i)
    summary = {}
    for shape in (*SHAPES, "all"):
        idx = groups[shape]
        row = {
            "rows": len(idx),
            "grader_agrees_with_label": sum(ours[i] == labels[i] for i in idx),
            "grader_false_positives": sum(ours[i] and not labels[i] for i in idx),
            "math_verify_agrees_with_label": sum(mv[i] == labels[i] for i in idx),
            "math_verify_false_positives": sum(mv[i] and not labels[i] for i in idx),
            "grader_correct_math_verify_wrong": sum(ours[i] and not mv[i] for i in idx),
            "grader_wrong_math_verify_correct": sum(mv[i] and not ours[i] for i in idx),
        }
        summary[shape] = row
        print(f"{shape:18} {row['rows']:4d} {row['grader_agrees_with_label']:12d} {row['grader_false_positives']:9d} "
              f"{row['math_verify_agrees_with_label']:8d} {row['math_verify_false_positives']:5d} "
              f"{row['grader_correct_math_verify_wrong']:11d} {row['grader_wrong_math_verify_correct']:11d}")
    same = sum(a == b for a, b in zip(ours, slow))
    print(f"fast path off: {same} of {len(ours)} verdicts the same")
    n = len(completions)
    for name, wall, cpu in (("grader, fast path on", wall_on, cpu_on), ("grader, fast path off", wall_off, cpu_off),
                            ("math-verify alone", wall_mv, cpu_mv)):
        print(f"{name:22}: {n / wall:8.1f} pairs/s ({wall:.2f} s wall; {cpu:.2f} s CPU in this process, "
              f"math-verify's workers apart)")
    disagreements = Counter((shapes[i], truths[i], ours[i], mv[i]) for i in range(n) if ours[i] != mv[i])
    for (shape, truth, o, m), count in sorted(disagreements.items()):
        print(f"  {count:3d} x {shape:18} truth {truth!r}: grader {'correct' if o else 'wrong'}, "
              f"math-verify {'correct' if m else 'wrong'}")
    if args.out:
        args.out.write_text(json.dumps({
            "summary": summary, "fast_path_off_same": same,
            "seconds": {"fast_path_on": wall_on, "fast_path_off": wall_off, "math_verify_alone": wall_mv},
            "rows": [{"shape": s, "truth": t, "label": lab, "grader": o, "math_verify": m}
                     for s, t, lab, o, m in zip(shapes, truths, labels, ours, mv)]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
