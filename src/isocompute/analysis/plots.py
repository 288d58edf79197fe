"""The paper's figures from the analysis tables (I/O at the edge only).

Each function takes tables and a path stem, draws one figure, saves it as
`<stem>.png` (Agg) and `<stem>.pdf`, and returns the paths. Compute axes are
log2-scaled as in the paper; n axes show powers of two. Figures are bare
matplotlib Figures, so nothing here touches pyplot's global state.
"""

from __future__ import annotations

import functools
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from isocompute.analysis.fits import fit_sigmoid, predict, sigmoid_reward
from isocompute.analysis.nstar import law_points, n_star_sigmoid
from isocompute.analysis.records import record_points

FORMATS = ("png", "pdf")
PAPER_BATCH_SIZES = (4096, 8192, 16384)   # the fixed-B values of the paper's Q2
DPI = 150
_LABELS = {"compute": "Compute C (rollouts)", "tokens": "Compute (generated tokens)", "M": "Steps M"}

# The house look, applied per figure (importing this module changes no global
# settings). A fixed title height: otherwise every draw measures all tick
# labels to place the titles.
STYLE = {**sns.axes_style("whitegrid"), **sns.plotting_context("paper", font_scale=0.95), "axes.titley": 1.0}


def _styled(plot):
    @functools.wraps(plot)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return plot(*args, **kwargs)
    return wrapper


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
BP = "B\u209a"   # B_p as plain text: mathtext layout is the slowest part of drawing


def _pow2_label(value, _pos=None) -> str:
    """2 to a power, written with Unicode superscripts (no mathtext)."""
    if value <= 0:
        return ""
    k = np.log2(value)
    if abs(k - round(k)) > 1e-6:
        return ""
    return "2" + str(int(round(k))).translate(_SUPERSCRIPT)


def _save(fig, path_stem, formats=FORMATS) -> list[Path]:
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        fig.savefig(path, dpi=DPI)
        paths.append(path)
    return paths


def _n_palette(ns) -> dict:
    ns = sorted({int(n) for n in ns if np.isfinite(n)})
    colors = sns.color_palette("viridis", max(len(ns), 1))
    return dict(zip(ns, colors))


def _log2_x(ax, label="compute"):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=8))
    ax.xaxis.set_major_formatter(FuncFormatter(_pow2_label))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(_LABELS.get(label, label))


def _pow2_y(ax, label="n*"):
    """y holds log2 n: ticks at whole powers, labelled with the n values."""
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{2 ** v:g}"))
    ax.set_ylabel(label)


def _subplots(nrows=1, ncols=1, panel=(4.0, 2.9), *, left=0.75, right=0.2, bottom=0.55, top=0.35,
              wgap=0.75, hgap=0.65, sharey=False):
    """Figure with fixed margins and gaps in inches. A layout engine
    (tight_layout) measures every text first and doubles the drawing time."""
    w, h = panel
    width = left + right + ncols * w + (ncols - 1) * wgap
    height = bottom + top + nrows * h + (nrows - 1) * hgap
    # A bare Figure (no pyplot): no global figure registry, PNG through Agg, PDF through the pdf backend.
    fig = Figure(figsize=(width, height))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=sharey)
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=wgap / w, hspace=hgap / h)
    return fig, axes


def _panels(count, panel=(4.0, 2.9), ncols=3, sharey=False):
    ncols = max(1, min(ncols, count))
    nrows = int(np.ceil(count / ncols))
    fig, axes = _subplots(nrows, ncols, panel, sharey=sharey, wgap=0.25 if sharey else 0.75)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:count])


