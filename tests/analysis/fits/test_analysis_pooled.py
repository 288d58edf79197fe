"""Pooling the runs of one B_p by a trend in log2 n (analysis/fits/pooled.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from isocompute.analysis.fits.fitter import Fitter
from isocompute.analysis.fits.methods import get_method
from isocompute.analysis.fits.noise import add_standard_errors, noise_fit_grid
from isocompute.analysis.fits.pooled import f_test
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.analysis.fits.synthetic import EvalNoise, crossover_params, synthetic_study
from isocompute.analysis.frontier.bootstrap import bootstrap_fits
from isocompute.analysis.frontier.envelope import frontier
from isocompute.analysis.pipeline import run_analysis
from isocompute.schedule import compute_schedule_steps

NS = (8, 16, 32, 64, 128)
C_MAX = 2.0 ** 21


def _study(params=crossover_params, seed=0, problems=300, B_ps=(32,)):
    steps = lambda B, M: compute_schedule_steps(B, M, 81, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    evals = synthetic_study(B_ps, NS, c_max=C_MAX, eval_steps=steps, params=params,
                            noise=EvalNoise(problems=problems, seed=seed))
    return add_standard_errors(evals, "avg@4")[0]


def test_trend_recovers_smooth_truth_and_is_kept():
    fits = get_method("noise").fit_curves(_study(), "avg@4", grid=noise_fit_grid("trend"))
    assert fits["pooled"].all() and (fits["pool_p"] > 0.01).all()
    assert fits["B"].nunique() == 1                                   # one exponent per B_p
    for row in fits.itertuples():
        true = crossover_params(32, row.n)
        assert row.A == pytest.approx(true["A"], abs=0.01)
        assert np.log(row.C_mid) == pytest.approx(np.log(true["C_mid"]), abs=0.15)


def test_trend_rejected_when_one_run_breaks_it():
    def broken(B_p, n):      # n = 32 learns far faster and higher than its neighbours
        p = crossover_params(B_p, n)
        return {**p, "A": 0.85, "C_mid": p["C_mid"] / 8} if n == 32 else p

    pooled = get_method("noise").fit_curves(_study(broken), "avg@4", grid=noise_fit_grid("trend"))
    alone = get_method("noise").fit_curves(_study(broken), "avg@4", grid=noise_fit_grid("none"))
    assert not pooled["pooled"].any() and (pooled["pool_p"] < 0.01).all()
    assert np.allclose(pooled[["A", "B", "C_mid"]], alone[["A", "B", "C_mid"]])
    assert "pooled" not in alone.columns


def test_too_few_runs_are_not_pooled():
    evals = _study()
    fits = get_method("noise").fit_curves(evals[evals["n"].isin((8, 16, 32))], "avg@4",
                                          grid=noise_fit_grid("trend", degree=2))
    assert not fits["pooled"].any()           # 3 runs < degree + 2


def test_groups_are_the_B_p():
    fits = get_method("noise").fit_curves(_study(B_ps=(16, 32)), "avg@4", grid=noise_fit_grid("trend"))
    assert fits.groupby("B_p")["B"].nunique().eq(1).all()
    assert fits["pooled"].all()


def test_pooling_names_n_star_better_than_runs_alone_under_noise():
    # sigma 0.03 (60 problems x 4): the benchmark's setting in small; seeds fixed, not chosen
    probes = np.geomspace(C_MAX / 2 ** 8, C_MAX, 12)
    curves = np.array([sigmoid_reward(probes, **crossover_params(32, n)) for n in NS])
    true_n = np.asarray(NS)[curves.argmax(0)]
    right = {"trend": [], "none": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(6):
            evals = _study(seed=seed, problems=60)
            for pool in right:
                fits = get_method("noise").fit_curves(evals, "avg@4", grid=noise_fit_grid(pool))
                f = frontier(fits, probes, extrapolate=False)
                right[pool].append(np.mean(f["n_star"].to_numpy() == true_n))
    assert np.mean(right["trend"]) > np.mean(right["none"])


def test_bootstrap_replicates_are_pooled_too():
    evals = _study(problems=60)
    boot = bootstrap_fits(evals, Fitter(AnalysisSettings(bootstrap=8, seed=1, fit_grid=noise_fit_grid("trend"))))
    per_rep = boot.groupby("replicate")["B"].nunique()
    # each replicate is pooled (one B) unless its own F-test rejects the trend (then each run has its own B)
    assert set(per_rep) <= {1, len(NS)} or (per_rep == 1).any()
    assert (per_rep == 1).sum() >= 2
    alone = bootstrap_fits(evals, Fitter(AnalysisSettings(bootstrap=8, seed=1, fit_grid=noise_fit_grid("none"))))
    assert (alone.groupby("replicate")["B"].nunique() > 1).all()


def test_run_analysis_pool_key():
    evals = _study(problems=60)
    pooled = run_analysis(evals, AnalysisSettings(bootstrap=0, pool="trend"))
    alone = run_analysis(evals, AnalysisSettings(bootstrap=0, pool="none"))
    assert pooled["fits"]["pooled"].all() and "pooled" not in alone["fits"].columns
    with pytest.raises(ValueError, match="pool"):
        run_analysis(evals, AnalysisSettings(bootstrap=0, pool="smooth"))


def test_f_test():
    assert f_test(100.0, 100.0, 1000, 7, 15) == pytest.approx(1.0)
    assert f_test(200.0, 100.0, 1000, 7, 15) < 1e-6
    assert np.isnan(f_test(1.0, 1.0, 10, 7, 15))


def test_replicate_tests_count_draws_as_observations():
    # A replicate's sums of squares run over its draws (weights = counts / se^2), so must its n.
    from isocompute.analysis.fits.pooled import fit_trend

    evals = _study(problems=60)
    fits = get_method("noise").fit_curves(evals, "avg@4", grid=noise_fit_grid("none"))
    points = []
    for n, cell in evals[evals["compute"] > 0].groupby("n"):
        w = 1 / cell["avg@4_se"].to_numpy() ** 2
        points.append({"n": float(n), "compute": cell["compute"].to_numpy(float),
                       "values": cell["avg@4"].to_numpy(float), "weights": 2 * w, "draws": np.full(len(cell), 2.0)})
    twice = fit_trend(points, 0.45, fits, degree=2)
    once = fit_trend([{k: v for k, v in p.items() if k != "draws"} | {"weights": p["weights"] / 2} for p in points],
                     0.45, fits, degree=2)
    assert twice["n_points"] == 2 * once["n_points"]
    assert twice["sse"] == pytest.approx(2 * once["sse"], rel=1e-4)


def test_untestable_trend_is_not_kept(monkeypatch):
    # no degrees of freedom left for the F-test: p is NaN, and an untested trend (or common curve) is not kept
    import isocompute.analysis.fits.pooled as fp

    assert np.isnan(f_test(10.0, 9.0, 15, 7, 15))
    monkeypatch.setattr(fp, "f_test", lambda *a: np.nan)
    fits = get_method("noise").fit_curves(_study(), "avg@4", grid=noise_fit_grid("trend"))
    assert fits["pool_p"].isna().all() and (fits["model"] == "runs").all() and not fits["pooled"].any()


def test_identical_curves_share_one_curve():
    same = lambda B_p, n: crossover_params(B_p, 32)  # noqa: E731
    fits = get_method("noise").fit_curves(_study(same, problems=60), "avg@4", grid=noise_fit_grid("trend"))
    assert (fits["model"] == "common").all() and (fits["n_effect_p"] >= 0.05).all()
    assert fits[["A", "B", "C_mid"]].nunique().eq(1).all()
    # a real effect of n is kept
    fits = get_method("noise").fit_curves(_study(problems=60), "avg@4", grid=noise_fit_grid("trend"))
    assert (fits["model"] == "trend").all() and (fits["n_effect_p"] < 0.05).all()


def test_a_step_in_n_is_fused_into_two_blocks():
    def step(B_p, n):        # n <= 16 one curve, n >= 32 another: the trend cannot bend that sharply
        return ({"R0": 0.45, "A": 0.62, "B": 1.5, "C_mid": 5e4} if n <= 16
                else {"R0": 0.45, "A": 0.72, "B": 1.5, "C_mid": 4e5})

    fits = get_method("noise").fit_curves(_study(step), "avg@4", grid=noise_fit_grid("trend")).sort_values("n")
    assert (fits["model"] == "blocks").all() and fits["pooled"].all()
    assert fits["A"].round(9).tolist()[:2] == [fits["A"].round(9).iloc[0]] * 2
    assert fits["A"].round(9).nunique() == 2          # one curve per side of the step
    assert fits["A"].iloc[0] == pytest.approx(0.62, abs=0.01) and fits["A"].iloc[-1] == pytest.approx(0.72, abs=0.01)
