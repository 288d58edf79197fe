"""Figures that the end-to-end CLI test does not draw (it has no training table)."""

from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

from isocompute.analysis.plots import plot_interference, plot_mechanism, plot_metric_optima
from isocompute.analysis.plots.style import _save


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


def test_mechanism_figure_pools_b_p_and_skips_thin_bins(tmp_path):
    from isocompute.analysis.plots.studies import pooled_mechanism

    mech = pd.DataFrame({"B_p": [4, 8, 4, 8], "n": [2, 2, 16, 16], "compute": 64.0, "groups": [10, 30, 3, 1],
                         "zero_variance": [1.0, 0.5, 0.0, 1.0], "all_correct": [0.5, 0.0, 0.0, 1.0],
                         "all_wrong": [0.5, 0.5, 0.0, 0.0], "pass_rate_mean": [0.5, 0.2, 0.4, 0.8]})
    pooled = pooled_mechanism(mech).set_index("n")
    assert pooled.loc[2, ["groups", "zero_variance", "all_correct"]].tolist() == [40, 0.625, 0.125]
    assert pooled.loc[16, "zero_variance"] == 0.25
    paths = plot_mechanism(mech, tmp_path / "mechanism")
    assert [p.name for p in paths] == ["mechanism.png", "mechanism.pdf"] and all(p.stat().st_size > 1000 for p in paths)


def test_figures_are_saved_atomically(tmp_path):
    fig = Figure()
    fig.add_subplot().plot([0, 1], [0, 1])
    paths = _save(fig, tmp_path / "fig.v1", formats=("png", "pdf"))
    assert [p.name for p in paths] == ["fig.v1.png", "fig.v1.pdf"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.v1.pdf", "fig.v1.png"]  # no temporaries left
    assert all(p.stat().st_size > 1000 for p in paths)

    def half_written(fname, **kwargs):  # a save that dies midway (disk full, killed job)
        Path(fname).write_bytes(b"half a figure")
        raise OSError("disk full")

    fig.savefig = half_written
    with pytest.raises(OSError):
        _save(fig, tmp_path / "fig.v1", formats=("png",))
    assert paths[0].stat().st_size > 1000  # the old figure stays whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.v1.pdf", "fig.v1.png"]


def test_noise_method_figures_with_seed_bands_also_from_tables_on_disk(tmp_path):
    import json
    import warnings

    from isocompute.analysis.collect import load_analysis
    from isocompute.analysis.pipeline import run_analysis, write_analysis
    from isocompute.analysis.plots import plot_all
    from isocompute.analysis.settings import AnalysisSettings
    from isocompute.analysis.synthetic import synthetic_study
    from isocompute.train.recipe import evaluation_steps

    evals = synthetic_study((32,), (8, 32), c_max=2.0 ** 17, eval_steps=lambda B, M: evaluation_steps(M, 10),
                            noise=0.02, seeds=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_analysis(evals, AnalysisSettings(bootstrap=10, grid_points=20))
        assert {"reward_lo", "reward_hi", "log2_n_star_avg_lo"} <= set(res["frontier"].columns)
        write_analysis(res, tmp_path / "out", figures=False)
        assert json.loads((tmp_path / "out" / "params.json").read_text())["method"] == "noise"
        assert (tmp_path / "out" / "base.csv").is_file()
        # `isocompute figures` reads the tables back; its evaluation table has no standard errors
        again = plot_all(load_analysis(tmp_path / "out", evals), tmp_path / "again", formats=("png",))
    names = {p.name for p in again}
    assert {"fig5_record_points.png", "fig6_frontier.png", "fig7_n_star.png"} <= names


def test_fig7_draws_the_law_only_where_it_is_established():
    import numpy as np

    from isocompute.analysis.claims import NO_EFFECT, RISES
    from isocompute.analysis.plots.laws import _draw_law

    compute = np.geomspace(1e3, 1e6, 20)
    front = pd.DataFrame({"compute": compute, "n_star": np.repeat([8.0, 64.0], 10), "reward": 0.5})
    law = {"L": 3.0, "U": 6.0, "k": 3.0, "c0": 4.5, "status": "ok"}
    for claim, drawn in ((RISES, True), (NO_EFFECT, False)):
        ax = Figure().subplots()
        _draw_law(ax, front, {**law, "claim": claim}, "compute")
        assert any(line.get_label() == "sigmoid fit" for line in ax.get_lines()) == drawn
        assert any("no law drawn" in t.get_text() for t in ax.texts) == (not drawn)
