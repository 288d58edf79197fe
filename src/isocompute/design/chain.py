"""The analysis' own default chain on one evaluation table, as a study design's replications are
judged (`analyse`: fit_study, the bootstrap of frontier_tables, recommendation_table, the claims
of `claims`), and the rate of a 0/1 outcome over replications with its Clopper-Pearson interval
(`rate`). benchmarks/bench_coverage.py judges the analysis' intervals with the same two. And how
likely a count of successes is under predictions taken at their word (`calibrated_p`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import beta

from isocompute.analysis.fits.fitter import Fitter, fit_study
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.frontier.recommend import recommendation_table
from isocompute.analysis.inputs.check import check_evals
from isocompute.analysis.pipeline import _Clock, frontier_tables


def analyse(evals: pd.DataFrame, settings: AnalysisSettings, budgets) -> dict:
    """The tool's tables: fits, frontier (with bands), n_star_fit (with intervals and claims), recommendations
    (at `budgets`: a study's C_max)."""
    evals = check_evals(evals, settings.metric)
    out = {"settings": settings}
    out["evals"], out["fits"], base = fit_study(evals, settings)
    R0 = None if base is None else float(base["R0"].iloc[0])
    out.update(frontier_tables(out["evals"], out["fits"], Fitter(settings, R0), _Clock()))
    out["recommendations"] = recommendation_table(out, list(budgets), extrapolate=not settings.observed_range,
                                                  ci=settings.ci, max_extrapolation=settings.max_extrapolation)
    return out


def rate(values) -> tuple[float, int, float, float]:
    """Mean of 0/1 values (NaN left out), their count, and the Clopper-Pearson 95% interval."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if v.size == 0:
        return np.nan, 0, np.nan, np.nan
    k, n = int(v.sum()), v.size
    return (k / n, n, *clopper_pearson(k, n))


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The Clopper-Pearson 95% interval of k successes in n > 0 trials."""
    lo = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def calibrated_p(successes, predictions) -> float:
    """Two-sided p of `successes` among trials that succeed independently with `predictions` (the
    Poisson-binomial, exactly): the summed probability of every count no more likely than the one seen."""
    probs = np.clip(np.asarray(predictions, dtype=float), 0.0, 1.0)
    dist = np.array([1.0])
    for q in probs:                                   # the count's distribution, one trial at a time
        dist = np.convolve(dist, [1.0 - q, q])
    k = int(successes)
    return float(min(1.0, dist[dist <= dist[k] * (1 + 1e-7)].sum()))
