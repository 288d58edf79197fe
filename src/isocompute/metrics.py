"""Validation metrics of docs/methods.md section 5, from a run's graded samples.

Pure functions over frames and arrays; the `score` stage does the I/O (reading
the raw generation dumps, re-grading them with the project grader) and calls
`eval_table`. Works on dumps of either backend: the problem of a sample is its
`problem_id` when the dump has one, else its input text.

Columns of an evaluation table (one row per evaluation step of a run):
  split, run, B_p, n, step, compute (= B_p * n * step), tokens (cumulative
  generated training tokens), avg@k, best@k, worst@k (from each problem's
  first k samples: the paper's definitions), pass@1 (mean correct over all N
  samples), pass@k_unbiased and worst@k_unbiased (the unbiased estimators over
  all N samples; equal to best@k and worst@k when N = k), problems, samples
  (N per problem), response_length (mean validation completion tokens);
  the `score` stage adds seed and timeouts (samples the grader timed out on).
"""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd

from isocompute.errors import InputError


def pass_at_k(N, c, k: int) -> np.ndarray:
    """Unbiased P(at least one of k samples correct) from c correct of N: 1 - C(N-c, k) / C(N, k)."""
    N, c = np.broadcast_arrays(np.asarray(N, dtype=np.int64), np.asarray(c, dtype=np.int64))
    return np.array([1.0 - comb(int(n_) - int(c_), k) / comb(int(n_), k) for n_, c_ in zip(N.ravel(), c.ravel())],
                    dtype=float).reshape(N.shape)


def worst_at_k(N, c, k: int) -> np.ndarray:
    """Unbiased P(all k samples correct) from c correct of N: C(c, k) / C(N, k)."""
    N, c = np.broadcast_arrays(np.asarray(N, dtype=np.int64), np.asarray(c, dtype=np.int64))
    return np.array([comb(int(c_), k) / comb(int(n_), k) for n_, c_ in zip(N.ravel(), c.ravel())],
                    dtype=float).reshape(N.shape)


def problem_counts(samples: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per (step, problem): N samples, c correct, c_k correct among the first k samples.

    `samples` has columns step, problem, correct and optionally sample (the
    sample index within its problem; order of appearance otherwise).
    """
    df = samples.copy()
    if "sample" in df.columns and df["sample"].notna().all():
        df = df.sort_values(["step", "problem", "sample"], kind="stable")
    df["rank"] = df.groupby(["step", "problem"], sort=False).cumcount()
    df["correct"] = df["correct"].astype(int)
    df["correct_k"] = df["correct"].where(df["rank"] < k, 0)
    out = df.groupby(["step", "problem"], sort=True).agg(N=("correct", "size"), c=("correct", "sum"),
                                                          c_k=("correct_k", "sum")).reset_index()
    return out


def eval_points(counts: pd.DataFrame, k: int) -> pd.DataFrame:
    """One row per step: avg@k, best@k, worst@k (first k samples), pass@1 and the unbiased estimators."""
    short = counts[counts["N"] < k]
    if not short.empty:
        row = short.iloc[0]
        raise InputError(f"step {row['step']}: problem {row['problem']!r} has {row['N']} samples, fewer than "
                         f"eval.k = {k}; raise eval.samples to at least eval.k")
    c = counts.assign(
        avg=counts["c_k"] / k,
        best=(counts["c_k"] >= 1).astype(float),
        worst=(counts["c_k"] >= k).astype(float),
        pass1=counts["c"] / counts["N"],
        pass_unbiased=pass_at_k(counts["N"].to_numpy(), counts["c"].to_numpy(), k),
        worst_unbiased=worst_at_k(counts["N"].to_numpy(), counts["c"].to_numpy(), k),
    )
    g = c.groupby("step", sort=True)
    out = pd.DataFrame({
        f"avg@{k}": g["avg"].mean(), f"best@{k}": g["best"].mean(), f"worst@{k}": g["worst"].mean(),
        "pass@1": g["pass1"].mean(), f"pass@{k}_unbiased": g["pass_unbiased"].mean(),
        f"worst@{k}_unbiased": g["worst_unbiased"].mean(),
        "problems": g.size(), "samples": g["N"].median(),
    })
    return out.reset_index()


def cumulative_tokens(metrics: list[dict], rollouts_per_step: int) -> pd.Series:
    """Cumulative generated training tokens by step, from file-logger records {"step", "data"}.

    Uses `perf/tokens_generated_cumulative` (local backend) or else sums
    `response_length/mean` x B_p * n (what verl logs). Steps without either
    are absent; step 0 is 0.
    """
    direct, per_step = {}, {}
    for rec in metrics:
        step, data = int(rec["step"]), rec.get("data", {})
        if "perf/tokens_generated_cumulative" in data:
            direct[step] = float(data["perf/tokens_generated_cumulative"])
        if "response_length/mean" in data and step > 0:
            per_step[step] = float(data["response_length/mean"]) * rollouts_per_step
    if direct:
        return pd.Series(direct, dtype=float).sort_index()
    if per_step:
        per_step[0] = 0.0
        full = pd.Series(per_step, dtype=float).reindex(np.arange(max(per_step) + 1))
        # A running sum is the cumulative count only up to the first unlogged step.
        return full.cumsum().mask(full.isna().cummax())
    return pd.Series({0: 0.0}, dtype=float)


def eval_table(samples: pd.DataFrame, k: int, *, B_p: int, n: int, tokens: pd.Series | None = None,
               split: str = "", run: str = "") -> pd.DataFrame:
    """The evaluation table of one run from its graded validation samples.

    `samples`: columns step, problem, correct (bool), optional sample and n_tokens.
    `tokens`: cumulative generated training tokens by step (NaN where absent).
    """
    if samples.empty:
        raise InputError(f"run {split}/{run}: no validation samples")
    table = eval_points(problem_counts(samples, k), k)
    if "n_tokens" in samples.columns:
        table["response_length"] = samples.groupby("step")["n_tokens"].mean().reindex(table["step"]).to_numpy()
    table.insert(0, "split", split)
    table.insert(1, "run", run)
    table.insert(2, "B_p", int(B_p))
    table.insert(3, "n", int(n))
    table.insert(5, "compute", table["step"] * int(B_p) * int(n))
    tok = (tokens if tokens is not None else pd.Series(dtype=float)).reindex(table["step"]).to_numpy(dtype=float)
    table.insert(6, "tokens", tok)
    return table
