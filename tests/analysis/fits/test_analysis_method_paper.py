"""The paper's procedure is kept exactly: method='paper' reproduces numbers
frozen from the analysis before the noise-aware method existed (commit 894a4e6)."""

import numpy as np
import pytest

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import synthetic_evals
from isocompute.analysis.pipeline import run_analysis

# run_analysis(synthetic_evals(B_ps=(32, 64), ns=(8, 16, 32, 64), points=40, noise=0.02, seed=3),
#              n_boot=20, grid_points=40, seed=1) at 894a4e6, rounded as in `_snapshot`.
FROZEN = {
    'fits': [[0.765, 1.316015738, 102903.084230745, 0.003866021, 8.0], [0.78, 1.10501371, 159484.675855083, 0.001454263, 12.0], [0.855, 0.818963727, 345736.330510851, 0.002049376, 11.0], [0.805, 1.383390905, 515155.560266916, 0.000881818, 9.0], [0.74, 1.283568842, 112690.278808388, 0.001202087, 11.0], [0.77, 1.10501371, 218285.34793155, 0.001960478, 9.0], [0.81, 1.10501371, 420669.724719203, 0.004397456, 10.0], [0.825, 1.132946972, 785866.518706203, 0.003017839, 9.0]],
    'records': 87,
    'frontier_n_star': [8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 16, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 64, 64, 64, 64],
    'frontier_reward': [0.398425543, 0.531582102, 0.665343555, 0.733033148, 0.755892155, 0.802368515, 0.457336723, 0.592883148, 0.685815348, 0.723375402, 0.76868227, 0.797797133],
    'law': [[2.994202, 5.046367, 14.691203, 6.344864, 2.947141, 6.102916, 4.729978, 6.623682], [2.963731, 5.515173, 8.04975, 6.332049, 2.960535, 7.556886, 5.931651, 6.871559]],
    'law_q2': [[2.998496, 4.014894, 3.146412], [4.174949, 5.002676, 3.087654], [4.992786, 5.99883, 2.807331]],
    'joint_n_star': [8, 8, 8, 8, 8, 8, 32, 32],
    'optima': [[32.0, 0.920851211], [32.0, 0.516480898], [32.0, 0.925345796], [32.0, 0.528195774]],
    'sensitivity': [0.042088631, 0.02752796, 3.0119e-05, 0.012147893, 0.028234646, 0.026884723],
    'extrapolation': [[0.792773625, 0.820724638], [0.884830095, 0.804989121]],
    'tokens_A': [0.76, 0.775, 0.83, 0.8, 0.74, 0.765, 0.805, 0.815],
}


def _snapshot(res):
    f = res["frontier"]
    return {
        "fits": res["fits"][["A", "B", "C_mid", "sse", "n_points"]].round(9).values.tolist(),
        "records": len(res["records"]),
        "frontier_n_star": f["n_star"].astype(int).tolist(),
        "frontier_reward": f["reward"].round(9).tolist()[::7],
        "law": res["n_star_fit"][["L", "U", "k", "c0", "L_lo", "U_hi", "c0_lo", "c0_hi"]].round(6).values.tolist(),
        "law_q2": res["n_star_fit_fixed_batch"][["L", "U", "c0"]].round(6).values.tolist(),
        "joint_n_star": res["frontier_joint"]["n_star"].astype(int).tolist()[::5],
        "optima": res["optima"][["n_opt", "value"]].round(9).values.tolist(),
        "sensitivity": res["sensitivity"]["range"].round(9).tolist(),
        "extrapolation": res["extrapolation"][["predicted_reward", "observed_reward"]].round(9).values.tolist(),
        "tokens_A": res["fits_tokens"]["A"].round(9).tolist(),
    }


def test_paper_method_reproduces_the_frozen_numbers():
    evals = synthetic_evals(B_ps=(32, 64), ns=(8, 16, 32, 64), points=40, noise=0.02, seed=3)
    got = _snapshot(run_analysis(evals, AnalysisSettings(method="paper", bootstrap=20, grid_points=40, seed=1)))
    assert got.keys() == FROZEN.keys()
    for key, want in FROZEN.items():
        assert np.asarray(got[key], dtype=float) == pytest.approx(np.asarray(want, dtype=float), abs=2e-6), key