def _draw_frontier(ax, evals, fits, front, metric, palette, x="compute", legend=True):
    """Raw points and fitted curve per n, and the frontier coloured by n*.

    One collection per kind of mark (not one per run): drawing time is what
    the benchmark spends most on.
    """
    grid = front[x].to_numpy(dtype=float)
    if grid.size == 0:
        return
    fits = fits.sort_values("n")
    raw = evals[evals[x] > 0].merge(fits[["B_p", "n"]], on=["B_p", "n"])
    ax.scatter(raw[x], raw[metric], s=4, c=[palette.get(int(n), "grey") for n in raw["n"]], alpha=0.25,
               linewidths=0, rasterized=True)
    fitted = predict(fits, grid)
    ok = np.isfinite(fitted).any(axis=1)
    lines = [np.column_stack([grid, f]) for f in fitted[ok]]
    colors = [palette.get(int(n), "grey") for n in fits["n"].to_numpy()[ok]]
    ax.add_collection(LineCollection(lines, colors=colors, linewidths=1.0))
    good = np.isfinite(front["n_star"].to_numpy(dtype=float))
    ax.scatter(front.loc[good, x], front.loc[good, "reward"], s=14, marker="o", zorder=3,
               c=[palette.get(int(n), "black") for n in front.loc[good, "n_star"]],
               edgecolors="black", linewidths=0.3)
    _log2_x(ax, x)
    ax.autoscale_view()
    ax.set_ylabel(f"Validation reward ({metric})")
    if legend:
        handles = [Line2D([], [], color=palette.get(int(n), "grey"), lw=1.2, label=f"n={int(n)}")
                   for n in fits["n"].to_numpy()[ok]]
        handles.append(Line2D([], [], color="white", marker="o", markeredgecolor="black", markersize=4,
                              label="frontier (colour: n*)"))
        ax.legend(handles=handles, fontsize=6, ncols=2, loc="lower right")


# ------------------------------------------------------------------ Fig 5 and 6

@_styled
def plot_record_points(evals: pd.DataFrame, B_p: int, path_stem, *, metric: str = "avg@4",
                       bin_width: float = 0.01, ema_alpha: float | None = None, formats=FORMATS) -> list[Path]:
    """Fig. 5: all evaluation points of the runs at `B_p` (grey), the pooled
    record-breaking points (orange) and the monotonic fit through them."""
    pool = evals[evals["B_p"] == B_p]
    rec = record_points(pool, metric, bin_width=bin_width, ema_alpha=ema_alpha)
    value = "smoothed" if "smoothed" in rec.columns else metric
    R0 = float(pool.loc[pool["step"] == 0, metric].mean()) if (pool["step"] == 0).any() else float(rec[value].iloc[0])
    fit = fit_sigmoid(rec["compute"], rec[value], R0)
    fig, ax = _subplots(panel=(4.2, 3.0))
    ax = ax[0, 0]
    pos = pool[pool["compute"] > 0]
    ax.scatter(pos["compute"], pos[metric], s=5, color="0.65", alpha=0.5, linewidths=0, rasterized=True,
               label="evaluation points")
    r = rec[rec["compute"] > 0]
    ax.scatter(r["compute"], r[value], s=16, color="tab:orange", edgecolors="black", linewidths=0.3,
               zorder=3, label="record-breaking points")
    if fit.status == "ok" and len(pos):
        c = np.geomspace(pos["compute"].min(), pos["compute"].max(), 200)
        ax.plot(c, sigmoid_reward(c, fit.R0, fit.A, fit.B, fit.C_mid), "--", color="black", lw=1.2,
                label="sigmoid fit")
    _log2_x(ax)
    ax.set_ylabel(f"Validation reward ({metric})")
    ax.set_title(f"Record-breaking points, {BP} = {B_p}")
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path_stem, formats)


@_styled
def plot_frontier(evals: pd.DataFrame, fits: pd.DataFrame, frontier: pd.DataFrame, B_p: int, path_stem, *,
                  metric: str = "avg@4", formats=FORMATS) -> list[Path]:
    """Fig. 6: reward vs compute per n at fixed B_p, fitted curves, frontier coloured by n*."""
    fig, ax = _subplots(panel=(4.8, 3.4))
    ax = ax[0, 0]
    palette = _n_palette(fits["n"])
    _draw_frontier(ax, evals, fits[fits["B_p"] == B_p], frontier[frontier["B_p"] == B_p], metric, palette)
    ax.set_title(f"Reward vs compute, {BP} = {B_p}")
    return _save(fig, path_stem, formats)


