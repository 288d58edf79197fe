"""Scoring of validation generations (the `score` rule): a run's raw validation
dumps, re-graded with the project grader, become its evaluation table
(avg/best/worst@k, unbiased pass@k/worst@k, compute, tokens, and `timeouts`:
the samples per step that math-verify could not decide in time, which score
as not correct but are counted rather than passed off as wrong).

Re-grading here rather than trusting the dumped scores means a changed grader
or eval.k re-runs scoring only, never training; both backends' dumps go
through the same grader.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from isocompute.errors import InputError
from isocompute.layout import RunFiles, replicate_suffix, run_name

log = logging.getLogger(__name__)


def read_generations(directory: Path, max_step: int | None = None):
    """The validation dumps of a run (all, or those of steps <= max_step) as one frame (verl's
    format; extra keys kept)."""
    files = sorted(Path(directory).glob("*.jsonl"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1)
    files = [p for p in files if p.stem.isdigit() and (max_step is None or int(p.stem) <= max_step)]
    if not files:
        raise InputError(f"{directory}: no validation dumps (<step>.jsonl); did the run evaluate?")
    frames = []
    for path in files:
        try:
            df = pd.read_json(path, lines=True, dtype=False)
        except ValueError as exc:
            raise InputError(f"{path}: not JSON lines ({exc})") from None
        missing = {"output", "gts"} - set(df.columns)
        if missing:
            raise InputError(f"{path}: missing key(s) {sorted(missing)}; expected verl's generation dump format")
        if "step" not in df.columns:
            df["step"] = int(path.stem)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def score_run(run_dir: Path | str, k: int, *, B_p: int, n: int, split: str, replicate: int = 0,
              max_step: int | None = None, eval_set: str | None = None,
              max_timeout_share: float | None = None) -> pd.DataFrame:
    """The evaluation table of one run (one row per evaluation step), re-graded from its dumps.

    `replicate` is the run's seed replicate (column `seed`: the analysis
    resamples seeds for its intervals when a cell has several). `max_step`
    keeps the evaluations up to a rung of an adaptive sweep, even once the run
    has gone past it. `eval_set` scores the dumps of an extra evaluation set instead of the own
    split's (`RunFiles.set_generations`), the same way; the table gets a column `eval_set`.

    Grades are cached in run_dir/grades_cache.json, keyed by the grader version;
    timed-out samples are not, and column `timeouts` counts them per step. With
    `max_timeout_share` (grading.max_timeout_share), a step with a larger share of
    timed-out samples raises TooManyTimeouts naming the run and the step.
    """
    from isocompute.grading import GradeCache, Verdict, check_timeout_share, judge_many
    from isocompute.metrics import cumulative_tokens, eval_table
    from isocompute.train.run_logs import read_jsonl

    run_dir = Path(run_dir)
    files = RunFiles(run_dir)
    gens = read_generations(files.set_generations(eval_set) if eval_set else files.generations, max_step)
    key = gens["problem_id"] if "problem_id" in gens.columns else None
    if key is None or key.isna().any():
        if "input" not in gens.columns:
            raise InputError(f"{run_dir}/generations: neither problem_id nor input to group samples by problem")
        key = gens["problem_id"].fillna(gens["input"]) if key is not None else gens["input"]
    cache_path = run_dir / "grades_cache.json"
    cache = GradeCache.load(cache_path)
    before = len(cache)
    outputs = gens["output"].fillna("").astype(str).tolist()
    truths = gens["gts"].astype(str).tolist()
    verdicts = judge_many(outputs, truths, cache=cache)
    if len(cache) != before:
        cache.save(cache_path)
    correct = [v.correct for v in verdicts]
    timed_out = [v is Verdict.TIMED_OUT for v in verdicts]
    samples = gens.assign(problem=key.astype(str), correct=correct, timed_out=timed_out)
    keep = [c for c in ("step", "problem", "correct", "sample", "n_tokens") if c in samples.columns]
    tokens = cumulative_tokens(read_jsonl(files.metrics), B_p * n)
    table = eval_table(samples[keep], k, B_p=B_p, n=n, tokens=tokens, split=split,
                       run=run_name(B_p, n, replicate_suffix(replicate)))
    table.insert(4, "seed", int(replicate))
    per_step = samples.groupby("step")["timed_out"].agg(["sum", "size"])
    table["timeouts"] = per_step["sum"].reindex(table["step"]).fillna(0).astype(int).to_numpy()
    if any(timed_out):
        log.warning("score %s bp%d_n%d%s: %d of %d samples timed out in the grader (scored as not correct; "
                    "not cached, so re-scoring grades them again)", split, B_p, n, replicate_suffix(replicate),
                    sum(timed_out), len(timed_out))
    if max_timeout_share is not None:
        name = f"score {split}{f' on {eval_set}' if eval_set else ''} {run_name(B_p, n, replicate_suffix(replicate))}"
        for step, row in per_step.iterrows():
            check_timeout_share(int(row["sum"]), int(row["size"]), max_timeout_share, f"{name} step {step}")
    if eval_set:
        table["eval_set"] = eval_set
    dumped = gens["score"].astype(float).to_numpy() if "score" in gens.columns else None
    if dumped is not None and len(dumped) and (dumped > 0.5).astype(int).tolist() != [int(c) for c in correct]:
        log.info("score: the project grader disagrees with %d dumped scores (re-graded values are used)",
                 int(sum((d > 0.5) != c for d, c in zip(dumped, correct))))
    log.info("score %s%s bp%d_n%d%s: %d eval steps, %d samples (%d newly graded); avg@%d %.3f -> %.3f",
             split, f" on {eval_set}" if eval_set else "", B_p, n, replicate_suffix(replicate), len(table), len(gens),
             len(cache) - before, k,
             table[f"avg@{k}"].iloc[0], table[f"avg@{k}"].iloc[-1])
    return table
