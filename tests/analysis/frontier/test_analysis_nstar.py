"""The n* law: running average, sigmoid fit, bootstrap intervals."""

import numpy as np
import pytest

from isocompute.analysis.fits.fitter import Fitter
from isocompute.analysis.fits.methods import get_method
from isocompute.analysis.fits.noise import NOISE_FIT_GRID
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import synthetic_evals
from isocompute.analysis.frontier.bootstrap import bootstrap_fits, bootstrap_law_intervals, bootstrap_laws
from isocompute.analysis.frontier.envelope import frontier_fixed_bp
from isocompute.analysis.frontier.nstar import fit_n_star_law, fit_n_star_laws, n_star_laws, n_star_sigmoid


def test_n_star_sigmoid_values():
    assert n_star_sigmoid(6.5, 3, 9, 2.0, 6.5) == pytest.approx(6.0)
    assert n_star_sigmoid(100, 3, 9, 2.0, 6.5) == pytest.approx(9.0)
    assert n_star_sigmoid(-100, 3, 9, 2.0, 6.5) == pytest.approx(3.0)


@pytest.mark.parametrize("L, U, k, c0", [(3, 9, 2.0, 6.5), (3, 6, 5.0, 5.0), (9, 4, 3.0, 7.0)])
def test_law_fit_recovers_known_parameters(L, U, k, c0):
    x = np.linspace(4, 9, 100)
    law = fit_n_star_law(x, n_star_sigmoid(x, L, U, k, c0))
    assert law.status == "ok"
    assert (law.L, law.U, law.c0) == pytest.approx((L, U, c0), abs=0.05)
    assert law.k == pytest.approx(k, rel=0.05)
    polished = fit_n_star_law(x, n_star_sigmoid(x, L, U, k, c0), polish=True)
    assert (polished.L, polished.U, polished.k, polished.c0) == pytest.approx((L, U, k, c0), abs=1e-3)


def test_law_fit_degenerate_inputs():
    x = np.linspace(4, 9, 20)
    const = fit_n_star_law(x, np.full(20, 5.0))
    assert const.status == "constant" and const.L == const.U == 5.0 and const.k == 0.0
    assert fit_n_star_law(x[:3], [3.0, 4.0, 5.0]).status == "too_few_points"
    y = np.where(x > 6.5, 6.0, 3.0)
    y[:5] = np.nan                                    # NaN points are left out
    law = fit_n_star_law(x, y)
    assert law.status == "ok" and law.n_points == 15 and law.U > law.L


def test_vectorised_law_fit_agrees_with_single_fits():
    x = np.linspace(4, 9, 60)
    Y = np.stack([n_star_sigmoid(x, 3, 7, 2.0, 6.0), n_star_sigmoid(x, 4, 8, 4.0, 7.0), np.full(60, 5.0)])
    res = fit_n_star_laws(x, Y)
    assert res["status"].tolist() == ["ok", "ok", "constant"]
    for i in range(2):
        single = fit_n_star_law(x, Y[i])
        assert (res["L"][i], res["U"][i], res["k"][i], res["c0"][i]) == pytest.approx(
            (single.L, single.U, single.k, single.c0))


@pytest.fixture(scope="module")
def noisy():
    evals = synthetic_evals(B_ps=(32,), ns=(8, 16, 32, 64, 128), points=100, noise=0.01, seed=3)
    fits = get_method("noise").fit_curves(evals, "avg@4")
    laws = n_star_laws(frontier_fixed_bp(fits))
    return evals, fits, laws


def test_bootstrap_intervals_bracket_the_estimate_and_are_reproducible(noisy):
    evals, fits, laws = noisy
    boot = bootstrap_fits(evals, Fitter(AnalysisSettings(bootstrap=40, seed=7, fit_grid=NOISE_FIT_GRID)))
    assert len(boot) == 40 * len(fits)
    assert set(boot["replicate"]) == set(range(40))
    out = bootstrap_law_intervals(boot, fits, laws)
    row = out.iloc[0]
    assert row["n_boot"] >= 30
    for p in ("L", "U", "k", "c0"):
        assert row[f"{p}_lo"] <= row[f"{p}_hi"]
    assert row["U_lo"] - 0.5 <= row["U"] <= row["U_hi"] + 0.5
    again = bootstrap_law_intervals(bootstrap_fits(evals, Fitter(AnalysisSettings(bootstrap=40, seed=7, fit_grid=NOISE_FIT_GRID))), fits, laws)
    assert again.equals(out)
    other = bootstrap_law_intervals(bootstrap_fits(evals, Fitter(AnalysisSettings(bootstrap=40, seed=8, fit_grid=NOISE_FIT_GRID))), fits, laws)
    assert not other.equals(out)


def test_bootstrap_laws_keep_the_draws_behind_the_intervals(noisy):
    evals, fits, laws = noisy
    boot = bootstrap_fits(evals, Fitter(AnalysisSettings(bootstrap=40, seed=7, fit_grid=NOISE_FIT_GRID)))
    out, bands, draws = bootstrap_laws(boot, fits, laws)
    assert bands is None and out.equals(bootstrap_law_intervals(boot, fits, laws))
    assert draws.columns.tolist() == ["B_p", "replicate", "L", "U", "k", "c0", "status"]
    assert draws["replicate"].tolist() == list(range(40)) and (draws["B_p"] == 32).all()
    good = draws[draws["status"].isin(["ok", "constant"])]
    row = out.iloc[0]
    assert len(good) == row["n_boot"]
    for p in ("L", "U", "k", "c0"):
        assert (np.percentile(good[p], 2.5), np.percentile(good[p], 97.5)) == pytest.approx((row[f"{p}_lo"], row[f"{p}_hi"]))


def test_law_fit_of_an_empty_frontier_is_a_status_not_an_error():
    import numpy as np

    from isocompute.analysis.frontier.nstar import fit_n_star_law

    law = fit_n_star_law(np.array([]), np.array([]))
    assert law.status == "too_few_points"
