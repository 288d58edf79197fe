"""Checks on the tables the analysis consumes, before any of it runs.

An evaluation table has one row per evaluation point: B_p, n, step, compute,
the metrics (avg@4, best@4, worst@4), optionally run, split, tokens (may be
missing for some runs), seed (several training runs of one cell), problems
and samples (the validation problems and samples per problem behind each
evaluation, which give its standard error) or `<metric>_se` (the standard
error itself). A problem stops the analysis with an InputError naming the
column and what is wrong.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from isocompute.errors import InputError

RUN_KEYS = ("B_p", "n")
OPTIONAL_NUMERIC = ("avg@4", "best@4", "worst@4")
POSITIVE_COUNTS = ("problems", "samples")
TRAIN_COLUMNS = ("B_p", "n", "step", "compute", "problem_id", "pass_rate")


def se_column(metric: str) -> str:
    """Name of the column holding the standard error of `metric`'s evaluations."""
    return f"{metric}_se"


def plain(value) -> str:
    """A table value as a person writes it: 64, not 64.0 or np.float64(64.0)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return repr(value.item() if isinstance(value, np.generic) else value)
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.10g}"


def _numeric(df: pd.DataFrame, col: str, what: str, *, missing_ok: bool = False) -> pd.Series:
    if col not in df.columns:
        raise InputError(f"{what}: missing column '{col}' (have: {', '.join(map(str, df.columns))})")
    s = df[col]
    if not (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)):
        converted = pd.to_numeric(s, errors="coerce")
        bad = converted.isna() & s.notna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{what}: column '{col}' has a non-numeric value {plain(s.iloc[i])} in row {i}")
        s = converted
    s = s.astype(float)
    nan = (np.isinf if missing_ok else lambda v: ~np.isfinite(v))(s.to_numpy())
    if nan.any():
        i = int(np.flatnonzero(nan)[0])
        raise InputError(f"{what}: column '{col}' has a missing or non-finite value (NaN/inf) in row {i}")
    return s


def _integer(df, col, what, minimum):
    s = _numeric(df, col, what)
    v = s.to_numpy()
    bad = (v != np.round(v)) | (v < minimum)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        kind = "positive integer" if minimum > 0 else "non-negative integer"
        raise InputError(f"{what}: column '{col}' must hold a {kind}, got {plain(v[i])} in row {i}")
    return s.astype(np.int64)


def _check_run_columns(df: pd.DataFrame, what: str) -> None:
    """B_p, n (positive integers), step (non-negative integer), compute (>= 0), in place."""
    for col in ("B_p", "n"):
        df[col] = _integer(df, col, what, minimum=1)
    df["step"] = _integer(df, "step", what, minimum=0)
    df["compute"] = _numeric(df, "compute", what)
    if (df["compute"] < 0).any():
        i = int(np.flatnonzero((df["compute"] < 0).to_numpy())[0])
        raise InputError(f"{what}: column 'compute' has a negative value {plain(df['compute'].iloc[i])} in row {i}")


def check_evals(evals: pd.DataFrame, metric: str = "avg@4", *, split: str | None = None,
                what: str = "evaluation table") -> pd.DataFrame:
    """Validate an evaluation table and return a clean, sorted copy.

    Raises InputError on: a missing column (B_p, n, step, compute, `metric`),
    a non-numeric, NaN or infinite value, negative compute or step, B_p or n
    not a positive integer, compute != B_p*n*step, a metric outside [0, 1],
    metrics out of their order (`_check_metric_order`), a duplicate (B_p, n, step),
    several splits without `split` chosen.
    """
    if not isinstance(evals, pd.DataFrame):
        raise InputError(f"{what}: expected a table, got {type(evals).__name__}")
    df = evals.copy()
    if "split" in df.columns:
        splits = sorted(map(str, df["split"].dropna().unique()))
        if split is not None:
            if split not in splits:
                raise InputError(f"{what}: column 'split' has no rows for split {split!r} (have: {', '.join(splits)})")
            df = df[df["split"].astype(str) == split]
        elif len(splits) > 1:
            raise InputError(f"{what}: column 'split' holds several splits ({', '.join(splits)}); choose one (--split)")
    elif split is not None:
        raise InputError(f"{what}: --split {split!r} given but the table has no column 'split'")
    if df.empty:
        raise InputError(f"{what}: no rows")
    _check_run_columns(df, what)
    expected = (df["B_p"] * df["n"] * df["step"]).astype(float)
    off = ~np.isclose(df["compute"], expected, rtol=1e-6, atol=1e-9)
    if off.any():
        i = int(np.flatnonzero(np.asarray(off))[0])
        raise InputError(f"{what}: column 'compute' must equal B_p*n*step, got {plain(df['compute'].iloc[i])} "
                         f"instead of {plain(expected.iloc[i])} in row {i}")
    metrics = [metric] + [c for c in OPTIONAL_NUMERIC if c in df.columns and c != metric]
    for col in metrics:
        df[col] = _numeric(df, col, what)
    _check_optional_columns(df, metrics, what)
    for col in metrics:
        out = (df[col] < 0) | (df[col] > 1)
        if out.any():
            i = int(np.flatnonzero(out.to_numpy())[0])
            raise InputError(f"{what}: column '{col}' must be in [0, 1], got {plain(df[col].iloc[i])} in row {i}")
    _check_metric_order(df, what)
    keys = ["B_p", "n"] + (["seed"] if "seed" in df.columns else []) + ["step"]
    dup = df.duplicated(keys, keep=False)
    if dup.any():
        row = df.loc[dup].iloc[0]
        raise InputError(f"{what}: duplicate ({', '.join(keys)}) = ({', '.join(plain(row[k]) for k in keys)}) "
                         f"in columns {', '.join(repr(k) for k in keys)}")
    return df.sort_values(keys, kind="stable").reset_index(drop=True)


# Rounding slack of the order checks: the metrics are means over the same problems.
ORDER_TOLERANCE = 1e-9


def _check_metric_order(df: pd.DataFrame, what: str) -> None:
    """Relations that hold by construction (metrics.eval_points: each is a mean over the same
    problems of per-problem values in this order): worst@k <= avg@k <= best@k for each k, and
    worst@k_unbiased <= pass@1 <= pass@k_unbiased. A row out of order is a damaged table."""
    chains = [[f"worst@{k}", f"avg@{k}", f"best@{k}"] for k in _ks(df, r"(?:avg|best|worst)@(\d+)")]
    chains += [[f"worst@{k}_unbiased", "pass@1", f"pass@{k}_unbiased"] for k in _ks(df, r"pass@(\d+)_unbiased")]
    for chain in chains:
        present = [c for c in chain if c in df.columns]
        for lo, hi in zip(present, present[1:]):
            a, b = pd.to_numeric(df[lo], errors="coerce"), pd.to_numeric(df[hi], errors="coerce")
            bad = (a > b + ORDER_TOLERANCE).to_numpy()
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"{what}: row {i} (step {plain(df['step'].iloc[i])}) has {lo} = {plain(a.iloc[i])} "
                                 f"above {hi} = {plain(b.iloc[i])}, impossible for one evaluation (a damaged table); "
                                 "delete it so the rule that writes it runs again")


def _ks(df: pd.DataFrame, pattern: str) -> list[int]:
    """The k of each column named like `pattern` (its group), sorted."""
    return sorted({int(m.group(1)) for m in (re.fullmatch(pattern, str(c)) for c in df.columns) if m})


def _check_optional_columns(df: pd.DataFrame, metrics, what: str) -> None:
    """tokens (>= 0, may be missing), seed (integer >= 0), problems and samples
    (> 0) and the metrics' standard errors (> 0), in place."""
    if "tokens" in df.columns:
        df["tokens"] = _numeric(df, "tokens", what, missing_ok=True)
        if (df["tokens"] < 0).any():
            raise InputError(f"{what}: column 'tokens' has a negative value")
    if "seed" in df.columns:
        df["seed"] = _integer(df, "seed", what, minimum=0)
    for col in [c for c in POSITIVE_COUNTS if c in df.columns] + [se_column(m) for m in metrics
                                                                   if se_column(m) in df.columns]:
        df[col] = _numeric(df, col, what)
        bad = ~(df[col] > 0)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{what}: column '{col}' must be > 0, got {plain(df[col].iloc[i])} in row {i}")


