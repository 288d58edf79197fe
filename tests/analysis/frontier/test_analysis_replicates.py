"""Seed replicates (a bootstrap over runs), intervals on the frontier, and a
tokens column missing in some runs."""

import warnings

import numpy as np
import pytest

from isocompute.analysis.fits.fitter import Fitter
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.analysis.fits.synthetic import EvalNoise, crossover_params, synthetic_study
from isocompute.analysis.frontier.bootstrap import bootstrap_fits, resampling_unit
from isocompute.analysis.inputs.check import check_evals
from isocompute.analysis.pipeline import run_analysis
from isocompute.errors import InputError
from isocompute.train.recipe import evaluation_steps

C_MAX = 2.0 ** 19
NS = (8, 32, 128)


def _study(seeds, **noise):
    return synthetic_study((32,), NS, c_max=C_MAX, eval_steps=lambda B, M: evaluation_steps(M, 10),
                           noise=EvalNoise(seeds=seeds, **noise))


@pytest.fixture(scope="module")
def seeded():
    return _study(3, problems=60, seed=5)


def test_seeds_may_repeat_steps_but_not_within_a_seed(seeded):
    checked = check_evals(seeded)
    assert checked["seed"].nunique() == 3
    twice = seeded.copy()
    with pytest.raises(InputError, match="must equal B_p"):
        check_evals(twice.assign(compute=twice["compute"] + 1))
    twice.loc[twice.index[1], ["step", "compute"]] = twice[["step", "compute"]].iloc[0].to_numpy()
    with pytest.raises(InputError, match="seed"):
        check_evals(twice)
    with pytest.raises(InputError, match="problems"):
        check_evals(seeded.assign(problems=0))


def test_resampling_unit_follows_the_seeds(seeded):
    assert resampling_unit(seeded) == "seeds"
    assert resampling_unit(seeded[seeded["seed"] == 0]) == "points"
    assert resampling_unit(seeded.drop(columns="seed").drop_duplicates(["B_p", "n", "step"])) == "points"


@pytest.mark.parametrize("method", ["noise", "paper"])
def test_bootstrap_over_seeds_refits_every_cell(seeded, method):
    fitter = Fitter(AnalysisSettings(method=method, bootstrap=12, seed=1))
    boot = bootstrap_fits(seeded, fitter)
    assert len(boot) == 12 * len(NS)
    assert boot["status"].isin(["ok", "flat"]).mean() > 0.9
    again = bootstrap_fits(seeded, fitter)
    assert again.equals(boot)


def test_seed_intervals_on_frontier_and_law_cover_the_truth(seeded):
    res = run_analysis(seeded, AnalysisSettings(bootstrap=40, grid_points=30, seed=2))
    assert res["settings"].method == "noise"
    front = res["frontier"]
    for name in ("reward", "log2_n_star_avg"):
        lo, hi = front[f"{name}_lo"].to_numpy(), front[f"{name}_hi"].to_numpy()
        both = np.isfinite(lo) & np.isfinite(hi)     # log2 n* has no band below where every run has data
        assert both.mean() > 0.5 and np.all(lo[both] <= hi[both] + 1e-12)
    truth = np.max([sigmoid_reward(front["compute"].to_numpy(), **crossover_params(32, n)) for n in NS], axis=0)
    inside = (front["reward_lo"] - 0.005 <= truth) & (truth <= front["reward_hi"] + 0.005)
    assert inside.mean() > 0.7
    law = res["n_star_fit"].iloc[0]
    assert law["n_boot"] >= 30 and law["U_lo"] <= law["U_hi"]
    assert res["base"]["n_base"].iloc[0] == 3 * len(NS)


def test_a_run_without_tokens_leaves_the_rest_of_the_analysis_intact():
    evals = _study(1, sd=0.02, seed=3)
    evals.loc[(evals["n"] == 32) & (evals["step"] > 0), "tokens"] = np.nan
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run_analysis(evals, AnalysisSettings(bootstrap=0, grid_points=20))
    assert any("tokens" in str(w.message) and "n=32" in str(w.message) for w in caught)
    assert res["fits_tokens"]["n"].tolist() == [8, 128]
    assert res["fits"]["n"].tolist() == list(NS) and (res["fits"]["status"] == "ok").all()
    assert "frontier_tokens" in res


@pytest.mark.parametrize("method", ["noise", "paper"])
def test_every_bootstrapped_study_gets_bands(method):
    from isocompute.analysis.fits.synthetic import synthetic_evals

    evals = synthetic_evals(B_ps=(32, 64), ns=(8, 16, 32), points=30, noise=0.02, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_analysis(evals, AnalysisSettings(method=method, bootstrap=8, grid_points=15,
                           bootstrap_studies=("fixed_B_p", "fixed_batch", "joint")))
    for front, law in (("frontier", "n_star_fit"), ("frontier_fixed_batch", "n_star_fit_fixed_batch"),
                       ("frontier_joint", "n_star_fit_joint")):
        assert res[front][["reward_lo", "reward_hi"]].notna().all().all(), front
        assert (res[law]["n_boot"] > 0).all(), law
