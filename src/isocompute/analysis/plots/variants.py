"""Figures of the recipe variants, from their curve table (analysis.inputs.variants): the
regularisation ablation (paper Fig. 3), the learning-rate anchor sweep and scaling
rules (Fig. 4) and the decoupled baseline (appendix), each with one line per
variant run against training steps. `plot_variants` draws those the config's
variants ask for.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns

from matplotlib.ticker import MaxNLocator

from isocompute.analysis.inputs.variants import figure_members
from isocompute.plotting import BP, FORMATS, Margins, _panels, _save, _styled, _subplots

SPLIT_TITLES = {"easy": "Easy", "hard": "Hard", "very_easy": "Very Easy", "extremely_hard": "Extremely Hard",
                "dual": "Dual mix", "tri": "Tri mix"}
ROW_LABELS = {"entropy": "token entropy", "kl": "KL to the base model", "train_reward": "training reward"}


def _runs(curves: pd.DataFrame, members: dict) -> pd.DataFrame:
    """The runs of a figure's variants, on the splits where at least two of them ran (a
    variant drawn in several figures may have cells that only another figure compares)."""
    runs = curves[curves["variant"].isin(list(members))]
    compared = runs.groupby("split")["variant"].nunique()
    compared = compared[compared >= 2].index if (compared >= 2).any() else compared.index
    return runs[runs["split"].isin(compared)]


def _steps_axis(ax) -> None:
    ax.set_xlabel("training step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _palette(members: dict) -> dict:
    return dict(zip(members, sns.color_palette("tab10", max(len(members), 1))))


def _cells_title(runs: pd.DataFrame, split: str) -> str:
    cells = runs[["B_p", "n"]].drop_duplicates()
    title = SPLIT_TITLES.get(split, split)
    if len(cells) == 1:
        title += f", {BP} = {int(cells['B_p'].iloc[0])}, n = {int(cells['n'].iloc[0])}"
    return title


def _line(ax, run: pd.DataFrame, y: str, x: str, **style) -> bool:
    d = run[[x, y]].dropna()
    if d.empty:
        return False
    ax.plot(d[x].to_numpy(dtype=float), d[y].to_numpy(dtype=float), marker="o" if "@" in y else None,
            ms=2.5, lw=1.3, **style)
    return True


def _run_label(label: str, run: pd.DataFrame, several_cells: bool, with_lr: bool = False) -> str:
    if several_cells:
        label = f"{label} ({BP}={int(run['B_p'].iloc[0])}, n={int(run['n'].iloc[0])})"
    lr = run["lr"].max() if "lr" in run else np.nan
    if with_lr and np.isfinite(lr):
        label = f"{label}, peak lr {lr:.2g}"
    return label


def _draw_runs(ax, runs: pd.DataFrame, members: dict, palette: dict, y: str, x: str = "step",
               with_lr: bool = False) -> None:
    """One line per run of `runs` (a variant's runs at several cells share its colour)."""
    several = runs.groupby("variant")[["B_p", "n"]].apply(lambda d: len(d.drop_duplicates()) > 1).any()
    order = runs.groupby(["variant", "B_p", "n"], sort=False)
    if with_lr:  # learning-rate figures list their lines by peak lr
        order = sorted(order, key=lambda kv: float(kv[1]["lr"].max()) if kv[1]["lr"].notna().any() else 0.0)
    for (variant, _, _), run in order:
        _line(ax, run, y, x, color=palette[variant], label=_run_label(members[variant], run, several, with_lr))


@_styled
def plot_regularization(curves: pd.DataFrame, members: dict, path_stem, *, metric: str = "avg@4",
                        formats=FORMATS) -> list[Path]:
    """Fig. 3: validation reward, token entropy and KL to the base model against steps,
    one column per split, one line per variant (KL only where a run has a KL term)."""
    runs = _runs(curves, members)
    splits = list(dict.fromkeys(runs["split"]))
    rows = [metric, "entropy", "kl"]
    fig, axes = _subplots(len(rows), len(splits), panel=(3.6, 2.2), margins=Margins(hgap=0.45))
    palette = _palette(members)
    for j, split in enumerate(splits):
        in_split = runs[runs["split"] == split]
        for i, y in enumerate(rows):
            ax = axes[i, j]
            _draw_runs(ax, in_split, members, palette, y)
            ax.set_ylabel(f"validation {metric}" if y == metric else ROW_LABELS[y])
            if i == 0:
                ax.set_title(_cells_title(in_split, split))
            if i == len(rows) - 1:
                _steps_axis(ax)
    axes[0, len(splits) - 1].legend(fontsize=7, loc="best")
    return _save(fig, path_stem, formats)


@_styled
def plot_learning_rates(curves: pd.DataFrame, anchor: dict, scaling: dict, path_stem, *,
                        metric: str = "avg@4", formats=FORMATS) -> list[Path]:
    """Fig. 4: validation reward against steps for the learning-rate anchor sweep (left) and
    for the scaling rules (right), one panel per split of each."""
    panels = [(title, members, split) for title, members in (("lr anchor", anchor), ("lr scaling", scaling))
              for split in dict.fromkeys(_runs(curves, members)["split"])]
    fig, axes = _panels(len(panels), panel=(3.8, 2.8), ncols=max(2, len(panels) // 2))
    for ax, (title, members, split) in zip(axes, panels):
        runs = _runs(curves, members)
        runs = runs[runs["split"] == split]
        _draw_runs(ax, runs, members, _palette(members), metric, with_lr=True)
        B = runs["B_p"] * runs["n"]
        b_text = f", B = {int(B.iloc[0])}" if B.nunique() == 1 else ""
        ax.set_title(f"{title}: {SPLIT_TITLES.get(split, split)}{b_text}")
        _steps_axis(ax)
        ax.set_ylabel(f"validation {metric}")
        ax.legend(fontsize=7, loc="best")
    return _save(fig, path_stem, formats)


@_styled
def plot_decoupled_baseline(curves: pd.DataFrame, members: dict, path_stem, *, metric: str = "avg@4",
                            formats=FORMATS) -> list[Path]:
    """Appendix: validation reward against steps and against sampled rollouts (compute counts all
    n_est rollouts) for baseline vs gradient rollouts per problem, one row per split."""
    runs = _runs(curves, members)
    splits = list(dict.fromkeys(runs["split"]))
    fig, axes = _subplots(len(splits), 2, panel=(3.8, 2.8))
    palette = _palette(members)
    for i, split in enumerate(splits):
        in_split = runs[runs["split"] == split]
        for j, x in enumerate(("step", "compute")):
            ax = axes[i, j]
            _draw_runs(ax, in_split, members, palette, metric, x=x)
            if x == "step":
                _steps_axis(ax)
            else:
                ax.set_xlabel("compute C (rollouts sampled)")
            ax.set_ylabel(f"validation {metric}")
            ax.set_title(SPLIT_TITLES.get(split, split) + (f", {BP} = {int(in_split['B_p'].iloc[0])}"
                                                           if in_split["B_p"].nunique() == 1 else ""))
        axes[i, 0].legend(fontsize=7, loc="best")
    return _save(fig, path_stem, formats)


def plot_variants(curves: pd.DataFrame, variants: dict, fig_dir, *, metric: str = "avg@4",
                  formats=FORMATS) -> list[Path]:
    """Every figure the config's variants (their `figures` lists) ask for, into `fig_dir`."""
    fig_dir = Path(fig_dir)
    members = {name: figure_members(variants, name) for name in
               ("regularization", "lr_anchor", "lr_scaling", "decoupled_baseline")}
    present = set(curves["variant"])
    members = {k: {v: label for v, label in m.items() if v in present} for k, m in members.items()}
    paths: list[Path] = []
    if members["regularization"]:
        paths += plot_regularization(curves, members["regularization"], fig_dir / "fig3_regularization",
                                     metric=metric, formats=formats)
    if members["lr_anchor"] or members["lr_scaling"]:
        paths += plot_learning_rates(curves, members["lr_anchor"], members["lr_scaling"],
                                     fig_dir / "fig4_learning_rate", metric=metric, formats=formats)
    if members["decoupled_baseline"]:
        paths += plot_decoupled_baseline(curves, members["decoupled_baseline"],
                                         fig_dir / "appendix_decoupled_baseline", metric=metric, formats=formats)
    return paths