def check_train(train: pd.DataFrame, what: str = "training table") -> pd.DataFrame:
    """Validate a per-step training table (B_p, n, step, compute, problem_id, pass_rate)."""
    if not isinstance(train, pd.DataFrame):
        raise InputError(f"{what}: expected a table, got {type(train).__name__}")
    df = train.copy()
    if df.empty:
        raise InputError(f"{what}: no rows")
    _check_run_columns(df, what)
    if "problem_id" not in df.columns:
        raise InputError(f"{what}: missing column 'problem_id'")
    if df["problem_id"].isna().any():
        raise InputError(f"{what}: column 'problem_id' has a missing value")
    df["pass_rate"] = _numeric(df, "pass_rate", what)
    if ((df["pass_rate"] < 0) | (df["pass_rate"] > 1)).any():
        raise InputError(f"{what}: column 'pass_rate' must be in [0, 1]")
    keys = (["B_p", "n"] + [k for k in ("seed", "source") if k in df.columns] + ["step", "problem_id"])
    if df.duplicated(keys).any():
        raise InputError(f"{what}: duplicate ({', '.join(keys)}) in columns {', '.join(repr(k) for k in keys)}")
    return df


def check_timeout_shares(evals: pd.DataFrame, max_share: float, what: str = "evaluation table") -> None:
    """Refuse a table with an evaluation whose grader timeouts (column `timeouts`, of its
    problems * samples graded samples) are a larger share than `max_share`
    (grading.max_timeout_share): its scores would count undecided answers as wrong.
    Raises TooManyTimeouts naming the run and step; a table without the columns passes."""
    from isocompute.grading.outcome import check_timeout_share

    if "timeouts" not in evals.columns or not set(POSITIVE_COUNTS) <= set(evals.columns):
        return
    graded = (evals["problems"] * evals["samples"]).round().astype("int64")
    over = evals["timeouts"] > max_share * graded
    if over.any():
        row = evals[over].iloc[0]
        run = row["run"] if "run" in evals.columns else f"bp{plain(row['B_p'])}_n{plain(row['n'])}"
        split = f" {row['split']}" if "split" in evals.columns else ""
        others = f" (and {int(over.sum()) - 1} more evaluation steps)" if over.sum() > 1 else ""
        check_timeout_share(int(row["timeouts"]), int(graded[over].iloc[0]), max_share,
                            f"{what}: run{split} {run} step {plain(row['step'])}{others}")
