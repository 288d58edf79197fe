"""The reliability bar itself (isocompute.design.diagnosis, chain.calibrated_p): the p of a bin's count
under its predictions is the exact Poisson-binomial one; a forecaster calibrated exactly passes a bar
of one judged bin about as often as Clopper-Pearson covers (95% or more), passes a bar of many bins
less often, and less still when a pilot's designs share their truth; the residual correlation tells
designs that share a pilot's fate from independent ones."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from isocompute.design.chain import calibrated_p
from isocompute.design.diagnosis import bar_pass_rate, residual_correlation


def test_calibrated_p_is_the_exact_poisson_binomial_p():
    assert calibrated_p(16, [0.5] * 20) == pytest.approx(binomtest(16, 20, 0.5).pvalue)
    probs = [0.1, 0.5, 0.7, 0.9, 0.3]
    counts = {k: 0.0 for k in range(6)}
    for hits in itertools.product([0, 1], repeat=5):            # every outcome, by hand
        counts[sum(hits)] += np.prod([q if h else 1 - q for q, h in zip(probs, hits)])
    for k in range(6):
        assert calibrated_p(k, probs) == pytest.approx(sum(v for v in counts.values() if v <= counts[k] + 1e-12))


def _rows(preds_by_pilot: list[list[float]], claim: str = "rises") -> pd.DataFrame:
    return pd.DataFrame([{"truth_seed": i, "shape": "mid", "claim": claim, "design": f"d{j}", "predicted": p,
                          "successes": 0, "outcomes": 1, "refused": ""}
                         for i, preds in enumerate(preds_by_pilot) for j, p in enumerate(preds)])


def test_a_calibrated_forecaster_passes_one_bin_as_often_as_its_interval_covers():
    one = _rows([[0.5] * 4 for _ in range(25)])                  # 100 designs in the [0.4, 0.6) bin
    assert bar_pass_rate(one, sims=400) >= 0.93
    many = pd.concat([_rows([[p] * 4 for _ in range(10)], claim) for p in (0.1, 0.3, 0.5, 0.7, 0.9)
                      for claim in ("rises", "determined", "U")], ignore_index=True)
    alone, shared = bar_pass_rate(many, sims=400), bar_pass_rate(many, sims=400, rho=0.7)
    assert alone < 0.9 and shared < alone                        # 15 bins: more chances to miss one
    assert bar_pass_rate(_rows([[0.5] * 4]), sims=10) == 1.0      # nothing judged: nothing to miss


def test_the_residual_correlation_tells_shared_fates_from_independent_ones():
    rng = np.random.default_rng(0)
    rows = _rows([[0.5] * 4 for _ in range(200)])
    fate = rng.random(200) < 0.5
    shared = rows.assign(successes=fate[rows["truth_seed"]].astype(int))
    alone = rows.assign(successes=(rng.random(len(rows)) < 0.5).astype(int))
    assert residual_correlation(shared) > 0.9 and abs(residual_correlation(alone)) < 0.1
