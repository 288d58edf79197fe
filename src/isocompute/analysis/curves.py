"""One sigmoid curve per run by the study's method: `fit_curves`.

The method 'noise' (the default) is `fits_noise.fit_curves_noise`, 'paper' is
`fits.fit_curves_paper`. The choice lives here, above both, because the noise
method builds on the paper's grid search (fits_noise imports fits) and so fits
cannot import fits_noise back.
"""

from __future__ import annotations

import pandas as pd

from isocompute.analysis.fits import FitGrid, check_method, fit_curves_paper
from isocompute.analysis.fits_noise import NOISE_FIT_GRID, fit_curves_noise


def fit_curves(evals: pd.DataFrame, metric: str = "avg@4", *, bin_width: float = 0.01,
               ema_alpha: float | None = None, min_compute: float | None = None,
               run_keys=("B_p", "n"), grid: FitGrid | None = None, method: str = "noise",
               R0: float | None = None) -> pd.DataFrame:
    """One sigmoid fit per run (per cell: the seeds of a cell pool into one curve).

    method 'noise' (default): `fits_noise.fit_curves_noise`, all evaluations
    weighted by 1/se^2 with one pooled `R0` (default: pooled from the table);
    `bin_width` and `ema_alpha` do not apply. method 'paper':
    `fits.fit_curves_paper`, ScaleRL's fit to the run's record-breaking points,
    R0 its own step-0 evaluation (`R0` does not apply). The C_mid grid spans the
    run's observed compute range (evaluations with compute > 0 and >=
    `min_compute`; the noise grid reaches beyond it). `grid` defaults to the
    method's. Returns one row per run: the run keys, R0, A, B, C_mid, sse,
    n_points, status, compute_min, compute_max (the observed range of compute >
    0, where frontiers use the curve).
    """
    if method == "noise":
        return fit_curves_noise(evals, metric, R0=R0, min_compute=min_compute, run_keys=run_keys,
                                grid=NOISE_FIT_GRID if grid is None else grid)
    check_method(method)
    return fit_curves_paper(evals, metric, bin_width=bin_width, ema_alpha=ema_alpha, min_compute=min_compute,
                            run_keys=run_keys, grid=grid)
