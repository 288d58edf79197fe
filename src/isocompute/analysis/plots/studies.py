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

from isocompute.analysis.fits.sigmoid import USABLE
from isocompute.analysis.frontier.envelope import run_curves, study_grid
from isocompute.plotting import (BP, FORMATS, GROUP_COLORS, Margins, _log2_x, _n_palette, _panels, _pow2_label,
                                             _pow2_y, _save, _styled, _subplots, n_color)


@_styled
def plot_metric_optima(optima: pd.DataFrame, path_stem, *, formats=FORMATS) -> list[Path]:
    """Fig. 8: per B_p, the n maximising best@4 and the n maximising worst@4."""
    fig, ax = _subplots(panel=(4.6, 3.0), margins=Margins(right=1.1))
    ax = ax[0, 0]
    data = optima.assign(log2_n=np.log2(optima["n_opt"].astype(float)), B_p=optima["B_p"].astype(str))
    sns.barplot(data=data, x="B_p", y="log2_n", hue="metric", ax=ax, palette="Set2")
    # beside the panel: inside, it covers the bars
    ax.legend(title="metric", fontsize=7, title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0)
    _pow2_y(ax, "optimal n")
    ax.set_xlabel(f"{BP} (problems per step)")
    ax.set_title("Metric-specific optimal n at the largest common compute")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Fig 10

@_styled
def plot_sensitivity(sens: pd.DataFrame, path_stem, *, fits: pd.DataFrame | None = None, metric: str = "avg@4",
                     extrapolate: bool = True, formats=FORMATS) -> list[Path]:
    """Fig. 10: the metric against compute for each n at the smallest fixed B_p, and for
    each B_p at the fixed n with the most B_p (the runs' fitted curves, `fits`: as
    `sensitivity` compares them); and the range of the metric across n (each fixed B_p)
    and across B_p (each fixed n) against compute, with the table's values (`sens`,
    at the largest common compute) marked."""
    fig, axes = _subplots(1, 3, panel=(3.6, 2.8), margins=Margins(wgap=0.7))
    ax_n, ax_b, ax_r = axes[0]
    fits = fits[fits["status"].isin(USABLE)] if fits is not None else None
    grid = study_grid(fits, 200) if fits is not None and len(fits) else None
    if grid is not None:
        curves = pd.DataFrame(run_curves(fits, grid, extrapolate=extrapolate).T,
                              columns=pd.MultiIndex.from_frame(fits[["B_p", "n"]].astype(int)))
        B_p0 = min(fits["B_p"].astype(int))
        counts = fits.groupby("n")["B_p"].nunique()
        n0 = int(counts[counts == counts.max()].index.min())
        for n in sorted(curves.xs(B_p0, axis=1, level="B_p").columns):
            ax_n.plot(grid, curves[(B_p0, n)], color=n_color(n), lw=1.3, label=f"n={n}")
        by_bp = curves.xs(n0, axis=1, level="n")
        for color, B_p in zip(GROUP_COLORS, sorted(by_bp.columns)):
            ax_b.plot(grid, by_bp[B_p], color=color, lw=1.3, label=f"{BP} = {B_p}")
        for level, other, color, style in (("B_p", "n", "tab:blue", "-"), ("n", "B_p", "tab:green", "--")):
            for value in sorted(set(curves.columns.get_level_values(level))):
                group = curves.xs(value, axis=1, level=level)
                if group.shape[1] < 2:
                    continue
                spread = (group.max(axis=1) - group.min(axis=1)).where(group.notna().all(axis=1))
                ax_r.plot(grid, spread, style, color=color, lw=1.0, alpha=0.8)
        ax_n.set_title(f"varying n at {BP} = {B_p0}")
        ax_b.set_title(f"varying {BP} at n = {n0}")
        for ax in (ax_n, ax_b):
            _log2_x(ax)
            ax.set_ylabel(f"Validation reward ({metric})")
            ax.legend(fontsize=6, loc="upper left")
    for varied, color, marker in (("n", "tab:blue", "o"), ("B_p", "tab:green", "s")):
        d = sens[sens["varied"] == varied]
        ax_r.scatter(d["compute"], d["range"], color=color, marker=marker, s=16, edgecolors="black", linewidths=0.3,
                     zorder=3)
    ax_r.plot([], [], "-o", color="tab:blue", ms=3, label=f"across n (a line per fixed {BP})")
    ax_r.plot([], [], "--s", color="tab:green", ms=3, label=f"across {BP} (a line per fixed n)")
    ax_r.scatter([], [], color="white", edgecolors="black", s=12, label="marks: at the largest common C")
    _log2_x(ax_r)
    ax_r.set_ylabel(f"range of {metric} at matched compute")
    ax_r.set_title("sensitivity to n vs to " + BP)
    ax_r.legend(fontsize=6, loc="upper left")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Fig 11

@_styled
def plot_interference(hist: pd.DataFrame, path_stem, *, ns=None, formats=FORMATS) -> list[Path]:
    """Fig. 11: training pass@1 histograms at matched compute, smallest vs largest
    n (or the given `ns`), one panel per B_p."""
    groups = sorted(hist["B_p"].unique())
    fig, axes = _panels(max(len(groups), 1), panel=(3.6, 2.7), top=0.6)
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
        ax.set_title(f"{BP} = {B_p}, C = {_compute_text(h['compute'].iloc[0])}")
        ax.legend(fontsize=7, loc="upper left")
    problems = sorted({int(c) for c in hist.groupby(["B_p", "n"])["count"].sum()})
    counted = f"{problems[0]:,} problems" if len(problems) == 1 else f"{problems[0]:,}-{problems[-1]:,} problems"
    fig.suptitle(f"Training pass@1 at matched compute: {counted} per histogram (the fixed probe's problems "
                 "where the runs have one, else the training batches')", fontsize=8, y=0.995)
    return _save(fig, path_stem, formats)


def _compute_text(C: float) -> str:
    """A compute value as 2^k where it is one (the axes' units), else with thousands separators."""
    k = np.log2(C) if C > 0 else np.nan
    return _pow2_label(C) if np.isfinite(k) and abs(k - round(k)) < 1e-9 else f"{C:,.0f}"


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
    fig, axes = _subplots(1, 3, panel=(3.4, 2.7), margins=Margins(wgap=0.7))
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
    fig, axes = _subplots(1, max(len(metrics), 1), panel=(4.0, 2.9), margins=Margins(wgap=0.75))
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
