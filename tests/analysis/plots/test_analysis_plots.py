"""Figures that the end-to-end CLI test does not draw (it has no training table)."""

import warnings
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

from isocompute.analysis.plots import plot_interference, plot_mechanism, plot_metric_optima
from isocompute.plotting import _save


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

    from isocompute.analysis.fits.settings import AnalysisSettings
    from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
    from isocompute.analysis.outputs.folder import load_analysis
    from isocompute.analysis.pipeline import run_analysis, write_analysis
    from isocompute.analysis.plots import plot_all
    from isocompute.train.recipe import evaluation_steps

    evals = synthetic_study((32,), (8, 32), c_max=2.0 ** 17, eval_steps=lambda B, M: evaluation_steps(M, 10),
                            noise=EvalNoise(sd=0.02, seeds=2))
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

    from isocompute.analysis.frontier.claims import NO_EFFECT, RISES
    from isocompute.analysis.plots.laws import _draw_law

    compute = np.geomspace(1e3, 1e6, 20)
    front = pd.DataFrame({"compute": compute, "n_star": np.repeat([8.0, 64.0], 10), "reward": 0.5})
    law = {"L": 3.0, "U": 6.0, "k": 3.0, "c0": 4.5, "status": "ok"}
    for claim, drawn in ((RISES, True), (NO_EFFECT, False)):
        ax = Figure().subplots()
        _draw_law(ax, front, {**law, "claim": claim}, "compute")
        assert any(line.get_label() == "sigmoid fit" for line in ax.get_lines()) == drawn
        assert any("no law drawn" in t.get_text() for t in ax.texts) == (not drawn)


def test_isocompute_figures_draws_every_analysis_figure_of_the_index(tmp_path):
    """Every `analysis/<split>/figures/<stem>` that docs/figures.md lists is drawn by
    `isocompute figures` from the tables of a small study (with a training table and tokens)."""
    import re

    import numpy as np
    from support import REPO

    from isocompute.analysis.fits.synthetic import synthetic_evals
    from isocompute.cli import main

    listed = set(re.findall(r"analysis/[^/`]+/figures/([a-z0-9_]+)`", (REPO / "docs" / "figures.md").read_text()))
    assert {"fig7_n_star", "appendix_n_star_fixed_bp", "mechanism_zero_variance"} <= listed
    evals = synthetic_evals(B_ps=(32, 64), ns=(8, 16, 32), points=40, noise=0.005, seed=1)
    assert "tokens" in evals.columns
    evals.to_parquet(tmp_path / "evals.parquet")
    rng = np.random.default_rng(0)
    train = evals[evals["step"] > 0][["B_p", "n", "step", "compute"]].copy()
    train = train.loc[train.index.repeat(4)].assign(problem_id=np.tile([0, 1, 2, 3], len(train)))
    train["pass_rate"] = rng.integers(0, 5, len(train)) / 4
    train.to_csv(tmp_path / "train.csv", index=False)
    tables, figures = tmp_path / "tables", tmp_path / "figures"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["analyze", str(tmp_path / "evals.parquet"), "--out", str(tables), "--bootstrap", "4",
                     "--grid-points", "30", "--train-table", str(tmp_path / "train.csv"), "--no-figures"]) == 0
        assert main(["figures", "--evals", str(tmp_path / "evals.parquet"), "--tables", str(tables),
                     "--out", str(figures)]) == 0
    drawn = {p.stem for p in figures.glob("*.png")}
    assert listed - drawn == set(), f"listed in docs/figures.md but not drawn: {sorted(listed - drawn)}"


def test_one_n_palette_with_distinct_neighbours():
    from matplotlib.colors import to_rgb

    from isocompute.plotting import _n_palette, n_color

    ns = [2 ** k for k in range(10)]
    assert len({n_color(n) for n in ns}) == len(ns)
    for a, b in zip(ns, ns[1:]):   # neighbouring n: clearly different colours
        assert sum(abs(x - y) for x, y in zip(to_rgb(n_color(a)), to_rgb(n_color(b)))) > 0.4, (a, b)
    assert _n_palette([2, 4])[4] == _n_palette([4, 8, 16, 32])[4]   # the same in every figure


