"""Metric optima, sensitivity, interference histograms, extrapolation check."""

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits.fitter import Fitter
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import synthetic_evals, synthetic_params
from isocompute.analysis.frontier.studies import (common_compute, extrapolation_check, interference_histograms,
                                                  metric_fits, metric_frontiers, metric_optima, sensitivity,
                                                  value_at_compute)


PAPER = Fitter(AnalysisSettings(method="paper"))


def _evals():
    # B_p = 2: n = 1 runs to compute 8, n = 2 to compute 16; B_p = 4, n = 1 to 16.
    rows = [
        # B_p, n, step, avg, best, worst
        (2, 1, 0, 0.30, 0.50, 0.10), (2, 1, 2, 0.40, 0.70, 0.20), (2, 1, 4, 0.45, 0.80, 0.15),
        (2, 2, 0, 0.30, 0.50, 0.10), (2, 2, 1, 0.35, 0.60, 0.20), (2, 2, 2, 0.50, 0.65, 0.30),
        (2, 2, 4, 0.60, 0.90, 0.40),
        (4, 1, 0, 0.30, 0.50, 0.10), (4, 1, 1, 0.42, 0.75, 0.12), (4, 1, 2, 0.38, 0.60, 0.11),
        (4, 1, 4, 0.50, 0.85, 0.25),
    ]
    df = pd.DataFrame(rows, columns=["B_p", "n", "step", "avg@4", "best@4", "worst@4"])
    df["compute"] = df["B_p"] * df["n"] * df["step"]
    return df


def test_value_at_compute_and_common_compute():
    run = _evals().query("B_p == 4")
    assert value_at_compute(run, "avg@4", 8) == pytest.approx(0.42)           # running max up to C = 8
    assert value_at_compute(run, "avg@4", 8, how="last") == pytest.approx(0.38)
    assert np.isnan(value_at_compute(run.query("step > 0"), "avg@4", 1))
    assert common_compute(_evals().query("B_p == 2")) == 8


def test_metric_optima_at_largest_common_compute():
    opt = metric_optima(_evals(), PAPER)
    b2 = opt[opt["B_p"] == 2].set_index("metric")
    # at C = 8: n=1 best@4 max(0.5, 0.7, 0.8) = 0.8 vs n=2 max(0.5, 0.6, 0.65) = 0.65
    assert b2.loc["best@4", "n_opt"] == 1 and b2.loc["best@4", "value"] == pytest.approx(0.8)
    # worst@4: n=1 max 0.2 vs n=2 max 0.3
    assert b2.loc["worst@4", "n_opt"] == 2 and b2.loc["worst@4", "compute"] == 8
    assert metric_optima(_evals().drop(columns="worst@4"), PAPER)["metric"].unique().tolist() == ["best@4"]


def test_best_and_worst_frontiers_reuse_the_optima_fits(tmp_path):
    """Fig. 20's tables: the frontier of best@4 and of worst@4 per B_p, from the same fits as Fig. 8's optima."""
    from isocompute.analysis.plots import plot_metric_frontiers

    evals = synthetic_evals(B_ps=(8,), ns=(4, 16, 64), points=12, noise=0.01, seed=2).assign(problems=300, samples=4)
    fits = metric_fits(evals, Fitter())
    assert sorted(fits) == ["best@4", "worst@4"]
    assert metric_optima(evals, fits=fits).equals(metric_optima(evals))
    fronts = metric_frontiers(fits, grid_points=20)
    assert fronts.columns.tolist() == ["metric", "B_p", "compute", "n_star", "reward"]
    assert fronts.groupby("metric").size().to_dict() == {"best@4": 20, "worst@4": 20}
    best, worst = (fronts[fronts["metric"] == m].set_index("compute")["reward"] for m in ("best@4", "worst@4"))
    assert (best > worst).all() and set(fronts["n_star"].dropna()) <= {4, 16, 64}
    assert metric_frontiers({}).empty
    paths = plot_metric_frontiers(fronts, tmp_path / "appendix_best_worst_frontiers")
    assert [p.name for p in paths] == ["appendix_best_worst_frontiers.png", "appendix_best_worst_frontiers.pdf"]


def test_sensitivity_ranges():
    sens = sensitivity(_evals(), PAPER).set_index(["varied", "fixed_value"])
    # across n at B_p = 2, C = 8: n=1 -> 0.45, n=2 -> 0.5
    assert sens.loc[("n", 2), "range"] == pytest.approx(0.05)
    # across B_p at n = 1, C = 8: B_p=2 -> 0.45, B_p=4 -> 0.42
    assert sens.loc[("B_p", 1), "range"] == pytest.approx(0.03)
    assert sens.loc[("B_p", 1), "compute"] == 8
    assert ("n", 4) not in sens.index                    # a single n: no range
    fixed = sensitivity(_evals(), PAPER, compute=4).set_index(["varied", "fixed_value"])
    assert fixed.loc[("n", 2), "range"] == pytest.approx(0.05)   # 0.4 vs 0.35


