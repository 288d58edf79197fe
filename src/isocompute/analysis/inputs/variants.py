"""The curves of a study's recipe variants (rules/variants.smk): every variant run's
training metrics (reward, entropy, KL, learning rate, per step, from metrics.jsonl)
beside its validation metrics (at its evaluation steps, from evals.parquet), one
row per run and step, for Figs. 3, 4 and the decoupled baseline. The only I/O is
in `read_variant_run`; `variant_curves` is pure.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from isocompute.atomic import read_json, read_parquet
from isocompute.errors import InputError
from isocompute.layout import RunFiles

# metrics.jsonl key (verl's names, which the local backend shares) -> curve column
TRAIN_METRICS = {"critic/score/mean": "train_reward", "actor/entropy": "entropy", "actor/kl_loss": "kl",
                 "actor/lr": "lr", "response_length/mean": "response_length"}
RUN_COLUMNS = ["variant", "split", "B_p", "n", "step", "compute"]


def variant_curves(metrics: list[dict], evals: pd.DataFrame, *, variant: str, split: str, B_p: int,
                   n: int) -> pd.DataFrame:
    """One run's curve table: a row per step of `metrics` ({"step", "data"} records) and of
    `evals`, with TRAIN_METRICS columns (NaN where a run does not log one: KL without a KL
    term) and the evaluation's metric columns (NaN between evaluations)."""
    rows = {}
    for rec in metrics:
        data = rec.get("data", {})
        rows[int(rec["step"])] = {col: data.get(key) for key, col in TRAIN_METRICS.items()}
    train = pd.DataFrame.from_dict(rows, orient="index", columns=list(TRAIN_METRICS.values()))
    train.index.name = "step"
    train = train.astype(float).reset_index()
    metric_cols = [c for c in evals.columns if "@" in c]
    scored = evals[["step", *metric_cols]].astype({"step": "int64"})
    table = train.merge(scored, on="step", how="outer").sort_values("step", kind="stable")
    table.insert(0, "variant", variant)
    table.insert(1, "split", split)
    table.insert(2, "B_p", int(B_p))
    table.insert(3, "n", int(n))
    table.insert(5, "compute", table["step"].astype("int64") * int(B_p) * int(n))
    return table.reset_index(drop=True)


def read_variant_run(run_dir: Path | str) -> pd.DataFrame:
    """The curve table of one finished, scored variant run (its run.json names the variant)."""
    from isocompute.train.run_logs import read_jsonl

    files = RunFiles(Path(run_dir))
    for path in (files.marker, files.evals):
        if not path.is_file():
            raise InputError(f"{path}: missing; the run has not finished or was not scored")
    meta = read_json(files.marker)
    if not meta.get("variant"):
        raise InputError(f"{files.marker}: not a variant's run (no 'variant' in it)")
    return variant_curves(read_jsonl(files.metrics), read_parquet(files.evals), variant=meta["variant"],
                          split=meta["split"], B_p=meta["B_p"], n=meta["n"])


def collect_variant_runs(run_dirs) -> pd.DataFrame:
    """Every variant run's curve table, ordered by variant, split, B_p, n and step."""
    tables = [read_variant_run(d) for d in run_dirs]
    if not tables:
        raise InputError("no variant runs to collect")
    out = pd.concat(tables, ignore_index=True)
    return out.sort_values(["variant", "split", "B_p", "n", "step"], kind="stable").reset_index(drop=True)


def figure_members(variants: dict, figure: str) -> dict[str, str]:
    """{variant: legend label} of the variants (config `variants`) that figure `figure` draws."""
    return {name: v.get("label") or name for name, v in sorted(variants.items())
            if figure in v.get("figures", [])}
