"""The noise-aware method: standard errors, pooled R0, weighted fits of all
points, significant records, in-range frontiers, fitted optima and sensitivity."""

import warnings

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits.fitter import Fitter
from isocompute.analysis.fits.methods import get_method
from isocompute.analysis.fits.noise import add_standard_errors, fit_weighted, pooled_base, samples_per_problem
from isocompute.analysis.fits.records import record_points, significant_record_mask
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.analysis.fits.synthetic import EvalNoise, crossover_params, synthetic_study
from isocompute.analysis.frontier.envelope import frontier
from isocompute.analysis.frontier.studies import metric_optima, sensitivity
from isocompute.schedule import compute_schedule_steps
from isocompute.train.recipe import evaluation_steps

C_MAX = 2.0 ** 20


def every_10(B, M_max):
    return evaluation_steps(M_max, 10)


def _study(seed, ns=(8, 32, 128), **noise):
    return synthetic_study((32,), ns, c_max=C_MAX, eval_steps=every_10, noise=EvalNoise(seed=seed, **noise))


def test_standard_errors_from_problems_and_samples():
    evals = _study(0, ns=(8,), problems=300)
    out, source = add_standard_errors(evals, "avg@4")
    assert source == "problems"
    p = out["avg@4"].rolling(9, center=True, min_periods=1).mean()
    assert out["avg@4_se"].to_numpy() == pytest.approx(np.sqrt(p * (1 - p) / 1200).to_numpy(), rel=1e-9)
    assert samples_per_problem(evals, "avg@4")[0] == 4 and samples_per_problem(evals, "best@4")[0] == 1
    assert add_standard_errors(out, "avg@4")[1] == "table"
    assert add_standard_errors(evals.drop(columns="problems"), "avg@4")[1] == "unknown"


def test_pooled_base_weights_step_zero_evaluations():
    evals = pd.DataFrame({"B_p": 1, "n": [1, 2, 4], "step": 0, "compute": 0, "avg@4": [0.4, 0.5, 0.6],
                          "avg@4_se": [0.01, 0.02, 0.02]})
    base = pooled_base(evals, "avg@4")
    w = np.array([1 / 0.01 ** 2, 1 / 0.02 ** 2, 1 / 0.02 ** 2])
    assert base["R0"] == pytest.approx((w * [0.4, 0.5, 0.6]).sum() / w.sum())
    assert base["R0_se"] == pytest.approx(1 / np.sqrt(w.sum())) and base["n_base"] == 3


def test_weighted_fit_recovers_a_known_curve_under_binomial_noise():
    evals, _ = add_standard_errors(_study(1, ns=(32,), problems=300), "avg@4")
    fits = get_method("noise").fit_curves(evals, "avg@4", R0=0.45)
    p = crossover_params(32, 32)
    row = fits.iloc[0]
    assert row["status"] == "ok" and row["R0"] == 0.45
    assert row["A"] == pytest.approx(p["A"], abs=0.02)
    assert row["n_points"] == row["n_evals"] == (evals["step"] > 0).sum()
    c = np.geomspace(row["compute_min"], row["compute_max"], 20)
    truth = sigmoid_reward(c, p["R0"], p["A"], p["B"], p["C_mid"])
    assert np.abs(sigmoid_reward(c, row["R0"], row["A"], row["B"], row["C_mid"]) - truth).max() < 0.01


def test_weighted_fit_replicates_match_the_single_fit():
    c = np.geomspace(1e3, 1e6, 60)
    y = sigmoid_reward(c, 0.3, 0.7, 1.5, 3e4) + np.random.default_rng(0).normal(0, 0.02, c.size)
    one = fit_weighted(c, y, 0.3, np.ones(c.size))
    two = fit_weighted(c, y, 0.3, np.ones((c.size, 2)))
    for key in ("A", "B", "C_mid"):
        assert two[key] == pytest.approx([one[key][0]] * 2)
    assert fit_weighted(c[:2], y[:2], 0.3, np.ones(2))["status"].tolist() == ["too_few_points"]


