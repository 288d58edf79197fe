"""ScaleRL sigmoid fits: known answers, the grid search, degenerate curves."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar

from isocompute.analysis.fits.methods import get_method
from isocompute.analysis.fits.sigmoid import FitGrid, fit_replicates, fit_sigmoid, predict, sigmoid_reward


def test_sigmoid_reward_values():
    assert sigmoid_reward(0.0, 0.3, 0.7, 1.5, 1e5) == pytest.approx(0.3)
    assert sigmoid_reward(1e5, 0.3, 0.7, 1.5, 1e5) == pytest.approx(0.5)
    assert sigmoid_reward(1e12, 0.3, 0.7, 1.5, 1e5) == pytest.approx(0.7, abs=1e-6)
    # R0 + (A - R0) / (1 + (C_mid / C)^B) at C = C_mid / 2, B = 2: 0.3 + 0.4 / 5
    assert sigmoid_reward(5e4, 0.3, 0.7, 2.0, 1e5) == pytest.approx(0.38)
    # a flat fit (A == R0, B and C_mid undefined) is constant
    assert np.allclose(sigmoid_reward([0, 1, 1e9], 0.4, 0.4, np.nan, np.nan), 0.4)


@pytest.mark.parametrize("A, B, C_mid", [(0.7, 1.5, 1e5), (0.9, 0.8, 3e6), (0.55, 3.0, 2e4)])
def test_fit_recovers_known_parameters(A, B, C_mid):
    c = np.geomspace(C_mid / 50, C_mid * 50, 200)
    y = sigmoid_reward(c, 0.3, A, B, C_mid)
    fit = fit_sigmoid(c, y, 0.3)
    assert fit.status == "ok"
    assert fit.A == pytest.approx(A, abs=0.0101)
    assert fit.B == pytest.approx(B, rel=0.1)
    assert fit.C_mid == pytest.approx(C_mid, rel=0.1)
    # A lies on ScaleRL's grid: R0 + a multiple of 0.005, within [R0, 1]
    assert (fit.A - 0.3) / 0.005 == pytest.approx(round((fit.A - 0.3) / 0.005), abs=1e-9)


def test_grid_search_matches_brute_force_scalerl():
    """Our vectorised search reaches ScaleRL's minimum: A on its grid, C_mid on
    its grid, and for each pair a least-squares fit of B alone."""
    rng = np.random.default_rng(1)
    c = np.geomspace(1e3, 1e6, 25)
    R0 = 0.75
    y = sigmoid_reward(c, R0, 0.9, 1.3, 3e4) + rng.normal(0, 0.005, c.size)
    grid = FitGrid(c_mid_points=8, b_points=16, b_refine_points=17)
    fit = fit_sigmoid(c, y, R0, grid=grid)
    best = np.inf
    for A in R0 + 0.005 * np.arange(int(round((1 - R0) / 0.005)) + 1):
        for C_mid in np.exp(np.linspace(np.log(c.min()), np.log(c.max()), 8)):
            res = minimize_scalar(lambda b: ((sigmoid_reward(c, R0, A, b, C_mid) - y) ** 2).sum(),
                                  bounds=grid.b_bounds, method="bounded", options={"xatol": 1e-6})
            best = min(best, res.fun)
    assert fit.sse <= best * (1 + 1e-3) + 1e-12


def _run(values, compute=None, B_p=2, n=4):
    steps = np.arange(len(values))
    return pd.DataFrame({"B_p": B_p, "n": n, "step": steps,
                         "compute": B_p * n * steps if compute is None else compute, "avg@4": values})


def test_degenerate_curves_get_a_status():
    flat = _run([0.4] * 10)
    down = _run([0.4, 0.3, 0.35, 0.2, 0.3, 0.1])
    few = _run([0.3, 0.5, 0.6])                     # 2 record points with compute > 0
    only_base = _run([0.3])
    no_base = _run([0.3, 0.4, 0.5, 0.6, 0.7]).iloc[1:]
    for frame, status in ((flat, "flat"), (down, "flat"), (few, "too_few_points"),
                          (only_base, "no_positive_compute"), (no_base, "no_base_eval")):
        fits = get_method("paper").fit_curves(frame, "avg@4")
        assert fits["status"].tolist() == [status], status
    fits = get_method("paper").fit_curves(flat, "avg@4")
    assert fits["A"].iloc[0] == pytest.approx(0.4) and np.isnan(fits["B"].iloc[0])
    # a flat curve still predicts R0; unusable fits predict NaN
    assert np.allclose(predict(fits, [1, 10]), 0.4)
    assert np.isnan(predict(get_method("paper").fit_curves(few, "avg@4"), [1, 10])).all()


def test_fit_curves_one_row_per_run_on_record_points():
    c = np.arange(0, 101) * 1000.0
    y = sigmoid_reward(c, 0.2, 0.8, 2.0, 2e4)
    frame = pd.concat([_run(y, c, B_p=10, n=100), _run(y, c, B_p=20, n=50)], ignore_index=True)
    fits = get_method("paper").fit_curves(frame, "avg@4")
    assert fits[["B_p", "n"]].values.tolist() == [[10, 100], [20, 50]]
    assert (fits["status"] == "ok").all()
    assert fits["R0"].tolist() == [0.2, 0.2]
    # y rises monotonically: one record per 0.01 bin it enters above R0's bin
    bins = np.floor(np.round(y / 0.01, 9))
    assert fits["n_points"].iloc[0] == len(set(bins[1:]) - {bins[0]})
    assert fits["A"].iloc[0] == pytest.approx(0.8, abs=0.0101)
    assert fits["compute_max"].iloc[0] == 1e5 and fits["compute_min"].iloc[0] == 1e3


def test_min_compute_excludes_points_from_the_fit():
    c = np.arange(0, 51) * 1000.0
    frame = _run(sigmoid_reward(c, 0.2, 0.8, 2.0, 2e4), c)
    all_points = get_method("paper").fit_curves(frame, "avg@4")["n_points"].iloc[0]
    late = get_method("paper").fit_curves(frame, "avg@4", min_compute=2e4)["n_points"].iloc[0]
    assert 0 < late < all_points


def test_replicates_of_the_identity_resample_match_the_fit():
    c = np.arange(1, 81) * 500.0
    y = sigmoid_reward(c, 0.3, 0.7, 1.2, 1e4) + np.random.default_rng(0).normal(0, 0.01, c.size)
    single = fit_replicates(c, y, 0.3)
    same = FitGrid(boot_refine_c_mid=100)         # replicates refine every C_mid, like the fit
    many = fit_replicates(c, y, 0.3, np.tile(np.arange(c.size), (3, 1)), grid=same)
    for key in ("A", "B", "C_mid", "sse"):
        assert np.allclose(many[key], single[key][0])
    # The bootstrap's shortcuts (float32, B refined at the 4 best C_mid only)
    # lose little: its optimum's SSE is within a few percent of the fit's.
    fast = fit_replicates(c, y, 0.3, np.tile(np.arange(c.size), (2, 1)), dtype=np.float32)
    assert fast["sse"][0] <= 1.05 * single["sse"][0]
    assert fast["A"][0] == pytest.approx(single["A"][0], abs=0.0201)
