"""How well the shared model's 95% band at C_max covers a known truth, fitted on a study's data up
to each rung but the last, at widenings of the model's sd (`calibration`, `coverage_table`).
The schema's defaults sweep.reach and sweep.inflation rest on these coverages (config/schema.yaml;
`python benchmarks/bench_adaptive_strata.py --calibration` prints them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.analysis.adaptive.draws import Horizon
from isocompute.analysis.adaptive.rule import rule_settings
from isocompute.analysis.adaptive.shared import TrendDraws, trend_ensemble
from isocompute.analysis.adaptive.strata import B_PS, C_MAX, Truth
from isocompute.analysis.fits.fitter import fit_study
from isocompute.sweep import SweepSettings

INFLATIONS = (1.0, 2.0, 3.0)       # the coverage at each of these widenings of the model's sd


def calibration(truth: Truth, evals: pd.DataFrame, p: SweepSettings) -> dict:
    """The shared model's 95% band at C_max against the truth, fitted on the grid's data up to each
    rung but the last: {doublings from C_max: (runs covered, runs judged)} over the B_p where the
    model is in force (`shared.trend_ensemble`), its collapse test at the rule's level (`rule.rule_settings`)."""
    s = rule_settings(None, p, C_MAX)
    out = {}
    rng = np.random.default_rng(0)
    for budget in p.budgets(C_MAX)[:-1]:
        seen, fits, _ = fit_study(evals[evals["compute"] <= budget * (1 + 1e-9)], s)
        d = round(float(np.log2(C_MAX / budget)), 2)
        for B_p in B_PS:
            for k in INFLATIONS:
                how = TrendDraws(s.metric, s.pool_degree, s.pool_alpha, draws=1000, inflation=k, runs=p.run_effects,
                                 b_slope=p.b_slope)
                ens = trend_ensemble(seen, fits, B_p, Horizon(budget, C_MAX, 2), how, rng)
                if ens is None:
                    break
                lo, hi = np.percentile(ens.curves[:, :, -1], [2.5, 97.5], axis=0)
                true = np.array([truth.value(B_p, int(n), C_MAX) for n in ens.n]).ravel()
                got = out.setdefault((k, d), [0, 0])
                got[0] += int(((true >= lo) & (true <= hi)).sum())
                got[1] += true.size
    return out


def coverage_table(table: pd.DataFrame) -> pd.DataFrame:
    """Coverage of the model's 95% band at C_max per stratum (rows) and doublings from C_max (columns)."""
    rows = []
    for r in table.itertuples():
        for (k, d), (hit, total) in r.calibration.items():
            rows.append({"stratum": r.stratum, "inflation": k, "doublings": d, "hit": hit, "total": total})
    if not rows:
        return pd.DataFrame()
    g = pd.DataFrame(rows).groupby(["inflation", "stratum", "doublings"], sort=False)[["hit", "total"]].sum()
    return (g["hit"] / g["total"]).unstack("doublings")
