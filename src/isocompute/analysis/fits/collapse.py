"""Runs that collapse: a reward that falls for good mid-run (docs/methods.md, section 11).

An RL run can collapse (its reward falls and stays down). Its sigmoid, fitted to every
evaluation, is pulled down by the points after the collapse and misses the run's best
checkpoint, which is what the study's frontier (a running maximum) claims at any later budget.
So the noise method tests each run for a collapse and, where it finds one, fits the run up to it
and holds the fitted curve flat after it: the best checkpoint stays available at every later
budget, and the run keeps its whole observed range.

The test, per run (its seeds pooled, evaluations at positive compute in order): at each cut j,
the weighted mean of every evaluation after j against the weighted mean of the `window`
evaluations up to j,

    z_j = (mean_after - mean_before) / sqrt(se_before^2 + se_after^2)

A curve that only rises has E[z_j] >= 0 at every j, so a collapse is declared where the smallest
z_j is below -z_crit, z_crit = Phi^-1(1 - alpha / J) (a Bonferroni bound over the J cuts tried:
a run that never collapses is flagged with probability at most `alpha`), and the run is fitted up
to the cut that attains it. A cut needs two evaluations after it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from isocompute.analysis.inputs.check import se_column

COLUMN = "after_collapse"        # evaluation rows a collapse test left out of their run's fit
MIN_AFTER = 2                    # evaluations after a cut


def collapse_cut(values, se, *, alpha: float, window: int) -> tuple[int | None, float]:
    """(index of the last evaluation before the collapse, or None; the smallest z) for one run's
    evaluations in compute order, with their standard errors."""
    y, w = np.asarray(values, dtype=float), 1.0 / np.square(np.asarray(se, dtype=float))
    P = y.size
    cuts = np.arange(window - 1, P - MIN_AFTER)
    if alpha <= 0 or cuts.size == 0 or not np.isfinite(w).all():
        return None, np.nan
    csum_w, csum_wy = np.concatenate([[0.0], np.cumsum(w)]), np.concatenate([[0.0], np.cumsum(w * y)])
    before_w = csum_w[cuts + 1] - csum_w[cuts + 1 - window]
    before = (csum_wy[cuts + 1] - csum_wy[cuts + 1 - window]) / before_w
    after_w = csum_w[P] - csum_w[cuts + 1]
    after = (csum_wy[P] - csum_wy[cuts + 1]) / after_w
    z = (after - before) / np.sqrt(1.0 / before_w + 1.0 / after_w)
    k = int(np.argmin(z))
    z_crit = float(norm.isf(alpha / cuts.size))
    return (int(cuts[k]) if z[k] < -z_crit else None), float(z[k])


def mark_collapses(evals: pd.DataFrame, metric: str, *, alpha: float, window: int,
                   run_keys=("B_p", "n")) -> pd.DataFrame:
    """`evals` (with `<metric>_se`) with a boolean column `COLUMN`: True on a run's evaluations
    after its collapse (`collapse_cut`), which its fit leaves out. alpha 0: no test, all False."""
    out = evals.copy()
    out[COLUMN] = False
    col = se_column(metric)
    if alpha <= 0 or col not in out.columns:
        return out
    keys = [k for k in run_keys if k in out.columns]
    positive = out[out["compute"] > 0]
    for _, run in positive.groupby(keys, sort=False):
        run = run.sort_values(["compute", "step"], kind="stable")
        cut, _ = collapse_cut(run[metric].to_numpy(dtype=float), run[col].to_numpy(dtype=float),
                              alpha=alpha, window=window)
        if cut is not None:
            out.loc[run.index[cut + 1:], COLUMN] = True
    return out


def held(compute, hold_from) -> np.ndarray:
    """Compute as a held curve sees it: min(compute, hold_from); a NaN hold_from holds nothing."""
    return np.fmin(np.asarray(compute, dtype=float), np.asarray(hold_from, dtype=float))
