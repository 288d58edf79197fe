"""Figure 2: avg@16 difficulty histograms of the pool and of each split (the house look
of `isocompute.plotting`, as the analysis figures)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.plotting import FORMATS, Margins, _save, _styled, _subplots


@_styled
def difficulty_histograms(rates: dict[str, np.ndarray], samples: int, bands: dict, stem, formats=FORMATS) -> list:
    """One panel per set (pool first); bars on the exact c/samples grid; bands shaded on the pool."""
    names = list(rates)
    cols = min(4, len(names))
    rows = int(np.ceil(len(names) / cols))
    fig, axes = _subplots(rows, cols, (2.65, 2.0), margins=Margins(top=0.6, hgap=0.75))
    edges = (np.arange(samples + 2) - 0.5) / samples
    colors = {"easy": "tab:green", "hard": "tab:red", "very_easy": "tab:blue"}
    for ax, name in zip(axes.flat, names):
        r = np.asarray(rates[name])
        ax.hist(r, bins=edges, color="0.35" if name == "pool" else "tab:purple", alpha=0.85)
        if name == "pool":
            for band, (lo, hi) in bands.items():
                ax.axvspan(lo, hi, color=colors.get(band, "0.8"), alpha=0.12, lw=0,
                           label=f"{band.replace('_', ' ')} [{lo:g}, {hi:g}]")
            ax.legend(fontsize=7, loc="upper center")
        ax.set_title(f"{name.replace('_', ' ')} (N={len(r)})")
        ax.set_xlabel(f"base-model avg@{samples}")
        ax.set_ylabel("problems")
        ax.set_xlim(-0.05, 1.05)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.suptitle("Difficulty of problems under the base model (Fig. 2)")
    return _save(fig, stem, formats)


def histogram_counts(rate: np.ndarray, samples: int) -> pd.Series:
    counts = np.bincount(np.rint(np.asarray(rate) * samples).astype(int), minlength=samples + 1)
    return pd.Series(counts, index=[f"{c}/{samples}" for c in range(samples + 1)])