def test_interference_histograms_at_matched_compute():
    rows = []
    # n = 1 reaches compute 8, n = 2 reaches 16; matched compute is 8.
    for n, steps in ((1, [2, 4]), (2, [1, 2, 4])):
        for step in steps:
            for pid in range(4):
                rows.append((2, n, step, 2 * n * step, pid, min(1.0, 0.1 * pid * step / n)))
    train = pd.DataFrame(rows, columns=["B_p", "n", "step", "compute", "problem_id", "pass_rate"])
    hist = interference_histograms(train, bins=2)
    n1 = hist[hist["n"] == 1]
    assert n1["step"].tolist() == [4, 4] and n1["compute"].tolist() == [8, 8]
    # n=1 at step 4: pass rates 0, 0.4, 0.8, 1.0 -> [0, 0.5): 2, [0.5, 1]: 2
    assert n1["count"].tolist() == [2, 2]
    n2 = hist[hist["n"] == 2]
    # n=2 at step 2 (compute 8): pass rates 0, 0.1, 0.2, 0.3 -> all in the low bin
    assert n2["step"].tolist() == [2, 2] and n2["count"].tolist() == [4, 0]
    assert n2["fraction"].tolist() == [1.0, 0.0]


def test_interference_uses_each_problems_latest_rate():
    # problems sampled in different steps (batch-only logging)
    train = pd.DataFrame({"B_p": 1, "n": 4, "step": [1, 2, 3], "compute": [4, 8, 12],
                          "problem_id": ["a", "b", "a"], "pass_rate": [0.0, 1.0, 0.75]})
    hist = interference_histograms(train, bins=4)
    assert hist["count"].tolist() == [0, 0, 0, 2]       # a: 0.75 (latest), b: 1.0


def test_extrapolation_check_on_noise_free_curves():
    evals = synthetic_evals(B_ps=(32,), ns=(8, 16, 32), points=120)
    out = extrapolation_check(evals, Fitter(AnalysisSettings(extrapolate_fraction=0.5)))
    row = out.iloc[0]
    assert row["compute"] == evals["compute"].max()
    assert row["fit_max_compute"] == pytest.approx(0.5 * row["compute"])
    assert row["n_runs_fitted"] == 3
    assert row["abs_error"] < 0.02
    assert row["predicted_n_star"] == row["observed_n_star"] == 32
    best = max(synthetic_params(32, n)["A"] for n in (8, 16, 32))
    assert row["observed_reward"] == pytest.approx(best, abs=0.02)
    with pytest.raises(ValueError, match="extrapolate_fraction"):      # the schema's check of the setting
        Fitter(AnalysisSettings(extrapolate_fraction=0))


def test_mechanism_table_counts_zero_variance_groups_per_n_and_compute_bin():
    from isocompute.analysis.frontier.studies import interference_rates, mechanism_table

    # B_p 2: n = 2 runs 4 steps (compute 4, 8, 12, 16), n = 4 runs 2 steps (compute 8, 16);
    # pass rates are multiples of 1/n, 0 and 1 are the groups without signal.
    rows = [(2, 2, s, 4 * s, pid, r) for s, rates in ((1, (0.0, 1.0)), (2, (0.5, 1.0)), (3, (0.0, 0.0)),
                                                    (4, (0.5, 0.5))) for pid, r in enumerate(rates)]
    rows += [(2, 4, s, 8 * s, pid, r) for s, rates in ((1, (0.25, 1.0)), (2, (0.75, 0.5)))
             for pid, r in enumerate(rates)]
    train = pd.DataFrame(rows, columns=["B_p", "n", "step", "compute", "problem_id", "pass_rate"]).assign(
        source="batch")
    probe = train.iloc[:2].assign(source="probe", pass_rate=0.5)
    both = pd.concat([train, probe], ignore_index=True)
    assert interference_rates(both)["source"].eq("probe").all()
    assert interference_rates(train)["source"].eq("batch").all()
    mech = mechanism_table(both, bins_per_octave=1).set_index(["n", "compute_lo"])  # the probe is left out
    # n = 2: bin [4, 8): step 1 (0, 1: both without signal); [8, 16): steps 2, 3 (3 of 4); [16, 32): step 4
    assert mech.loc[(2, 4.0), ["groups", "zero_variance", "all_correct", "all_wrong"]].tolist() == [2, 1.0, 0.5, 0.5]
    assert mech.loc[(2, 8.0), ["steps", "groups", "zero_variance"]].tolist() == [2, 4, 0.75]
    assert mech.loc[(2, 16.0), "zero_variance"] == 0.0
    assert mech.loc[(4, 8.0), ["zero_variance", "all_correct", "pass_rate_mean"]].tolist() == [0.5, 0.5, 0.625]
    assert mech.loc[(4, 16.0), "pass_rate_q50"] == pytest.approx(0.625)
    assert mech.loc[(2, 8.0), "compute"] == pytest.approx(8 * 2 ** 0.5)   # the bin's geometric centre
