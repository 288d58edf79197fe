"""The house look of every figure, of both stages (the data stage's Fig. 2 in
`data/plots.py` and the analysis figures in `analysis/plots/`): style, axes,
palettes, layout and saving (atomic: `_save`).

Compute axes are log2-scaled as in the paper; n axes show powers of two.
Figures are bare matplotlib Figures, so nothing here touches pyplot's global
state.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from isocompute.atomic import atomic_path

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
    """`path_stem.<fmt>` for each format, each written under a temporary name and renamed
    into place (`atomic.atomic_path`): a reader never sees half a figure."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=DPI, format=fmt)
        paths.append(path)
    return paths


# One colour per n, the same in every figure: n = 2^k takes N_COLORS[k] (k = 0..9: n = 1 to
# 512), so neighbouring n (a factor of two apart) are clearly different hues. Grey is left
# out: the raw points and the bands are grey.
N_COLORS = ("#7f3c8d", "#e6550d", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#bcbd22", "#17becf")


# Groups that are not n (B_p, B): a qualitative palette, distinct neighbours too.
GROUP_COLORS = tuple(sns.color_palette("Dark2", 8))


def n_color(n) -> str:
    """The colour of `n` in every figure (a power of two: its own; else that of the nearest)."""
    k = int(round(np.log2(max(float(n), 1.0))))
    return N_COLORS[k % len(N_COLORS)]


def _n_palette(ns) -> dict:
    """{n: colour} for the n in `ns`, from the one shared map (`n_color`)."""
    return {n: n_color(n) for n in sorted({int(n) for n in ns if np.isfinite(n)})}


def _log2_x(ax, label="compute"):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=8))
    ax.xaxis.set_major_formatter(FuncFormatter(_pow2_label))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(_LABELS.get(label, label))


def _pow2_y(ax, label="n*"):
    """y holds log2 n: ticks at whole powers, labelled with the n values."""
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{2 ** v:g}"))
    lo, hi = ax.get_ylim()
    if hi - lo < 1:   # one n throughout: keep a whole power of two in view, not ticks at 2.0069
        mid = round((lo + hi) / 2)
        ax.set_ylim(min(lo, mid - 0.6), max(hi, mid + 0.6))
    ax.set_ylabel(label)


@dataclass(frozen=True)
class Margins:
    """A figure's margins and the gaps between its panels, in inches."""

    left: float = 0.75
    right: float = 0.2
    bottom: float = 0.55
    top: float = 0.35
    wgap: float = 0.75
    hgap: float = 0.65


def _subplots(nrows=1, ncols=1, panel=(4.0, 2.9), margins: Margins = Margins(), *, sharey=False):
    """Figure with fixed margins and gaps in inches (`Margins`). A layout engine
    (tight_layout) measures every text first and doubles the drawing time."""
    w, h = panel
    left, right, bottom, top, wgap, hgap = (margins.left, margins.right, margins.bottom, margins.top, margins.wgap,
                                            margins.hgap)
    width = left + right + ncols * w + (ncols - 1) * wgap
    height = bottom + top + nrows * h + (nrows - 1) * hgap
    # A bare Figure (no pyplot): no global figure registry, PNG through Agg, PDF through the pdf backend.
    fig = Figure(figsize=(width, height))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=sharey)
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=wgap / w, hspace=hgap / h)
    return fig, axes


def _panels(count, panel=(4.0, 2.9), ncols=3, sharey=False, top=0.35):
    ncols = max(1, min(ncols, count))
    nrows = int(np.ceil(count / ncols))
    margins = Margins(wgap=0.25 if sharey else 0.75, hgap=0.85, top=top)
    fig, axes = _subplots(nrows, ncols, panel, margins, sharey=sharey)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:count])


BAND_STYLE = {"color": "0.5", "label": None, "alpha": 0.2}     # `_band`'s shading, by default


def _band(ax, table, x, name, *, smooth: int = 1, **style) -> bool:
    """Shade `<name>_lo`..`<name>_hi` of `table` against column `x` where present
    (the bootstrap interval); returns whether anything was drawn. With `smooth` > 1 the
    edges are drawn as their envelope over that many grid points (`_envelope`). `style`:
    the shading's color (default grey 0.5), alpha (0.2) and label."""
    unknown = set(style) - set(BAND_STYLE)
    if unknown:
        raise TypeError(f"_band: unknown style {sorted(unknown)}; it takes {sorted(BAND_STYLE)}")
    style = {**BAND_STYLE, **style}
    lo, hi = f"{name}_lo", f"{name}_hi"
    if lo not in table.columns or not np.isfinite(table[lo].to_numpy(dtype=float)).any():
        return False
    lo_v, hi_v = table[lo].to_numpy(dtype=float), table[hi].to_numpy(dtype=float)
    if smooth > 1:
        lo_v, hi_v = _envelope(lo_v, smooth, np.fmin), _envelope(hi_v, smooth, np.fmax)
    ax.fill_between(table[x].to_numpy(dtype=float), lo_v, hi_v, color=style["color"], alpha=style["alpha"],
                    linewidth=0, label=style["label"], zorder=1)
    return True


def _envelope(values, width: int, pick) -> np.ndarray:
    """`pick` (np.fmin / np.fmax) of `values` over a window of `width` neighbours: a band's
    edge drawn as its envelope, wider never narrower, without one-point spikes."""
    v = np.asarray(values, dtype=float)
    half = width // 2
    padded = np.pad(v, half, mode="edge")
    out = v.copy()
    for shift in range(width):
        out = pick(out, padded[shift:shift + v.size])
    return out
