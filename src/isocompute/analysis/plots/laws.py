"""Figures of the compute-optimal n: the n*(C) law for one group (paper Fig. 7)
and for all groups (appendix), n*(M) and B_p*(M) at fixed batch (Fig. 9),
and the joint frontier over all cells; with bootstrap bands of the running
average of log2 n* (and of the frontier reward) where the tables carry them.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from isocompute.analysis.frontier.claims import law_established
from isocompute.analysis.frontier.nstar import GOOD_LAW, LAW_CONSTANT, law_points, n_star_sigmoid
from isocompute.plotting import (BP, FORMATS, GROUP_COLORS, PAPER_BATCH_SIZES, Margins, _band, _log2_x,
                                             _n_palette, _pow2_y, _save, _styled, _subplots)


LOG2_10 = float(np.log2(10.0))   # the law's c0 is log10 of compute; the axes are log2


def _law_text(law, x_name) -> str:
    """2^U and the law's midpoint in the axis's units (c0 is log10 of `x_name`)."""
    if law.get("status") == LAW_CONSTANT:   # one n* throughout: no midpoint to state
        return f"n* = {2 ** law['U']:.0f} throughout"
    C = {"compute": "C\u2080", "tokens": "C\u2080", "M": "M\u2080"}.get(x_name, "c\u2080")
    return f"2^U = {2 ** law['U']:.0f}, {C} = 2^{law['c0'] * LOG2_10:.1f}"


def _law_band(ax, draws, log10_x, color, label):
    """The 95% band of the law over the bootstrap replicates' fits (`draws`: columns L, U,
    k, c0, status), on a fine grid over `log10_x`: smooth, as each draw is a sigmoid."""
    d = draws[draws["status"].isin(GOOD_LAW)] if draws is not None else None
    if d is None or len(d) < 2 or not np.isfinite(log10_x).any():
        return False
    xs = np.linspace(np.nanmin(log10_x), np.nanmax(log10_x), 200)
    curves = n_star_sigmoid(xs[None, :], *(d[c].to_numpy(dtype=float)[:, None] for c in ("L", "U", "k", "c0")))
    lo, hi = np.nanpercentile(curves, [2.5, 97.5], axis=0)
    ax.fill_between(10 ** xs, lo, hi, color=color, alpha=0.25, linewidth=0, label=label, zorder=1)
    return True


def _draw_law(ax, frontier, law, x_name, draws=None, color="tab:red", legend=True):
    """The running average of log2 n* (colour: frontier reward), its bootstrap band
    where present (edges drawn as their envelope over `window` points: n* is discrete),
    the fitted law and, with `draws` (n_star_fit_draws of the group), its band."""
    pts = frontier.assign(log10_x=np.log10(frontier[x_name].to_numpy(dtype=float)))
    if "log2_n_star_avg" not in pts.columns:
        pts = law_points(frontier, x=x_name)
    _band(ax, pts, x_name, "log2_n_star_avg", color="0.55", label="running average: 95% bootstrap band",
          smooth=5, alpha=0.3)
    sc = ax.scatter(pts[x_name], pts["log2_n_star_avg"], c=pts["reward"], cmap="viridis", s=10,
                    linewidths=0, zorder=2)
    ax.scatter([], [], color=matplotlib.colormaps["viridis"](0.5), s=10, label="running average of n* (colour: reward)")
    if law is not None and law.get("status") in GOOD_LAW and not law_established(law):
        # The bands cannot tell the direction (`claims`): no law is drawn, and the figure says so.
        ax.text(0.03, 0.95, f"n*(C) {law['claim']}: no law drawn", transform=ax.transAxes, va="top", fontsize=7)
    elif law is not None and law.get("status") in GOOD_LAW:
        fitted = _fitted_range(pts)
        xs = np.linspace(np.nanmin(fitted), np.nanmax(fitted), 200)
        _law_band(ax, draws, fitted, color, "law: 95% of bootstrap fits")
        ax.plot(10 ** xs, n_star_sigmoid(xs, law["L"], law["U"], law["k"], law["c0"]), color=color, lw=1.5,
                label="sigmoid fit", zorder=3)
        text = _law_text(law, x_name)
        if np.isfinite(law.get("U_lo", np.nan)):
            text += f"\nU in [{law['U_lo']:.2f}, {law['U_hi']:.2f}]"
        ax.text(0.03, 0.95, text, transform=ax.transAxes, va="top", fontsize=7)
    _log2_x(ax, x_name)
    _pow2_y(ax, "n* (running average)")
    if legend:   # below the panel: inside, it covers points or band
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)
    return sc


def _fitted_range(pts) -> np.ndarray:
    """log10 x of the points the law was fitted to (a running average exists there): the
    law and its band are drawn over them, not extrapolated to the whole grid."""
    x = pts["log10_x"].to_numpy(dtype=float)
    y = pts["log2_n_star_avg"].to_numpy(dtype=float)
    return x[np.isfinite(y)] if np.isfinite(y).any() else x


def _group_draws(draws, by, key):
    if draws is None or not len(draws):
        return None
    return draws if by is None or by not in draws.columns else draws[draws[by] == key]


@_styled
def plot_n_star_law(frontier: pd.DataFrame, laws: pd.DataFrame, path_stem, *, by: str | None = "B_p",
                    key=None, draws: pd.DataFrame | None = None, formats=FORMATS) -> list[Path]:
    """Fig. 7: running average of log2 n*(C) (colour: frontier reward) and the
    sigmoid law for one group (`key`; default the smallest, as the paper's B_p = 32), with
    the law's band from the bootstrap `draws` (n_star_fit_draws) where given."""
    if by is not None:
        key = sorted(frontier[by].unique())[0] if key is None else key
        frontier, laws = frontier[frontier[by] == key], laws[laws[by] == key]
    fig, ax = _subplots(panel=(4.6, 3.2), margins=Margins(right=0.1, bottom=1.0))
    ax = ax[0, 0]
    sc = _draw_law(ax, frontier, laws.iloc[0].to_dict() if len(laws) else None, "compute",
                   draws=_group_draws(draws, by, key))
    fig.colorbar(sc, ax=ax, label="frontier reward")
    ax.set_title("Compute-optimal n, all cells" if by is None else
                 f"Compute-optimal n, {BP if by == 'B_p' else by} = {key}")
    return _save(fig, path_stem, formats)


@_styled
def plot_n_star_law_grid(frontier: pd.DataFrame, laws: pd.DataFrame, path_stem, *, by: str = "B_p",
                         x: str = "compute", draws: pd.DataFrame | None = None, formats=FORMATS) -> list[Path]:
    """Appendix: Fig. 7 for every group, one panel each (shared n* axis), with
    the bootstrap band of the running average and the law's interval of U."""
    keys = sorted(frontier[by].unique())
    fig, axes = _subplots(1, max(len(keys), 1), panel=(3.6, 2.9),
                          margins=Margins(right=1.0, bottom=1.0), sharey=True)
    sc = None
    for ax, key in zip(axes[0], keys):
        f, law = frontier[frontier[by] == key], laws[laws[by] == key]
        sc = _draw_law(ax, f, law.iloc[0].to_dict() if len(law) else None, x, draws=_group_draws(draws, by, key),
                       legend=key == keys[0])
        ax.set_title(f"{BP if by == 'B_p' else by} = {key}")
    if sc is not None:
        fig.colorbar(sc, ax=list(axes[0]), label="frontier reward", fraction=0.03, pad=0.01)
    return _save(fig, path_stem, formats)


@_styled
def plot_n_star_laws(frontier: pd.DataFrame, laws: pd.DataFrame, path_stem, *, by: str = "B_p",
                     x: str = "compute", draws: pd.DataFrame | None = None, formats=FORMATS) -> list[Path]:
    """Appendix: the n* laws of every group in one panel (colour: group), each group's
    running average with its bootstrap band where the table has one, and each
    established law with its band from the bootstrap `draws`."""
    fig, ax = _subplots(panel=(5.0, 3.4), margins=Margins(bottom=1.25))
    ax = ax[0, 0]
    keys = sorted(frontier[by].unique())
    colors = dict(zip(keys, GROUP_COLORS))
    name = BP if by == "B_p" else by
    banded = False
    for key in keys:
        f, law = frontier[frontier[by] == key], laws[laws[by] == key]
        banded |= _band(ax, f, x, "log2_n_star_avg", color=colors[key], smooth=5, alpha=0.15)
        ax.scatter(f[x], f["log2_n_star_avg"], s=5, color=colors[key], alpha=0.7, linewidths=0, rasterized=True,
                   label=f"{name} = {key}")
        xs = _fitted_range(f.assign(log10_x=np.log10(f[x].to_numpy(dtype=float))))
        if len(law) and law.iloc[0]["status"] in GOOD_LAW and law_established(law.iloc[0]):
            p = law.iloc[0]
            _law_band(ax, _group_draws(draws, by, key), xs, colors[key], None)
            fine = np.linspace(np.nanmin(xs), np.nanmax(xs), 200)
            ax.plot(10 ** fine, n_star_sigmoid(fine, p["L"], p["U"], p["k"], p["c0"]), color=colors[key], lw=1.4,
                    label=f"{name} = {key}: law, {_law_text(p, x)}")
    _log2_x(ax, x)
    _pow2_y(ax, "n* (running average)")
    # a proxy: the bands take their group's colour
    ax.fill_between([], [], [], color="0.5", alpha=0.3, linewidth=0,
                    label="95% bootstrap bands" if banded else "no bootstrap bands (these fits are not resampled)")
    if not any(law_established(p) for _, p in laws.iterrows() if p["status"] in GOOD_LAW):
        ax.text(0.02, 0.97, "no law established: none drawn", transform=ax.transAxes, va="top", fontsize=7)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncols=2, frameon=False)
    ax.set_title("Sigmoid laws of n*(C)")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Fig 9

