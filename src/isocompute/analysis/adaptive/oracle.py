"""The oracle floor of the adaptive sweep's bill on a known truth (`oracle_share`): the least any
rule told the true curves could train so that at every probe budget some run trained that far is
within epsilon of the best. benchmarks/bench_adaptive_strata.py prints it per stratum beside the
sweep's bill (`scoring.judge`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.analysis.adaptive.strata import B_PS, C_MAX, NS, SPAN_DOUBLINGS, Truth


def oracle_share(truth: Truth, evals: pd.DataFrame, epsilon: float | dict, eval_rollouts: float,
                 points: int = 161) -> float:
    """The least bill, as a share of the grid's, of a sweep that knows the curves: per B_p, covering
    the probed range from C_max down, each time with the run within epsilon of the best that stays
    so furthest down (trained to where the cover starts). Validation: a run's evaluations up to
    where it is trained. `epsilon`: one regret, or one per B_p ({B_p: regret})."""
    grid = np.geomspace(C_MAX / 2 ** SPAN_DOUBLINGS, C_MAX, points)
    spent = 0.0
    for B_p in B_PS:
        eps = epsilon[B_p] if isinstance(epsilon, dict) else epsilon
        ok = np.array([truth.value(B_p, n, grid) >= truth.best(B_p, NS, grid) - eps - 1e-12 for n in NS])
        trained = np.zeros(len(NS))
        g = points - 1
        while g >= 0:
            # the run that covers grid point g and, going down, the most points after it
            run = [np.argmin(np.append(ok[i, :g + 1][::-1], False)) if ok[i, g] else -1 for i in range(len(NS))]
            i = int(np.argmax(run))
            trained[i] = max(trained[i], grid[g])
            g -= max(run[i], 1)
        for i, n in enumerate(NS):
            rows = evals[(evals["B_p"] == B_p) & (evals["n"] == n)]
            spent += np.floor(trained[i] / (B_p * n) + 1e-9) * B_p * n
            spent += eval_rollouts * int((rows["compute"] <= trained[i] * (1 + 1e-9)).sum()) if trained[i] else 0.0
    total = float(evals.groupby(["B_p", "n"])["compute"].max().sum()) + eval_rollouts * len(evals)
    return spent / total