def test_fig7_labels_its_law_and_bands_and_gives_c0_on_the_log2_axis():
    import numpy as np

    from isocompute.analysis.frontier.claims import RISES
    from isocompute.analysis.plots.laws import _draw_law

    compute = np.geomspace(1e3, 1e6, 20)
    front = pd.DataFrame({"compute": compute, "n_star": np.repeat([8.0, 64.0], 10), "reward": 0.5,
                          "log2_n_star_avg": np.linspace(3, 6, 20), "log2_n_star_avg_lo": np.linspace(2, 5, 20),
                          "log2_n_star_avg_hi": np.linspace(4, 7, 20)})
    law = {"L": 3.0, "U": 6.0, "k": 3.0, "c0": 4.5, "status": "ok", "claim": RISES}
    draws = pd.DataFrame({"L": [2.9, 3.1, 3.0], "U": [5.8, 6.2, 6.0], "k": 3.0, "c0": [4.4, 4.6, 4.5],
                          "status": "ok"})
    ax = Figure().subplots()
    _draw_law(ax, front, law, "compute", draws=draws)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"sigmoid fit", "law: 95% of bootstrap fits", "running average: 95% bootstrap band"} <= set(labels)
    text = " ".join(t.get_text() for t in ax.texts)
    assert f"2^{4.5 * np.log2(10):.1f}" in text and "c0 = 4.50" not in text   # C0 = 2^14.9, not log10


def _drawn_figures(monkeypatch) -> list:
    """The Figures saved from now on (to look at what a plot function drew)."""
    import matplotlib.figure

    seen, save = [], matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        seen.append(fig)
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    return seen


def test_fig11_gives_compute_as_a_power_of_two_and_the_number_of_problems(tmp_path, monkeypatch):
    from isocompute.analysis.plots import plot_interference
    from isocompute.analysis.plots.studies import _compute_text

    assert _compute_text(8192.0) == "2\u00b9\u00b3" and _compute_text(6000.0) == "6,000"
    hist = pd.DataFrame({"B_p": 4, "n": [2] * 2 + [32] * 2, "compute": 8192.0, "step": 1,
                         "bin_lo": [0, 0.5] * 2, "bin_hi": [0.5, 1.0] * 2, "count": [10, 6, 4, 12],
                         "fraction": [10 / 16, 6 / 16, 4 / 16, 12 / 16]})
    drawn = _drawn_figures(monkeypatch)
    plot_interference(hist, tmp_path / "fig11", formats=("png",))
    assert drawn[0].axes[0].get_title() == "B\u209a = 4, C = 2\u00b9\u00b3"
    assert "16 problems" in drawn[0]._suptitle.get_text()


def test_fixed_batch_frontiers_list_every_n_and_label_every_compute_axis(tmp_path, monkeypatch):
    from isocompute.analysis.frontier.envelope import frontier_fixed_batch
    from isocompute.analysis.plots import plot_frontiers_fixed_batch

    # four batch sizes (two panels in the first row, one panel alone under them), n = 2 to 16
    cells = [(B_p, n) for B_p in (4, 8, 16) for n in (2, 4, 8, 16) if B_p * n in (16, 32, 64, 128)]
    fits = pd.DataFrame([{"B_p": B_p, "n": n, "R0": 0.4, "A": 0.6 + 0.01 * n, "B": 1.0, "C_mid": 1e3 * n,
                          "status": "ok", "compute_min": float(B_p * n), "compute_max": 8192.0}
                         for B_p, n in cells])
    front = frontier_fixed_batch(fits, grid_points=20)
    points = pd.DataFrame({"B_p": [4], "n": [2], "compute": [64.0], "avg@4": [0.45]})
    drawn = _drawn_figures(monkeypatch)
    plot_frontiers_fixed_batch(points, fits, front, tmp_path / "fb", formats=("png",))
    axes = [ax for ax in drawn[0].axes if ax.get_visible()]
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert {f"n={n}" for n in (2, 4, 8, 16)} <= set(labels)
    assert all(ax.get_xlabel() for ax in axes)
    assert all(any(t.get_text() for t in ax.get_xticklabels()) for ax in axes), "a panel without x labels"
