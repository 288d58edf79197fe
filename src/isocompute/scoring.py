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
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from isocompute.atomic import read_json
from isocompute.errors import InputError
from isocompute.layout import RunFiles, StudyLayout, replicate_suffix, run_name

log = logging.getLogger(__name__)

RETRAIN = "the run's dumps are incomplete: retrain it (delete its folder)"


def read_dump(path: Path) -> pd.DataFrame:
    """One validation dump (verl's format; extra keys kept), its keys and ground truths checked."""
    try:
        df = pd.read_json(path, lines=True, dtype=False)
    except ValueError as exc:
        raise InputError(f"{path}: not JSON lines ({exc})") from None
    missing = {"output", "gts"} - set(df.columns)
    if missing:
        raise InputError(f"{path}: missing key(s) {sorted(missing)}; expected verl's generation dump format")
    if df["gts"].isna().any():
        row = int(df["gts"].isna().to_numpy().argmax())
        raise InputError(f"{path}: line {row + 1}: gts is null (a problem without a ground truth would be graded "
                         "against 'None'); fix the evaluation set's reward_model.ground_truth and retrain")
    if "step" not in df.columns:
        df["step"] = int(path.stem)
    return df


def dump_files(directory: Path, max_step: int | None = None) -> dict[int, Path]:
    """{step: dump} of the dumps in `directory` (those of steps <= max_step)."""
    paths = (p for p in Path(directory).glob("*.jsonl") if p.stem.isdigit())
    return dict(sorted((int(p.stem), p) for p in paths if max_step is None or int(p.stem) <= max_step))


def run_record(files: RunFiles, max_step: int | None = None) -> tuple[Path, dict]:
    """(marker, its content): what the run recorded of its evaluations. With `max_step`, the
    marker of the rung that stopped there (an adaptive sweep's) when there is one, else run.json."""
    if max_step is not None:
        for marker in sorted(Path(files.run_dir).glob("rungs/*/rung.json")):
            meta = read_json(marker)
            if isinstance(meta, dict) and meta.get("stop_at_step") == max_step:
                return marker, meta
    if not files.marker.is_file():
        raise InputError(f"{files.marker}: not found; the run has not finished (train it, then score it)")
    meta = read_json(files.marker)
    if not isinstance(meta, dict):
        raise InputError(f"{files.marker}: not a run marker (a JSON object); delete it so the train rule reruns")
    return files.marker, meta


def expected_problems(marker: Path, meta: dict, eval_set: str | None) -> tuple[int | None, str]:
    """(problems every dump must hold, where that number comes from): run.json's record for runs
    that keep one, else the set's problem file (the own split's less the prompts verl dropped);
    None when neither is there."""
    recorded = meta.get("eval_set_problems", {}).get(eval_set) if eval_set else meta.get("val_problems")
    if recorded is not None:
        return int(recorded), f"{marker}"
    if eval_set:
        specs = [s for s in meta.get("config", {}).get("eval", {}).get("extra_sets", []) if s.get("name") == eval_set]
        if not specs:
            return None, ""
        path = Path(StudyLayout(meta["config"]["experiment"]).eval_set_file(specs[0]))
        dropped = 0
    else:
        path = Path(meta.get("val_file", ""))
        dropped = int(meta.get("dropped_prompts", {}).get("val", {}).get("dropped", 0))
    if not path.is_file():
        log.warning("%s: the validation set %s is not there; checking that the dumps agree with each other only",
                    marker, path)
        return None, ""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows - dropped, f"{path}"
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable parquet file ({type(exc).__name__}); rebuild the splits") from None