@_styled
def plot_fixed_batch(frontier_fb: pd.DataFrame, laws_fb: pd.DataFrame, path_stem, *, batch_sizes=None,
                     formats=FORMATS) -> list[Path]:
    """Fig. 9: under a fixed rollout batch B, n*(M) and B_p*(M) = B / n*(M).

    `batch_sizes` default: the paper's (4096, 8192, 16384) where present, else
    the three middle batch sizes of the table."""
    fig, axes = _subplots(1, 2, panel=(4.4, 3.2), margins=Margins(bottom=0.85))
    ax_n, ax_b = axes[0]
    present = sorted(frontier_fb["B"].unique())
    if batch_sizes is None:
        batch_sizes = [b for b in PAPER_BATCH_SIZES if b in present] or \
            present[max(0, (len(present) - 3) // 2):][:3]
    Bs = [b for b in batch_sizes if b in present]
    colors = dict(zip(Bs, GROUP_COLORS))
    shown = frontier_fb[frontier_fb["B"].isin(Bs)]
    point_colors = [colors[B] for B in shown["B"]]
    y_all = shown["log2_n_star_avg"].to_numpy(dtype=float)
    ax_n.scatter(shown["M"], y_all, s=6, c=point_colors, alpha=0.6, linewidths=0, rasterized=True)
    ax_b.scatter(shown["M"], np.log2(shown["B"].to_numpy(dtype=float)) - y_all, s=6, c=point_colors,
                 alpha=0.6, linewidths=0, rasterized=True)
    for B in Bs:
        _band(ax_n, frontier_fb[frontier_fb["B"] == B], "M", "log2_n_star_avg", color=colors[B], smooth=5)
        M = frontier_fb.loc[frontier_fb["B"] == B, "M"].to_numpy(dtype=float)
        law = laws_fb[laws_fb["B"] == B]
        if len(law) and law.iloc[0]["status"] in GOOD_LAW:
            p = law.iloc[0]
            fit = n_star_sigmoid(np.log10(M), p["L"], p["U"], p["k"], p["c0"])
            ax_n.plot(M, fit, color=colors[B], lw=1.4, label=f"B = {B}: law")
            ax_b.plot(M, np.log2(B) - fit, color=colors[B], lw=1.4, label=f"B = {B}: law")
    for ax, label in ((ax_n, "n*(M)"), (ax_b, f"{BP}*(M)")):
        _log2_x(ax, "M")
        _pow2_y(ax, label)
    if Bs:   # one legend for both panels, below them: inside, it covers points
        ax_n.scatter([], [], s=6, color="0.4", label="running average of n* (colour: B)")
        fig.legend(handles=ax_n.get_legend_handles_labels()[0], fontsize=7, ncols=len(Bs) + 1,
                   loc="lower center", bbox_to_anchor=(0.5, 0.0), frameon=False)
    ax_n.set_title("Optimal rollouts per problem, fixed B")
    ax_b.set_title("Optimal problems per step, fixed B")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Q3

@_styled
def plot_joint(frontier_joint: pd.DataFrame, laws_joint: pd.DataFrame, path_stem, *, formats=FORMATS) -> list[Path]:
    """All cells jointly: frontier reward coloured by n*, and the n* law."""
    fig, axes = _subplots(1, 2, panel=(4.4, 3.2), margins=Margins(bottom=1.0))
    ax_r, ax_n = axes[0]
    f = frontier_joint[np.isfinite(frontier_joint["n_star"].to_numpy(dtype=float))]
    palette = _n_palette(f["n_star"])
    _band(ax_r, frontier_joint, "compute", "reward")
    ax_r.scatter(f["compute"], f["reward"], c=[palette[int(n)] for n in f["n_star"]], s=12,
                 edgecolors="black", linewidths=0.3)
    for n, color in palette.items():
        ax_r.scatter([], [], color=color, label=f"n*={n}")
    ax_r.legend(fontsize=6, ncols=2, loc="lower right")
    _log2_x(ax_r)
    ax_r.set_ylabel("frontier reward")
    ax_r.set_title(f"Joint frontier over all ({BP}, n)")
    _draw_law(ax_n, frontier_joint, laws_joint.iloc[0].to_dict() if len(laws_joint) else None, "compute")
    ax_n.set_title("n*(C), all cells")
    return _save(fig, path_stem, formats)
