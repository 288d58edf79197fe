"""Figure style and atomic PNG+PDF saving for the data stage's figures (`data/plots.py`);
the analysis figures have their own in `analysis/plots/style.py`."""

from __future__ import annotations

from pathlib import Path

from isocompute.atomic import atomic_path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402


def paper_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight",
                         "axes.spines.top": False, "axes.spines.right": False})


def save_figure(fig, stem: Path | str, formats=("png", "pdf")) -> list[Path]:
    """Write `stem.png` and `stem.pdf` via temporary files, then close the figure."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = stem.with_suffix(f".{fmt}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt)
        paths.append(path)
    plt.close(fig)
    return paths
