"""Figures of reward against compute: the record-breaking points (paper Fig. 5),
the fitted curves and their frontier coloured by n* (Fig. 6, and one panel
per B_p in the appendix), with the bootstrap band of the frontier where the
tables carry one.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import OK, sigmoid_reward
from isocompute.analysis.frontier.envelope import run_curves
from isocompute.plotting import (BP, FORMATS, _band, _log2_x, _n_palette, _panels, _save, _styled,
                                             _subplots)


class View(NamedTuple):
    """What a reward-vs-compute panel shows: `metric` against `x` (compute or tokens), each
    fitted curve over the whole grid (`extrapolate`) or only over its run's evaluations, as
    the frontier uses it."""

    metric: str = "avg@4"
    x: str = "compute"
    extrapolate: bool = True


def _draw_frontier(ax, evals, fits, front, view: View, palette, legend=True):
    """Raw points and fitted curve per n, and the frontier coloured by n*.

    One collection per kind of mark (not one per run): drawing time is what
    the benchmark spends most on. `legend`: False for none, True for this panel's n, or the
    n to list (a figure of panels lists all its n once).
    """
    metric, x, extrapolate = view
    grid = front[x].to_numpy(dtype=float)
    if grid.size == 0:
        return
    fits = fits.sort_values("n")
    raw = evals[evals[x] > 0].merge(fits[["B_p", "n"]], on=["B_p", "n"])
    ax.scatter(raw[x], raw[metric], s=4, c=[palette.get(int(n), "grey") for n in raw["n"]], alpha=0.25,
               linewidths=0, rasterized=True)
    fitted = run_curves(fits, grid, extrapolate=extrapolate)
    ok = np.isfinite(fitted).any(axis=1)
    lines = [np.column_stack([grid, f]) for f in fitted[ok]]
    colors = [palette.get(int(n), "grey") for n in fits["n"].to_numpy()[ok]]
    ax.add_collection(LineCollection(lines, colors=colors, linewidths=1.0))
    banded = _band(ax, front, x, "reward")
    good = np.isfinite(front["n_star"].to_numpy(dtype=float))
    # Where the band cannot tell n* (`claims`), the frontier is drawn hollow: no colour claims an n.
    vague = good & ~front["determined"].to_numpy(dtype=bool) if "determined" in front.columns else np.zeros_like(good)
    told = good & ~vague
    ax.scatter(front.loc[told, x], front.loc[told, "reward"], s=14, marker="o", zorder=3,
               c=[palette.get(int(n), "black") for n in front.loc[told, "n_star"]],
               edgecolors="black", linewidths=0.3)
    if vague.any():
        ax.scatter(front.loc[vague, x], front.loc[vague, "reward"], s=14, marker="o", zorder=3, facecolors="white",
                   edgecolors="0.3", linewidths=0.5)
    _log2_x(ax, x)
    ax.autoscale_view()
    ax.set_ylabel(f"Validation reward ({metric})")
    if legend is not False:
        ns = fits["n"].to_numpy()[ok] if legend is True else sorted({int(n) for n in legend})
        handles = [Line2D([], [], color=palette.get(int(n), "grey"), lw=1.2, label=f"n={int(n)}") for n in ns]
        handles.append(Line2D([], [], color="white", marker="o", markeredgecolor="black", markersize=4,
                              label="frontier (colour: n*)"))
        if vague.any():
            handles.append(Line2D([], [], color="white", marker="o", markerfacecolor="white", markeredgecolor="0.3",
                                  markersize=4, label="frontier, n* undetermined"))
        if banded:
            handles.append(Line2D([], [], color="0.5", alpha=0.4, lw=5, label="frontier 95% band"))
        ax.legend(handles=handles, fontsize=6, ncols=2, loc="lower right")


def _label_inner_y(axes):
    """Panels share y, not x: every panel keeps its compute ticks and label (a panel with
    none below it too); only the y labels of the inner columns go."""
    for ax in axes:
        if not ax.get_subplotspec().is_first_col():
            ax.set_ylabel("")
            ax.tick_params(labelleft=False)


# ------------------------------------------------------------------ Fig 5 and 6

@_styled
def plot_record_points(results: dict, B_p: int, path_stem, *, settings: AnalysisSettings,
                       formats=FORMATS) -> list[Path]:
    """Fig. 5: all evaluation points of the runs at `B_p` (grey) and their pooled
    record-breaking points (orange; the analysis's record_points_pooled, labelled as the
    `settings`' method draws them). With record_fit_pooled (the paper's method), the sigmoid
    through the records; else the frontier of the fitted curves (the Q1 table), which is what
    the noise method fits."""
    evals, records, metric = results["evals"], results.get("record_points_pooled", pd.DataFrame()), settings.metric
    record_fit, frontier = results.get("record_fit_pooled"), results.get("frontier")
    label = settings.strategy.record_label.format(z=settings.record_z)
    pool = evals[evals["B_p"] == B_p]
    rec = records[records["B_p"] == B_p] if "B_p" in records.columns else records
    value = "smoothed" if "smoothed" in rec.columns else metric
    fig, ax = _subplots(panel=(4.2, 3.0))
    ax = ax[0, 0]
    pos = pool[pool["compute"] > 0]
    ax.scatter(pos["compute"], pos[metric], s=5, color="0.65", alpha=0.5, linewidths=0, rasterized=True,
               label="evaluation points")
    if len(rec):
        r = rec[rec["compute"] > 0]
        ax.scatter(r["compute"], r[value], s=16, color="tab:orange", edgecolors="black", linewidths=0.3,
                   zorder=3, label=label)
    fit = None if record_fit is None or "B_p" not in record_fit.columns else record_fit[record_fit["B_p"] == B_p]
    if fit is not None and len(fit):
        fit = fit.iloc[0]
        if fit["status"] == OK and len(pos):
            c = np.geomspace(pos["compute"].min(), pos["compute"].max(), 200)
            ax.plot(c, sigmoid_reward(c, fit["R0"], fit["A"], fit["B"], fit["C_mid"]), "--", color="black", lw=1.2,
                    label="sigmoid fit")
    elif frontier is not None:
        f = frontier[frontier["B_p"] == B_p]
        _band(ax, f, "compute", "reward")
        ax.plot(f["compute"], f["reward"], "--", color="black", lw=1.2, label="frontier of fitted curves")
    _log2_x(ax)
    ax.set_ylabel(f"Validation reward ({metric})")
    ax.set_title(f"Record-breaking points, {BP} = {B_p}")
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path_stem, formats)


@_styled
def plot_frontier(evals: pd.DataFrame, fits: pd.DataFrame, frontier: pd.DataFrame, B_p: int, path_stem, *,
                  view: View = View(), formats=FORMATS) -> list[Path]:
    """Fig. 6: reward vs compute per n at fixed B_p, fitted curves, frontier coloured by n*."""
    fig, ax = _subplots(panel=(4.8, 3.4))
    ax = ax[0, 0]
    palette = _n_palette(fits["n"])
    _draw_frontier(ax, evals, fits[fits["B_p"] == B_p], frontier[frontier["B_p"] == B_p], view._replace(x="compute"),
                   palette)
    ax.set_title(f"Reward vs compute, {BP} = {B_p}")
    return _save(fig, path_stem, formats)


@_styled
def plot_frontiers_grid(points: pd.DataFrame, fits: pd.DataFrame, frontier: pd.DataFrame, path_stem, *,
                        view: View = View(), formats=FORMATS) -> list[Path]:
    """Appendix: the frontier for every fixed B_p, one panel each (x: compute or
    tokens). `points` are the marks behind the curves: the evaluation table, or
    (lighter to draw, as `plot_all` does) the record-breaking points."""
    groups = sorted(frontier["B_p"].unique())
    fig, axes = _panels(max(len(groups), 1), sharey=True)
    palette = _n_palette(fits["n"])
    for ax, B_p in zip(axes, groups):
        _draw_frontier(ax, points, fits[fits["B_p"] == B_p], frontier[frontier["B_p"] == B_p], view, palette,
                       legend=palette if B_p == groups[0] else False)
        ax.set_title(f"{BP} = {B_p}")
    _label_inner_y(axes)
    return _save(fig, path_stem, formats)


@_styled
def plot_frontiers_fixed_batch(points: pd.DataFrame, fits: pd.DataFrame, frontier_fb: pd.DataFrame, path_stem, *,
                               view: View = View(), formats=FORMATS) -> list[Path]:
    """Appendix: the frontier for every fixed rollout batch B = B_p * n, one panel
    each, against compute (= B * M at that B: the steps M scaled); each cell of
    the batch is one n, its B_p = B / n."""
    groups = sorted(frontier_fb["B"].unique())
    fig, axes = _panels(max(len(groups), 1), sharey=True)
    palette = _n_palette(fits["n"])
    batch = fits["B_p"] * fits["n"]
    for ax, B in zip(axes, groups):
        _draw_frontier(ax, points, fits[batch == B], frontier_fb[frontier_fb["B"] == B], view._replace(x="compute"),
                       palette, legend=fits.loc[batch.isin(groups), "n"] if B == groups[0] else False)
        ax.set_title(f"B = {int(B)} (M = C / B)")
    _label_inner_y(axes)
    return _save(fig, path_stem, formats)
