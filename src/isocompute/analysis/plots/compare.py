"""Studies side by side (config `compare`): the frontiers of several finished
experiments in one figure, on shared axes. Paper Fig. 12 (base models: one
panel per model and split) and Fig. 13 (D = 6k vs D = 500: the frontiers
overlaid). The tables come from `analysis.outputs.compare.load_comparison`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D

from isocompute.analysis.plots.frontier import View, _draw_frontier
from isocompute.plotting import BP, FORMATS, Margins, _log2_x, _n_palette, _save, _styled, _subplots

LINESTYLES = ("-", "--", ":", "-.")


def _at_bp(results: dict, B_p: int | None):
    """The analysis's frontier and fits at `B_p` (None: its smallest, as Fig. 6), and that B_p."""
    front = results["frontier"]
    if front.empty:
        return None, front, results["fits"]
    B_p = int(front["B_p"].min()) if B_p is None else int(B_p)
    return B_p, front[front["B_p"] == B_p], results["fits"][results["fits"]["B_p"] == B_p]


def _share_x(axes) -> None:
    lims = np.array([ax.get_xlim() for ax in axes if ax.has_data()])
    if len(lims):
        for ax in axes:
            ax.set_xlim(lims[:, 0].min(), lims[:, 1].max())


@_styled
def plot_comparison(loaded, path_stem, *, figure: str = "frontiers", B_p: int | None = None,
                    title: str | None = None, formats=FORMATS) -> list[Path]:
    """`loaded`: (source, results) pairs, source with label and split, by split then
    experiment. 'frontiers': a panel each (rows: splits, columns: experiments);
    'overlay': a panel per split, every experiment's frontier in it."""
    splits = list(dict.fromkeys(src.split for src, _ in loaded))
    labels = list(dict.fromkeys(src.label for src, _ in loaded))
    palette = _n_palette(np.concatenate([r["fits"]["n"].to_numpy(dtype=float) for _, r in loaded]))
    ncols = len(labels) if figure == "frontiers" else 1
    fig, axes = _subplots(len(splits), ncols, panel=(3.6, 2.7), margins=Margins(wgap=0.25), sharey=True)
    for src, results in loaded:
        row = splits.index(src.split)
        col = labels.index(src.label) if figure == "frontiers" else 0
        ax = axes[row, col]
        bp, front, fits = _at_bp(results, B_p)
        s = results["settings"]        # outputs.folder.load_analysis: read back from params.json
        if figure == "frontiers":
            _draw_frontier(ax, results["evals"], fits, front, View(s.metric, extrapolate=not s.observed_range),
                           palette, legend=False)
            ax.set_title(f"{src.label}, {src.split}" + (f" ({BP} = {bp})" if bp else ""))
        else:
            style = LINESTYLES[labels.index(src.label) % len(LINESTYLES)]
            ax.plot(front["compute"], front["reward"], style, color="black", lw=1.2, label=src.label)
            good = np.isfinite(front["n_star"].to_numpy(dtype=float))
            ax.scatter(front.loc[good, "compute"], front.loc[good, "reward"], s=7, zorder=3,
                       c=[palette.get(int(n), "black") for n in front.loc[good, "n_star"]],
                       edgecolors="black", linewidths=0.3)
            _log2_x(ax)
            ax.set_ylabel(f"Validation reward ({s.metric})")
            ax.set_title(src.split + (f" ({BP} = {bp})" if B_p is not None else ""))
        if not ax.has_data():
            ax.text(0.5, 0.5, "no frontier", transform=ax.transAxes, ha="center", va="center", color="0.5")
    flat = list(axes.flat)
    _share_x(flat)
    for ax in flat:
        ax.label_outer()
    handles = [Line2D([], [], color=c, lw=1.2, label=f"n={n}") for n, c in palette.items()]
    if figure == "overlay":
        handles += [Line2D([], [], color="black", ls=LINESTYLES[i % len(LINESTYLES)], label=label)
                    for i, label in enumerate(labels)]
    flat[0].legend(handles=handles, fontsize=6, ncols=2, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=9)
    return _save(fig, path_stem, formats)
