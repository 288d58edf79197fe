"""A run that collapses: the noise method fits it up to the collapse and holds its curve flat after
it (`fits.collapse`), so the frontier keeps the run's best checkpoint; runs that only rise are left
alone."""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.analysis.adaptive.strata import Truth
from isocompute.analysis.fits.collapse import COLUMN, collapse_cut, held
from isocompute.analysis.fits.fitter import fit_study
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
from isocompute.analysis.frontier.envelope import frontier

C_MAX = 2.0 ** 16
NS = (4, 8, 16)


def _curves(c):
    return sigmoid_reward(c, 0.4, 0.6, 1.5, 2.0 ** 12)


def test_a_rising_run_is_flagged_at_most_at_the_level_of_the_test():
    c = np.geomspace(2 ** 6, 2 ** 16, 41)
    flagged = 0
    for seed in range(300):
        y = _curves(c) + np.random.default_rng(seed).normal(0, 0.02, c.size)
        flagged += collapse_cut(y, np.full(c.size, 0.02), alpha=0.05, window=8)[0] is not None
    assert flagged / 300 <= 0.05


def test_a_collapse_is_found_where_it_starts():
    c = np.geomspace(2 ** 6, 2 ** 16, 41)
    start = 2.0 ** 13
    truth = _curves(c) - 0.15 * np.clip(np.log2(c / start), 0, 1)
    found = []
    for seed in range(50):
        y = truth + np.random.default_rng(seed).normal(0, 0.013, c.size)
        cut, z = collapse_cut(y, np.full(c.size, 0.013), alpha=0.05, window=8)
        assert cut is not None, f"seed {seed}: z {z:.2f}"
        found.append(np.log2(c[cut]))
    assert abs(np.median(found) - 13) <= 0.5


def test_no_test_at_level_zero_or_with_too_few_evaluations():
    y = np.r_[np.linspace(0.4, 0.6, 10), np.full(10, 0.3)]
    assert collapse_cut(y, np.full(20, 0.01), alpha=0.05, window=8)[0] == 9
    assert collapse_cut(y, np.full(20, 0.01), alpha=0.0, window=8)[0] is None
    assert collapse_cut(y[:9], np.full(9, 0.01), alpha=0.05, window=8)[0] is None


def test_held_holds_nothing_where_hold_from_is_nan():
    assert held([1.0, 4.0, 9.0], np.nan).tolist() == [1.0, 4.0, 9.0]
    assert held([1.0, 4.0, 9.0], 4.0).tolist() == [1.0, 4.0, 4.0]


def _study(seed: int) -> tuple[Truth, pd.DataFrame]:
    """n = 16 leads until it collapses at C_max / 8; its best checkpoint stays the best at C_max."""
    params = {(8, n): {"R0": 0.4, "A": 0.55 + 0.05 * i, "B": 1.5, "C_mid": 2.0 ** 11} for i, n in enumerate(NS)}
    truth = Truth("unstable", params, {(8, 16): (C_MAX / 8, 0.2)})
    evals = synthetic_study((8,), NS, c_max=C_MAX, reward=truth.reward, noise=EvalNoise(sd=0.01, seed=seed),
                            eval_steps=lambda B, M: np.unique(np.geomspace(1, M, 40).astype(int).tolist() + [0]))
    return truth, evals


def test_the_frontier_keeps_a_collapsed_runs_best_checkpoint():
    truth, evals = _study(0)
    seen, fits, _ = fit_study(evals, AnalysisSettings(method="noise", bootstrap=0))
    row = fits.set_index("n").loc[16]
    assert np.isfinite(row["hold_from"]) and C_MAX / 16 <= row["hold_from"] <= C_MAX / 4
    assert fits.set_index("n").loc[[4, 8], "hold_from"].isna().all()
    assert seen.loc[(seen["n"] == 16) & (seen["compute"] > row["hold_from"]), COLUMN].all()
    f = frontier(fits, [C_MAX / 2, C_MAX])
    assert f["n_star"].tolist() == [16, 16]                      # its best checkpoint, held
    assert abs(f["reward"].iloc[-1] - truth.value(8, 16, C_MAX)) < 0.02
    # Without the test, the fit through the collapse loses the run's best checkpoint at C_max.
    _, plain, _ = fit_study(evals, AnalysisSettings(method="noise", bootstrap=0, collapse_alpha=0.0))
    assert plain["hold_from"].isna().all()
    assert frontier(plain, [C_MAX])["n_star"].iloc[0] != 16


def test_a_dip_of_two_evaluations_is_held_by_the_analysis_but_not_by_the_rule_at_each_rung(monkeypatch):
    """The rule tests every run anew at each rung: at the analysis' level a dip the run recovers
    from would be held flat at one rung after another, so the rule shares the level over its rungs."""
    from isocompute.analysis.adaptive import rule
    from isocompute.sweep import SweepSettings

    y = np.r_[np.full(10, 0.03), 0.012, 0.012]            # a dip of two evaluations, 2.5 standard errors
    z_dip = collapse_cut(y, np.full(12, 0.008), alpha=0.05, window=8)
    assert z_dip[0] is not None and collapse_cut(y, np.full(12, 0.008), alpha=0.05 / 11, window=8)[0] is None
    seen_alpha = []
    real = rule.fit_study
    monkeypatch.setattr(rule, "fit_study", lambda ev, s: (seen_alpha.append(s.collapse_alpha), real(ev, s))[1])
    _, evals = _study(0)
    rule.decide(evals, rung_compute=C_MAX / 4, c_max=C_MAX)
    rungs = len(SweepSettings.of(None).budgets(C_MAX))
    assert seen_alpha == [AnalysisSettings().collapse_alpha / rungs]