@_styled
def plot_frontiers_grid(points: pd.DataFrame, fits: pd.DataFrame, frontier: pd.DataFrame, path_stem, *,
                        metric: str = "avg@4", x: str = "compute", formats=FORMATS) -> list[Path]:
    """Appendix: the frontier for every fixed B_p, one panel each (x: compute or
    tokens). `points` are the marks behind the curves: the evaluation table, or
    (lighter to draw, as `plot_all` does) the record-breaking points."""
    evals = points
    groups = sorted(frontier["B_p"].unique())
    fig, axes = _panels(max(len(groups), 1), sharey=True)
    palette = _n_palette(fits["n"])
    for ax, B_p in zip(axes, groups):
        _draw_frontier(ax, evals, fits[fits["B_p"] == B_p], frontier[frontier["B_p"] == B_p], metric,
                       palette, x=x, legend=B_p == groups[0])
        ax.set_title(f"{BP} = {B_p}")
        ax.label_outer()
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Fig 7

def _draw_law(ax, pts, law, x_name):
    sc = ax.scatter(pts[x_name], pts["log2_n_star_avg"], c=pts["reward"], cmap="viridis", s=10,
                    linewidths=0, zorder=2)
    if law is not None and law.get("status") in ("ok", "constant"):
        xs = pts["log10_x"].to_numpy(dtype=float)
        ax.plot(10 ** xs, n_star_sigmoid(xs, law["L"], law["U"], law["k"], law["c0"]), color="red", lw=1.5,
                label="sigmoid fit")
        text = f"2^U = {2 ** law['U']:.0f}, c0 = {law['c0']:.2f}"
        if np.isfinite(law.get("U_lo", np.nan)):
            text += f"\nU in [{law['U_lo']:.2f}, {law['U_hi']:.2f}]"
        ax.text(0.03, 0.95, text, transform=ax.transAxes, va="top", fontsize=7)
    _log2_x(ax, x_name)
    _pow2_y(ax, "n* (running average)")
    return sc


@_styled
def plot_n_star_law(frontier: pd.DataFrame, laws: pd.DataFrame, path_stem, *, by: str | None = "B_p",
                    key=None, x: str = "compute", formats=FORMATS) -> list[Path]:
    """Fig. 7: running average of log2 n*(C) (colour: frontier reward) and the
    sigmoid law for one group (`key`; default the smallest, as the paper's B_p = 32)."""
    if by is not None:
        key = sorted(frontier[by].unique())[0] if key is None else key
        frontier, laws = frontier[frontier[by] == key], laws[laws[by] == key]
    fig, ax = _subplots(panel=(4.6, 3.2), right=0.1)
    ax = ax[0, 0]
    pts = frontier.assign(log10_x=np.log10(frontier[x].to_numpy(dtype=float)))
    if "log2_n_star_avg" not in pts.columns:
        pts = law_points(frontier, x=x)
    sc = _draw_law(ax, pts, laws.iloc[0].to_dict() if len(laws) else None, x)
    fig.colorbar(sc, ax=ax, label="frontier reward")
    ax.set_title("Compute-optimal n, all cells" if by is None else
                 f"Compute-optimal n, {BP if by == 'B_p' else by} = {key}")
    return _save(fig, path_stem, formats)


