"""Cross-evaluation (config eval.extra_sets; paper Fig. 14 and the AIME24 curve): each
run's table on its own split's validation set and on every extra evaluation set, in one
frame, and the curves the figures draw. Pure functions over frames; the `cross_eval`
rule (rules/evaluate.smk) reads and writes the files.
"""

from __future__ import annotations

import pandas as pd


def own_set_name(split: str, extra_sets: list[dict]) -> str:
    """The label of a run's own validation set: the name of an extra set of that split
    (so that a split's column holds its own runs too), else the split's name."""
    for spec in extra_sets:
        if spec.get("split") == split:
            return spec["name"]
    return split


def cross_eval_table(own: pd.DataFrame, sets: pd.DataFrame, extra_sets: list[dict]) -> pd.DataFrame:
    """Every run's evaluations on every set: `own` (the score rule's tables, concatenated)
    gets its set's label in `eval_set`, `sets` (score_eval_set's) has one; column
    `out_of_domain` marks a set given by path."""
    own = own.assign(eval_set=[own_set_name(s, extra_sets) for s in own["split"]])
    table = pd.concat([own, sets], ignore_index=True)
    by_path = {s["name"] for s in extra_sets if "path" in s}
    return table.assign(out_of_domain=table["eval_set"].isin(by_path))


def figure_bp(table: pd.DataFrame) -> dict[str, int]:
    """Per training split, the B_p its figures draw: the one with the most values of n
    (ties: the smallest; the paper's cross-evaluation fixes one B_p)."""
    out = {}
    for split, runs in table.groupby("split"):
        counts = runs.groupby("B_p")["n"].nunique()
        out[split] = int(counts[counts == counts.max()].index.min())
    return out


def cross_eval_curves(table: pd.DataFrame, metric: str, *, extremes: bool = True) -> pd.DataFrame:
    """The metric against compute, averaged over seed replicates, per (training split,
    evaluation set, n) at each split's figure_bp; with `extremes`, only its smallest and
    largest n (Fig. 14's small vs large n)."""
    bps = figure_bp(table)
    rows = table[[bps[s] == b for s, b in zip(table["split"], table["B_p"])]]
    if extremes:
        ns = rows.groupby("split")["n"].agg(["min", "max"])
        rows = rows[[n in (ns.loc[s, "min"], ns.loc[s, "max"]) for s, n in zip(rows["split"], rows["n"])]]
    keys = ["split", "eval_set", "out_of_domain", "B_p", "n", "compute"]
    return rows.groupby(keys, as_index=False)[metric].mean().sort_values(keys, ignore_index=True)
