"""Evaluation sets beyond a run's own split (config `eval.extra_sets`, Fig. 14 and the
AIME24 curve): another split's validation set, or a problem file in verl's schema given
by path. Each is validated at the run's evaluation steps and scored apart; the train
rule hands them to the backends as `RunPaths.eval_sets`, the score rule reads their
dumps from `RunFiles.set_generations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from isocompute.atomic import read_parquet
from isocompute.errors import ConfigError, InputError

# What an evaluation-set file must hold for both backends (verl reads the prompt, the
# ground truth and the data source; extra_info.problem_id is filled in when missing).
REQUIRED_COLUMNS = ("prompt", "reward_model.ground_truth", "data_source")


@dataclass(frozen=True)
class EvalSet:
    """One extra evaluation set: `split` (another split's val.parquet) or `path` (a parquet)."""
    name: str
    split: str | None = None
    path: str | None = None


def extra_sets(cfg: dict) -> list[EvalSet]:
    """The config's extra evaluation sets in order (none when the key is absent)."""
    return [EvalSet(s["name"], s.get("split"), s.get("path")) for s in cfg["eval"].get("extra_sets", [])]


def extra_set_problems(cfg: dict, split: str | None = None, val_size: int | None = None) -> int:
    """Problems a run validates on besides its own split's: `val_size` (default splits.val_size)
    per split set other than `split`, and each path set's `problems`, else its file's rows
    (0 while the file is not there yet: `isocompute plan` may run before data is fetched)."""
    import pyarrow.parquet as pq

    val_size = cfg["splits"]["val_size"] if val_size is None else int(val_size)
    total = 0
    for spec in cfg["eval"].get("extra_sets", []):
        if "split" in spec:
            total += val_size if spec["split"] != split else 0
        elif spec.get("problems"):
            total += int(spec["problems"])
        elif Path(spec["path"]).is_file():
            total += pq.ParquetFile(spec["path"]).metadata.num_rows
    return total


def missing_columns(df: pd.DataFrame) -> list[str]:
    """REQUIRED_COLUMNS absent from `df` (a dotted name is a key of a struct column)."""
    missing = []
    for col in REQUIRED_COLUMNS:
        top, _, key = col.partition(".")
        if top not in df.columns:
            missing.append(col)
        elif key and not all(isinstance(v, dict) and key in v for v in df[top].head(50)):
            missing.append(col)
    return missing


def first_bad_row(df: pd.DataFrame) -> tuple[str, int, str] | None:
    """(column, row, what is wrong) of the first row verl could not evaluate: a `prompt` that is
    not a chat (a list of {role, content} messages: a plain string would be read as characters),
    or a null `reward_model.ground_truth` (graded against the string 'None'). None if all are fine."""
    for i, messages in enumerate(df["prompt"]):
        if isinstance(messages, str) or not hasattr(messages, "__len__") or not len(messages) or not all(
                isinstance(m, dict) and "role" in m and "content" in m for m in messages):
            return "prompt", i, f"not a chat (a list of {{role, content}} messages), got {str(messages)[:40]!r}"
    for i, model in enumerate(df["reward_model"]):
        truth = model.get("ground_truth") if isinstance(model, dict) else None
        if truth is None or (isinstance(truth, float) and truth != truth):
            return "reward_model.ground_truth", i, "null (a problem needs its answer)"
    return None


def check_eval_sets(cfg: dict) -> None:
    """Every `eval.extra_sets[i].path` exists and holds verl's columns (splits are built by the
    pipeline and checked by the config); raises ConfigError naming the key."""
    for i, s in enumerate(extra_sets(cfg)):
        if s.path is None:
            continue
        key = f"eval.extra_sets[{i}].path"
        if not Path(s.path).is_file():
            raise ConfigError(f"config key '{key}': evaluation set {s.name!r}: file not found: {s.path} "
                              "(expected a parquet in verl's schema)")
        try:
            df = pd.read_parquet(s.path)
        except Exception as exc:  # any unreadable file is the user's to fix
            raise ConfigError(f"config key '{key}': {s.path}: not a parquet file ({exc})") from None
        missing = missing_columns(df)
        if missing or df.empty:
            what = f"missing verl column(s) {missing}" if missing else "no problems"
            raise ConfigError(f"config key '{key}': {s.path}: {what}; expected verl's RL schema "
                              f"{list(REQUIRED_COLUMNS)}")
        bad = first_bad_row(df)
        if bad:
            raise ConfigError(f"config key '{key}': evaluation set {s.name!r}: {s.path}: column '{bad[0]}' row "
                              f"{bad[1]}: {bad[2]}")


def read_eval_set(path: Path | str, name: str) -> pd.DataFrame:
    """An evaluation set's problems with every column the backends read: a missing
    `extra_info.problem_id` becomes '<name>-<row>', a missing `ability` 'math'."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"evaluation set {name!r}: file not found: {path}")
    df = read_parquet(path)
    missing = missing_columns(df)
    if missing:
        raise InputError(f"evaluation set {name!r}: {path}: missing verl column(s) {missing}")
    bad = first_bad_row(df)
    if bad:
        raise InputError(f"evaluation set {name!r}: {path}: column '{bad[0]}' row {bad[1]}: {bad[2]}")
    infos = df["extra_info"] if "extra_info" in df.columns else pd.Series([None] * len(df), index=df.index)
    df = df.assign(extra_info=[
        {**(e if isinstance(e, dict) else {}),
         "problem_id": str(e["problem_id"]) if isinstance(e, dict) and e.get("problem_id") is not None
         else f"{name}-{i}"}
        for i, e in enumerate(infos)])
    if "ability" not in df.columns:
        df = df.assign(ability="math")
    return df.reset_index(drop=True)