@_styled
def plot_n_star_laws(frontier: pd.DataFrame, laws: pd.DataFrame, path_stem, *, by: str = "B_p",
                     x: str = "compute", formats=FORMATS) -> list[Path]:
    """Appendix: the n* laws of every group in one panel (colour: group)."""
    fig, ax = _subplots(panel=(5.0, 3.4))
    ax = ax[0, 0]
    keys = sorted(frontier[by].unique())
    colors = dict(zip(keys, sns.color_palette("crest", max(len(keys), 1))))
    ax.scatter(frontier[x], frontier["log2_n_star_avg"], s=5, c=[colors[k] for k in frontier[by]], alpha=0.5,
               linewidths=0, rasterized=True)
    for key in keys:
        f, law = frontier[frontier[by] == key], laws[laws[by] == key]
        xs = np.log10(f[x].to_numpy(dtype=float))
        if len(law) and law.iloc[0]["status"] in ("ok", "constant"):
            p = law.iloc[0]
            ax.plot(10 ** xs, n_star_sigmoid(xs, p["L"], p["U"], p["k"], p["c0"]), color=colors[key], lw=1.4,
                    label=f"{BP if by == 'B_p' else by} = {key}: 2^U = {2 ** p['U']:.0f}")
    _log2_x(ax, x)
    _pow2_y(ax, "n* (running average)")
    ax.legend(fontsize=6, loc="upper left")
    ax.set_title("Sigmoid laws of n*(C)")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ Fig 8

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


# ------------------------------------------------------------------ Fig 9

