"""Figures that the end-to-end CLI test does not draw (it has no training table)."""

import pandas as pd

from isocompute.analysis.plots import plot_interference, plot_metric_optima


def test_interference_and_optima_figures(tmp_path):
    hist = pd.DataFrame({"B_p": 32, "n": [8] * 4 + [128] * 4, "compute": 1e6, "step": [100] * 4 + [8] * 4,
                         "bin_lo": [0, 0.25, 0.5, 0.75] * 2, "bin_hi": [0.25, 0.5, 0.75, 1.0] * 2,
                         "count": [5, 1, 1, 3, 2, 3, 3, 2], "fraction": [0.5, 0.1, 0.1, 0.3, 0.2, 0.3, 0.3, 0.2]})
    paths = plot_interference(hist, tmp_path / "figs" / "fig11")
    assert [p.name for p in paths] == ["fig11.png", "fig11.pdf"]
    assert all(p.stat().st_size > 1000 for p in paths)
    optima = pd.DataFrame({"B_p": [32, 32, 64, 64], "metric": ["best@4", "worst@4"] * 2,
                           "compute": 1e6, "n_opt": [16, 64, 32, 128], "value": 0.5, "n_runs": 4})
    assert all(p.is_file() for p in plot_metric_optima(optima, tmp_path / "fig8", formats=("png",)))
