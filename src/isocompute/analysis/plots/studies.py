"""Figures of the secondary studies: metric-specific optimal n (paper Fig. 8),
sensitivity to n vs B_p (Fig. 10), training pass@1 histograms at matched
compute (Fig. 11), the learning signal each n keeps (the mechanism) and the best@4 and
worst@4 frontiers (appendix, Fig. 20).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from isocompute.analysis.plots.style import (BP, FORMATS, _log2_x, _n_palette, _panels, _pow2_y, _save, _styled,
                                             _subplots)


@_styled
def plot_metric_optima(optima: pd.DataFrame, path_stem, *, formats=FORMATS) -> list[Path]:
    """Fig. 8: per B_p, the n maximising best@4 and the n maximising worst@4."""
    fig, ax = _subplots(panel=(4.6, 3.0))
    ax = ax[0, 0]
    data = optima.assign(log2_n=np.log2(optima["n_opt"].astype(float)), B_p=optima["B_p"].astype(str))
    sns.barplot(data=data, x="B_p", y="log2_n", hue="metric", ax=ax, palette="Set2")
    _pow2_y(ax, "optimal n")
    ax.set_xlabel(f"{BP} (problems per step)")
    ax.set_title("Metric-specific optimal n at the largest common compute")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Fig 10

@_styled
def plot_sensitivity(sens: pd.DataFrame, path_stem, *, metric: str = "avg@4", formats=FORMATS) -> list[Path]:
    """Fig. 10: range of the metric across n (fixed B_p) vs across B_p (fixed n)."""
    fig, axes = _subplots(1, 2, panel=(4.4, 3.0), sharey=True, wgap=0.3)
    ax_n, ax_b = axes[0]
    for ax, varied, fixed in ((ax_n, "n", "B_p"), (ax_b, "B_p", "n")):
        d = sens[sens["varied"] == varied].assign(fixed_value=lambda t: t["fixed_value"].astype(int).astype(str))
        if len(d):
            sns.barplot(data=d, x="fixed_value", y="range", ax=ax, color="tab:blue" if varied == "n" else "tab:green")
        ax.set_xlabel(f"fixed {BP}" if fixed == "B_p" else "fixed n")
        ax.set_title(f"varying {'n' if varied == 'n' else BP}")
    ax_n.set_ylabel(f"range of {metric} at matched compute")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Fig 11

@_styled
def plot_interference(hist: pd.DataFrame, path_stem, *, ns=None, formats=FORMATS) -> list[Path]:
    """Fig. 11: training pass@1 histograms at matched compute, smallest vs largest
    n (or the given `ns`), one panel per B_p."""
    groups = sorted(hist["B_p"].unique())
    fig, axes = _panels(max(len(groups), 1), panel=(3.6, 2.7))
    for ax, B_p in zip(axes, groups):
        h = hist[hist["B_p"] == B_p]
        show = sorted(h["n"].unique())
        show = [n for n in (ns or [show[0], show[-1]]) if n in set(show)]
        palette = _n_palette(show)
        for n in dict.fromkeys(show):
            d = h[h["n"] == n]
            ax.stairs(d["fraction"].to_numpy(), np.append(d["bin_lo"].to_numpy(), d["bin_hi"].iloc[-1]),
                      color=palette[int(n)], lw=1.5, label=f"n={n}")
        ax.set_xlabel("training pass@1")
        ax.set_ylabel("fraction of problems")
        ax.set_title(f"{BP} = {B_p}, C = {h['compute'].iloc[0]:.3g}")
        ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ the mechanism

MIN_GROUPS = 8


def pooled_mechanism(mech: pd.DataFrame) -> pd.DataFrame:
    """The mechanism table pooled over B_p: per (n, compute bin), shares weighted by groups."""
    cols = ["zero_variance", "all_correct", "all_wrong", "pass_rate_mean"]
    weighted = mech.assign(**{c: mech[c] * mech["groups"] for c in cols})
    out = weighted.groupby(["n", "compute"], sort=True)[cols + ["groups"]].sum().reset_index()
    return out.assign(**{c: out[c] / out["groups"] for c in cols})


@_styled
def plot_mechanism(mech: pd.DataFrame, path_stem, *, formats=FORMATS) -> list[Path]:
    """The learning signal each n keeps during training (pooled over B_p): the share of
    zero-variance groups (all rollouts of a problem correct or all wrong: no gradient), that
    share split into all-correct and all-wrong, and the mean training pass rate; compute
    bins holding fewer than MIN_GROUPS groups are not drawn."""
    pooled = pooled_mechanism(mech)
    pooled = pooled[pooled["groups"] >= MIN_GROUPS]  # a bin a run barely entered is noise
    palette = _n_palette(pooled["n"])
    fig, axes = _subplots(1, 3, panel=(3.4, 2.7), wgap=0.7)
    ax_zero, ax_split, ax_rate = axes[0]
    for n, g in pooled.groupby("n", sort=True):
        color = palette[int(n)]
        ax_zero.plot(g["compute"], g["zero_variance"], "-o", color=color, ms=2.5, lw=1.2, label=f"n={n}")
        ax_split.plot(g["compute"], g["all_correct"], "-", color=color, lw=1.2)
        ax_split.plot(g["compute"], g["all_wrong"], "--", color=color, lw=1.2)
        ax_rate.plot(g["compute"], g["pass_rate_mean"], "-", color=color, lw=1.2)
    for ax, label in ((ax_zero, "zero-variance groups (no signal)"), (ax_split, "share of groups"),
                      (ax_rate, "mean training pass rate")):
        _log2_x(ax)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(label)
    ax_zero.set_title("groups with no learning signal")
    ax_split.set_title("all correct (solid), all wrong (dashed)")
    ax_rate.set_title("training batches' pass rate")
    ax_zero.legend(fontsize=6, loc="best")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Fig 20 (appendix)

@_styled
def plot_metric_frontiers(fronts: pd.DataFrame, path_stem, *, formats=FORMATS) -> list[Path]:
    """Appendix (Fig. 20 on Extremely Hard): the frontier of best@4 and of worst@4,
    one panel each, a line per B_p with its points coloured by n*."""
    metrics = list(dict.fromkeys(fronts["metric"]))
    fig, axes = _subplots(1, max(len(metrics), 1), panel=(4.0, 2.9), wgap=0.75)
    palette = _n_palette(fronts["n_star"].dropna())
    styles = ("-", "--", ":", "-.")
    for ax, metric in zip(axes[0], metrics):
        f = fronts[fronts["metric"] == metric]
        for i, (B_p, g) in enumerate(f.groupby("B_p", sort=True)):
            ax.plot(g["compute"], g["reward"], styles[i % len(styles)], color="0.3", lw=1.0,
                    label=f"{BP} = {B_p}")
            good = g["n_star"].notna()
            ax.scatter(g.loc[good, "compute"], g.loc[good, "reward"], s=10, zorder=3, edgecolors="black",
                       linewidths=0.3, c=[palette[int(n)] for n in g.loc[good, "n_star"]])
        _log2_x(ax)
        ax.set_ylabel(f"Validation reward ({metric})")
        ax.set_title(f"{metric} frontier (colour: n*)")
    handles = [Line2D([], [], color=c, marker="o", lw=0, markeredgecolor="black", markersize=4, label=f"n*={n}")
               for n, c in palette.items()]
    axes[0, 0].legend(handles=handles + axes[0, 0].get_legend_handles_labels()[0], fontsize=6, ncols=2,
                      loc="lower right")
    return _save(fig, path_stem, formats)
