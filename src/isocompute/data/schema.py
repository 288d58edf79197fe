"""verl's RL data schema, shared by every split file so that the cluster
backend consumes them unchanged.

Row: data_source (str), prompt (list of chat messages), ability (str),
reward_model {style: "rule", ground_truth: str}, extra_info {index, problem_id,
family, ...}.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from isocompute.atomic import read_parquet
from isocompute.errors import InputError

COLUMNS = ["data_source", "prompt", "ability", "reward_model", "extra_info"]


ABILITY = "math"      # every problem's verl `ability`


def make_row(*, data_source: str, problem: str, instruction: str, answer: str,
             index: int, problem_id: str, family: str) -> dict:
    content = f"{problem} {instruction}".strip() if instruction else problem
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": content}],
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": str(answer)},
        "extra_info": {"index": int(index), "problem_id": problem_id, "family": family},
    }


def validate_frame(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check that `df` follows the schema; `source` names the file in errors."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; expected verl RL schema {COLUMNS}")
    if df.empty:
        raise InputError(f"{source}: no problems")
    ids = problem_ids(df)
    if ids.duplicated().any():
        raise InputError(f"{source}: duplicate extra_info.problem_id {ids[ids.duplicated()].iloc[0]!r}")
    _refuse_boxes_apart(df, ids, source)
    return df


def _refuse_boxes_apart(df: pd.DataFrame, ids: pd.Series, source: str) -> None:
    """A ground truth with boxes apart in prose ("First \\boxed{1}. Later ... \\boxed{2}") is refused,
    naming its row: the grader, as math-verify, would read only its last box
    (`grading.boxes_apart_in_prose`; docs/methods.md, section 5)."""
    from isocompute.grading import boxes_apart_in_prose  # deferred: the grader's workers start on use

    for row, (problem_id, truth) in enumerate(zip(ids, ground_truths(df))):
        if truth.count("\\boxed") + truth.count("\\fbox") > 1 and boxes_apart_in_prose(truth):
            raise InputError(f"{source}: row {row} (problem_id {problem_id!r}): ground truth {truth[:120]!r} has "
                             f"boxes apart in prose, which the grader would read as its last box alone; "
                             f"store the answer (one box, or boxes joined by a comma, 'and' or 'or')")


def problem_ids(df: pd.DataFrame) -> pd.Series:
    return df["extra_info"].map(lambda e: e["problem_id"])


def ground_truths(df: pd.DataFrame) -> pd.Series:
    return df["reward_model"].map(lambda r: str(r["ground_truth"]))


def families(df: pd.DataFrame) -> pd.Series:
    return df["extra_info"].map(lambda e: e.get("family") or "all")


def read_problems(path: Path | str) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"problem file not found: {path}")
    return validate_frame(read_parquet(path), str(path))