@_styled
def plot_fixed_batch(frontier_fb: pd.DataFrame, laws_fb: pd.DataFrame, path_stem, *, batch_sizes=None,
                     formats=FORMATS) -> list[Path]:
    """Fig. 9: under a fixed rollout batch B, n*(M) and B_p*(M) = B / n*(M).

    `batch_sizes` default: the paper's (4096, 8192, 16384) where present, else
    the three middle batch sizes of the table."""
    fig, axes = _subplots(1, 2, panel=(4.4, 3.2))
    ax_n, ax_b = axes[0]
    present = sorted(frontier_fb["B"].unique())
    if batch_sizes is None:
        batch_sizes = [b for b in PAPER_BATCH_SIZES if b in present] or \
            present[max(0, (len(present) - 3) // 2):][:3]
    Bs = [b for b in batch_sizes if b in present]
    colors = dict(zip(Bs, sns.color_palette("rocket", max(len(Bs), 1))))
    shown = frontier_fb[frontier_fb["B"].isin(Bs)]
    point_colors = [colors[B] for B in shown["B"]]
    y_all = shown["log2_n_star_avg"].to_numpy(dtype=float)
    ax_n.scatter(shown["M"], y_all, s=6, c=point_colors, alpha=0.6, linewidths=0, rasterized=True)
    ax_b.scatter(shown["M"], np.log2(shown["B"].to_numpy(dtype=float)) - y_all, s=6, c=point_colors,
                 alpha=0.6, linewidths=0, rasterized=True)
    for B in Bs:
        M = frontier_fb.loc[frontier_fb["B"] == B, "M"].to_numpy(dtype=float)
        law = laws_fb[laws_fb["B"] == B]
        if len(law) and law.iloc[0]["status"] in ("ok", "constant"):
            p = law.iloc[0]
            fit = n_star_sigmoid(np.log10(M), p["L"], p["U"], p["k"], p["c0"])
            ax_n.plot(M, fit, color=colors[B], lw=1.4, label=f"B = {B}")
            ax_b.plot(M, np.log2(B) - fit, color=colors[B], lw=1.4, label=f"B = {B}")
    for ax, label in ((ax_n, "n*(M)"), (ax_b, f"{BP}*(M)")):
        _log2_x(ax, "M")
        _pow2_y(ax, label)
    if Bs:
        ax_n.legend(fontsize=6, ncols=2, loc="upper left")
    ax_n.set_title("Optimal rollouts per problem, fixed B")
    ax_b.set_title("Optimal problems per step, fixed B")
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


# ------------------------------------------------------------------ Q3

@_styled
def plot_joint(frontier_joint: pd.DataFrame, laws_joint: pd.DataFrame, path_stem, *, formats=FORMATS) -> list[Path]:
    """All cells jointly: frontier reward coloured by n*, and the n* law."""
    fig, axes = _subplots(1, 2, panel=(4.4, 3.2))
    ax_r, ax_n = axes[0]
    f = frontier_joint[np.isfinite(frontier_joint["n_star"].to_numpy(dtype=float))]
    palette = _n_palette(f["n_star"])
    ax_r.scatter(f["compute"], f["reward"], c=[palette[int(n)] for n in f["n_star"]], s=12,
                 edgecolors="black", linewidths=0.3)
    for n, color in palette.items():
        ax_r.scatter([], [], color=color, label=f"n*={n}")
    ax_r.legend(fontsize=6, ncols=2, loc="lower right")
    _log2_x(ax_r)
    ax_r.set_ylabel("frontier reward")
    ax_r.set_title(f"Joint frontier over all ({BP}, n)")
    pts = frontier_joint.assign(log10_x=np.log10(frontier_joint["compute"].to_numpy(dtype=float)))
    _draw_law(ax_n, pts, laws_joint.iloc[0].to_dict() if len(laws_joint) else None, "compute")
    ax_n.set_title("n*(C), all cells")
    return _save(fig, path_stem, formats)


# ------------------------------------------------------------------ all

def plot_all(results: dict, fig_dir, *, formats=FORMATS) -> list[Path]:
    """Every figure the results support, into `fig_dir`."""
    fig_dir = Path(fig_dir)
    evals, fits, front = results["evals"], results["fits"], results["frontier"]
    params = dict(zip(results["params"]["name"], results["params"]["value"])) if "params" in results else {}
    metric = params.get("metric", '"avg@4"').strip('"')
    paths: list[Path] = []
    if not front.empty:
        # The paper's main panels use its smallest B_p (32).
        B_p = int(front["B_p"].min())
        paths += plot_record_points(evals, B_p, fig_dir / "fig5_record_points", metric=metric, formats=formats)
        paths += plot_frontier(evals, fits, front, B_p, fig_dir / "fig6_frontier", metric=metric, formats=formats)
        paths += plot_n_star_law(front, results["n_star_fit"], fig_dir / "fig7_n_star", key=B_p, formats=formats)
        paths += plot_n_star_laws(front, results["n_star_fit"], fig_dir / "appendix_n_star_laws", formats=formats)
        paths += plot_frontiers_grid(results.get("records", evals), fits, front,
                                     fig_dir / "appendix_frontiers_fixed_bp", metric=metric, formats=formats)
    if len(results.get("optima", [])):
        paths += plot_metric_optima(results["optima"], fig_dir / "fig8_metric_optima", formats=formats)
    if len(results.get("frontier_fixed_batch", [])):
        paths += plot_fixed_batch(results["frontier_fixed_batch"], results["n_star_fit_fixed_batch"],
                                  fig_dir / "fig9_fixed_batch", formats=formats)
    if len(results.get("sensitivity", [])):
        paths += plot_sensitivity(results["sensitivity"], fig_dir / "fig10_sensitivity", metric=metric,
                                  formats=formats)
    if len(results.get("interference", [])):
        paths += plot_interference(results["interference"], fig_dir / "fig11_interference", formats=formats)
    if len(results.get("frontier_joint", [])) and results["frontier_joint"]["n_star"].notna().any():
        paths += plot_joint(results["frontier_joint"], results["n_star_fit_joint"], fig_dir / "appendix_joint",
                            formats=formats)
    if len(results.get("frontier_tokens", [])):
        tok_points = results["records"] if "tokens" in results.get("records", {}) else evals
        paths += plot_frontiers_grid(tok_points, results["fits_tokens"], results["frontier_tokens"],
                                     fig_dir / "appendix_tokens_frontier", metric=metric, x="tokens",
                                     formats=formats)
    return paths