def check_dumps(directory: Path, marker: Path, meta: dict, *, max_step: int | None, eval_set: str | None,
                samples: int | None) -> dict[int, pd.DataFrame]:
    """The dumps of the steps the run recorded (run.json's `eval_steps`, up to `max_step`), with
    column `problem` (`problem_keys`), each checked to hold the same problems (as many as the
    set has) with the same samples each.
    Raises InputError naming the dump, the step and what is missing."""
    found = dump_files(directory, max_step)
    steps = meta.get("eval_steps")
    if steps is None:
        log.warning("%s records no eval_steps (written before they were); checking the dumps there", marker)
        steps = list(found)
    steps = [int(s) for s in steps if max_step is None or int(s) <= max_step]
    for step in steps:
        if step not in found:
            raise InputError(f"{Path(directory) / f'{step}.jsonl'}: missing, but {marker} records step {step} as an "
                             f"evaluation step; {RETRAIN}")
    stray = sorted(set(found) - set(steps))
    if stray:
        raise InputError(f"{found[stray[0]]}: step {stray[0]} is not an evaluation step {marker} records (a dump "
                         "of another run, or a stale run.json); delete the run's folder and retrain it")
    if not steps:
        raise InputError(f"{directory}: no validation dumps (<step>.jsonl); did the run evaluate?")
    problems, source = expected_problems(marker, meta, eval_set)
    dumps = {step: read_dump(found[step]) for step in steps}
    dumps = {step: df.assign(problem=problem_keys(df, found[step])) for step, df in dumps.items()}
    counts = {step: df["problem"].value_counts() for step, df in dumps.items()}
    every = set().union(*(set(c.index) for c in counts.values()))
    for step, per_problem in counts.items():
        lost = sorted(every - set(per_problem.index))
        want = samples if samples is not None else int(per_problem.mode().iloc[0])
        short = per_problem[per_problem != want]
        what = None
        if lost:
            what = f"problem(s) {lost[:3]} missing ({len(per_problem)} of the {len(every)} problems of the other dumps)"
        elif problems is not None and len(per_problem) != problems:
            what = f"{len(per_problem)} problems, expected the {problems} of {source}"
        elif len(short):
            what = (f"problem {short.index[0]!r} has {int(short.iloc[0])} samples, expected {want}"
                    f"{' (eval.samples)' if samples is not None else ''}")
        if what:
            raise InputError(f"{found[step]}: step {step}: {what}; {RETRAIN}")
    return dumps


def problem_keys(gens: pd.DataFrame, where) -> pd.Series:
    """What groups a dump's samples by problem: problem_id, else the prompt (verl's dumps without it)."""
    key = gens["problem_id"] if "problem_id" in gens.columns else None
    if key is None or key.isna().any():
        if "input" not in gens.columns:
            raise InputError(f"{where}: neither problem_id nor input to group samples by problem")
        key = gens["problem_id"].fillna(gens["input"]) if key is not None else gens["input"]
    return key.astype(str)


@dataclass(frozen=True)
class ScoreSettings:
    """What scoring takes from the config: `k` (eval.k: avg/best/worst@k), `samples` (eval.samples:
    each dump's samples per problem, checked; None: not checked) and `max_timeout_share`
    (grading.max_timeout_share: a step with a larger share of timed-out samples raises
    TooManyTimeouts naming the run and the step; None: no bound)."""
    k: int
    samples: int | None = None
    max_timeout_share: float | None = None

    @classmethod
    def from_config(cls, cfg: dict) -> "ScoreSettings":
        return cls(cfg["eval"]["k"], cfg["eval"].get("samples"), cfg["grading"]["max_timeout_share"])


@dataclass(frozen=True)
class ScoredRun:
    """Which run a table scores: its split, B_p x n cell and seed `replicate` (column `seed`: the
    analysis resamples seeds for its intervals when a cell has several)."""
    split: str
    B_p: int
    n: int
    replicate: int = 0

    @property
    def name(self) -> str:
        return run_name(self.B_p, self.n, replicate_suffix(self.replicate))


