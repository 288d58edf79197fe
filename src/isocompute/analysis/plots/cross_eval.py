"""Cross-evaluation figures (config eval.extra_sets): Fig. 14, a grid of training split
(rows) x evaluation set (columns), the metric against compute for the smallest and the
largest n at the split's B_p; and the out-of-domain figure (the AIME24 curve), one panel
per set given by path and training split, a line per n. Curves from
`analysis.inputs.cross_eval.cross_eval_curves`.
"""

from __future__ import annotations

from pathlib import Path

from isocompute.plotting import BP, _log2_x, _n_palette, _save, _styled, _subplots


def _draw(ax, curves, palette, metric):
    for n, line in curves.groupby("n"):
        ax.plot(line["compute"], line[metric], marker="o", markersize=3, color=palette[int(n)], label=f"n = {n}")
    _log2_x(ax)
    ax.set_ylabel(metric)


@_styled
def plot_cross_eval(curves, metric: str, stem: Path | str, sets: list[str]) -> list[Path]:
    """Fig. 14: rows are training splits, columns the evaluation sets `sets` (in order)."""
    splits = sorted(curves["split"].unique())
    fig, axes = _subplots(len(splits), len(sets), panel=(3.2, 2.4))
    palette = _n_palette(curves["n"])
    for i, split in enumerate(splits):
        for j, name in enumerate(sets):
            ax, here = axes[i][j], curves[(curves["split"] == split) & (curves["eval_set"] == name)]
            if here.empty:
                ax.set_visible(False)
                continue
            _draw(ax, here, palette, metric)
            ax.set_title(f"train {split} ({BP} = {here['B_p'].iloc[0]}), eval {name}", fontsize=8)
            ax.legend(fontsize=7)
    return _save(fig, stem)


@_styled
def plot_out_of_domain(curves, metric: str, stem: Path | str) -> list[Path]:
    """The metric on each set given by path against compute, a panel per set and training split."""
    ood = curves[curves["out_of_domain"]]
    panels = list(ood.groupby(["eval_set", "split"]))
    fig, axes = _subplots(1, max(len(panels), 1), panel=(3.6, 2.6))
    palette = _n_palette(ood["n"])
    for ax, ((name, split), here) in zip(axes[0], panels):
        _draw(ax, here, palette, metric)
        ax.set_title(f"{name}: trained on {split}, {BP} = {here['B_p'].iloc[0]}", fontsize=8)
        ax.legend(fontsize=7)
    return _save(fig, stem)