def test_frontier_bias_at_the_budget_is_small_for_noise_and_large_for_paper():
    """Every-10-steps schedule, sigma 0.03: n = 8 has 16x the evaluations of n = 128."""
    truth = max(sigmoid_reward(C_MAX, **{k: v for k, v in crossover_params(32, n).items()})
                for n in (8, 32, 128))
    bias = {"noise": [], "paper": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(12):
            evals = _study(seed, sd=0.03)
            for method, extrapolate in (("noise", False), ("paper", True)):
                f = frontier(get_method(method).fit_curves(evals, "avg@4"), [C_MAX], extrapolate=extrapolate)
                bias[method].append(f["reward"].iloc[0] - truth)
    assert abs(np.mean(bias["noise"])) < 0.01
    assert np.mean(bias["paper"]) > 0.03


def test_significant_records_need_a_rise_of_z_standard_errors():
    v = [0.40, 0.43, 0.47, 0.46, 0.52, 0.53]
    assert significant_record_mask(v, 0.02, z=2).tolist() == [True, False, True, False, True, False]
    assert significant_record_mask(v, 0.0, z=2).tolist() == [True, True, True, False, True, True]
    curve = pd.DataFrame({"compute": np.arange(6.0), "step": np.arange(6), "avg@4": v, "avg@4_se": 0.02})
    assert record_points(curve, method="noise")["compute"].tolist() == [0, 2, 4]
    with pytest.raises(ValueError, match="avg@4_se"):
        record_points(curve.drop(columns="avg@4_se"), method="noise")


def test_frontier_uses_each_curve_only_where_its_run_has_data():
    fits = pd.DataFrame({"B_p": 32, "n": [8, 64], "R0": 0.3, "A": [0.5, 0.9], "B": 1.0, "C_mid": [1e3, 1e3],
                         "status": "ok", "compute_min": [10.0, 1e4], "compute_max": [1e6, 1e5]})
    grid = [100.0, 5e4, 5e5]
    inside = frontier(fits, grid, extrapolate=False)
    assert inside["n_star"].tolist() == [8, 64, 8]
    assert frontier(fits, grid, extrapolate=True)["n_star"].tolist() == [64, 64, 64]


def test_noise_method_warns_and_estimates_the_error_without_problems():
    evals = _study(2, ns=(8, 32), sd=0.03)
    with pytest.warns(UserWarning, match="same standard error"):
        fits = get_method("noise").fit_curves(evals, "avg@4")
    assert fits["se"].iloc[0] == pytest.approx(0.03, rel=0.15)


def test_optima_and_sensitivity_from_fitted_curves_ignore_noise_alone():
    """Identical true curves for every n: the running maxima's spread is noise."""
    same = lambda B_p, n: crossover_params(B_p, 32)  # noqa: E731
    ranges = {"paper": [], "noise": []}
    for seed in range(4):
        evals = synthetic_study((32,), (8, 16, 32, 64), c_max=C_MAX, eval_steps=every_10, params=same,
                                noise=EvalNoise(problems=60, seed=seed))
        for method in ranges:
            ranges[method].append(sensitivity(evals, Fitter(AnalysisSettings(method=method)))["range"].iloc[0])
    # what is left is the fitted curves' own error at the end of the shortest run
    assert np.mean(ranges["paper"]) > 0.03
    assert np.mean(ranges["noise"]) < 0.015
    opt = metric_optima(evals)
    assert set(opt["metric"]) == {"best@4", "worst@4"} and np.isfinite(opt["value"]).all()


def test_compute_schedule_steps_match_compute_across_batch_sizes():
    M = {B: int(2 ** 22 // B) for B in (256, 16384)}
    small = compute_schedule_steps(256, M[256], 21, min_compute=2 ** 12)
    large = compute_schedule_steps(16384, M[16384], 21, min_compute=2 ** 12)
    assert small[0] == large[0] == 0 and small[-1] == M[256] and large[-1] == M[16384]
    assert len(small) == 21 + 1 and len(large) < len(small)
    # the same compute points, up to rounding to whole steps
    assert [256 * s for s in small[-5:]] == pytest.approx([16384 * s for s in large[-5:]], rel=0.01)
    assert compute_schedule_steps(8, 0, 5) == (0,)
    with pytest.raises(ValueError):
        compute_schedule_steps(8, 100, 5, min_compute=1e9)


def test_a_sidecar_gives_a_verl_log_its_evaluation_counts(tmp_path):
    import json

    from isocompute.analysis.inputs.read import read_evals

    log = tmp_path / "run.jsonl"
    lines = [{"step": s, "data": {"val-core/math/acc/mean@4": 0.3 + 0.01 * s}} for s in range(0, 10, 2)]
    log.write_text("\n".join(json.dumps(x) for x in lines))
    (tmp_path / "run.jsonl.meta.json").write_text(json.dumps({"B_p": 4, "n": 8, "problems": 300}))
    evals = read_evals(log)
    assert evals["problems"].tolist() == [300] * 5
    assert add_standard_errors(evals, "avg@4")[1] == "problems"