def score_run(run_dir: Path | str, run: ScoredRun, settings: ScoreSettings, *, max_step: int | None = None,
              eval_set: str | None = None) -> pd.DataFrame:
    """The evaluation table of one run (one row per evaluation step), re-graded from its dumps.

    `max_step` keeps the evaluations up to a rung of an adaptive sweep, even once the run
    has gone past it. `eval_set` scores the dumps of an extra evaluation set instead of the own
    split's (`RunFiles.set_generations`), the same way; the table gets a column `eval_set`.

    Grades are cached in run_dir/grades_cache.json, keyed by the grader version;
    timed-out samples are not, and column `timeouts` counts them per step.

    The dumps are checked against what the run recorded first (`check_dumps`: every
    evaluation step's dump, each with the set's problems and `settings.samples` samples
    each); a cache that fails its checks is ignored and rebuilt (`GradeCache.load`,
    `spot_check_cache`).
    """
    files = RunFiles(run_dir)
    marker, meta = run_record(files, max_step)
    directory = files.set_generations(eval_set) if eval_set else files.generations
    dumps = check_dumps(directory, marker, meta, max_step=max_step, eval_set=eval_set, samples=settings.samples)
    gens = pd.concat(dumps.values(), ignore_index=True)
    graded, newly = _grade(gens, Path(run_dir) / "grades_cache.json")
    timeouts = graded.groupby("step")["timed_out"].agg(["sum", "size"])     # per evaluation step
    table = _eval_table(graded, files, run, settings.k)
    table["timeouts"] = timeouts["sum"].reindex(table["step"]).fillna(0).astype(int).to_numpy()
    where = f"{run.split}{f' on {eval_set}' if eval_set else ''} {run.name}"
    _check_timeouts(timeouts, where, settings.max_timeout_share)
    if eval_set:
        table["eval_set"] = eval_set
    _compare_dumped_scores(gens, graded["correct"].tolist())
    log.info("score %s: %d eval steps, %d samples (%d newly graded); avg@%d %.3f -> %.3f", where, len(table),
             len(gens), newly, settings.k, table[f"avg@{settings.k}"].iloc[0], table[f"avg@{settings.k}"].iloc[-1])
    return table


def _grade(gens: pd.DataFrame, cache_path: Path) -> tuple[pd.DataFrame, int]:
    """(the dumps with columns correct and timed_out, how many were newly graded): every sample
    through the project grader, with the run's grade cache (saved when it grew)."""
    from isocompute.grading import GradeCache, Verdict, judge_many, spot_check_cache

    outputs = gens["output"].fillna("").astype(str).tolist()
    truths = gens["gts"].astype(str).tolist()
    cache = spot_check_cache(GradeCache.load(cache_path), outputs, truths, str(cache_path))
    before = len(cache)
    verdicts = judge_many(outputs, truths, cache=cache)
    if len(cache) != before:
        cache.save(cache_path)
    return gens.assign(correct=[v.correct for v in verdicts],
                       timed_out=[v is Verdict.TIMED_OUT for v in verdicts]), len(cache) - before


def _eval_table(graded: pd.DataFrame, files: RunFiles, run: ScoredRun, k: int) -> pd.DataFrame:
    """The metrics of each evaluation step (`metrics.eval_table`) and the run's seed."""
    from isocompute.metrics import cumulative_tokens, eval_table
    from isocompute.train.run_logs import read_jsonl

    keep = [c for c in ("step", "problem", "correct", "sample", "n_tokens") if c in graded.columns]
    tokens = cumulative_tokens(read_jsonl(files.metrics), run.B_p * run.n)
    table = eval_table(graded[keep], k, B_p=run.B_p, n=run.n, tokens=tokens, split=run.split, run=run.name)
    table.insert(4, "seed", int(run.replicate))
    return table


def _check_timeouts(per_step: pd.DataFrame, where: str, max_timeout_share: float | None) -> None:
    """Say how many samples timed out in the grader (`per_step`: each step's sum of timed-out
    samples and its size); with `max_timeout_share`, stop at a step with a larger share of them."""
    from isocompute.grading import check_timeout_share

    if per_step["sum"].any():
        log.warning("score %s: %d of %d samples timed out in the grader (scored as not correct; not cached, so "
                    "re-scoring grades them again)", where, int(per_step["sum"].sum()), int(per_step["size"].sum()))
    if max_timeout_share is not None:
        for step, row in per_step.iterrows():
            check_timeout_share(int(row["sum"]), int(row["size"]), max_timeout_share, f"score {where} step {step}")


def _compare_dumped_scores(gens: pd.DataFrame, correct: list[bool]) -> None:
    """Log how often the backend's own dumped scores disagree with the project grader's verdicts."""
    dumped = gens["score"].astype(float).to_numpy() if "score" in gens.columns else None
    if dumped is not None and len(dumped) and (dumped > 0.5).astype(int).tolist() != [int(c) for c in correct]:
        log.info("score: the project grader disagrees with %d dumped scores (re-graded values are used)",
                 int(sum((d > 0.5) != c for d, c in zip(dumped, correct))))
