"""The analysis methods, registered by name (`analysis.method`), as verl registers its
advantage estimators: a decorator and a registry dict. What the noise method (the
default, docs/methods.md section 11) and the paper's procedure do differently lives
here, in one class each; the pipeline, the bootstrap, the studies and the
figures call a method's hooks instead of testing its name.

Sits above the curve fits of its room (`sigmoid`, `noise`, `pooled`, `records`) and below
everything that runs a method, through the `fitter.Fitter` built from the settings
(`frontier.bootstrap`, `frontier.studies`, `adaptive`, `pipeline`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.analysis.fits.collapse import COLUMN as COLLAPSED, mark_collapses
from isocompute.analysis.fits.noise import (NOISE_FIT_GRID, add_standard_errors, cell_arrays, fit_curves_noise,
                                            fit_weighted, noise_fit_grid, pooled_base, residual_se)
from isocompute.analysis.fits.pooled import get_pool
from isocompute.analysis.fits.sigmoid import FitGrid, fit_curves_paper, fit_replicates, fit_sigmoid, run_arrays
from isocompute.analysis.inputs.check import se_column
from isocompute.registry import Registry

# @register_method(name) files the strategy under the config value `name`; get_method(name)
# finds it (ValueError naming the registered ones).
METHODS = Registry("method")
register_method, get_method = METHODS.register, METHODS.get


class Method:
    """The hooks where the analysis methods differ. `fit_kw`: bin_width, ema_alpha, min_compute, grid
    (the settings' values, passed by `fitter.Fitter`)."""

    name = ""
    observed_range = False      # frontiers: each curve only over its run's data (True), or the whole grid
    record_label = ""           # Fig. 5's legend for the record points

    def default_grid(self) -> FitGrid:
        raise NotImplementedError

    def fit_grid(self, pool: str, pool_degree: int, pool_alpha: float, n_effect_alpha: float,
                 collapse_alpha: float = 0.0, collapse_window: int = 8) -> FitGrid:
        """The fit grid with the analysis section's pooling (and collapse) keys."""
        return self.default_grid()

    def fit_curves(self, evals, metric, *, bin_width=0.01, ema_alpha=None, min_compute=None, grid=None,
                   R0=None) -> pd.DataFrame:
        raise NotImplementedError

    def fit_study(self, evals, metric, *, se_window, **fit_kw):
        """(evals, fits, base): the fitting stage on a checked table (`base`: a one-row table or None)."""
        return evals, self.fit_curves(evals, metric, **fit_kw), None

    def metric_fits(self, evals, metric, **fit_kw) -> pd.DataFrame:
        """Fits of a secondary metric (best@4, worst@4): its optima and frontier."""
        return self.fit_curves(evals, metric, **fit_kw)

    def study_curves(self, make_fits):
        """The fits optima and sensitivity read values from (`make_fits()`), or None: the raw
        points' running maximum."""
        return None

    # -- the bootstrap: one cell's data, its base value, its replicate fits
    def study_base(self, evals, metric) -> float | None:
        """The R0 every cell shares (None: each cell its own)."""
        return None

    def cell_arrays(self, cell, metric, min_compute) -> dict:
        raise NotImplementedError

    def cell_base(self, arr: dict, R0: float | None) -> float:
        raise NotImplementedError

    def fit_resamples(self, arr, R0, idx, counts, *, grid, records):
        """(fit arrays of the replicates, what pooling needs of the cell or None). `idx` (R, K)
        drawn point indices, or `counts` (R, P) how often each point is drawn: one of them is None;
        `records` the settings' `records.RecordRule` (the paper's method)."""
        raise NotImplementedError

    def pool_replicates(self, boot, drawn, R0, grid) -> pd.DataFrame:
        return boot

    # -- what the figures draw
    def figure_points(self, records, evals) -> pd.DataFrame:
        """The marks behind the fitted curves."""
        return evals

    def pooled_record_fit(self, pool, rec, value, metric) -> dict | None:
        """Fig. 5's curve through one B_p's pooled record points, or None."""
        return None


@register_method("noise")
class NoiseMethod(Method):
    """Standard errors from problems x samples, one pooled R0, weighted fits to every evaluation."""

    observed_range = True
    record_label = "records (+{z:g} s.e.)"

    def default_grid(self):
        return NOISE_FIT_GRID

    def fit_grid(self, pool, pool_degree, pool_alpha, n_effect_alpha, collapse_alpha=0.0, collapse_window=8):
        return noise_fit_grid(pool, pool_degree, pool_alpha, n_effect_alpha, collapse_alpha, collapse_window)

    def fit_curves(self, evals, metric, *, bin_width=0.01, ema_alpha=None, min_compute=None, grid=None, R0=None):
        return fit_curves_noise(evals, metric, R0=R0, min_compute=min_compute,
                                grid=NOISE_FIT_GRID if grid is None else grid)

    def fit_study(self, evals, metric, *, se_window, **fit_kw):
        """`evals` gains `<metric>_se` (the residuals' estimate when the table has no problems),
        every fit shares the pooled R0, `base` is (metric, R0, R0_se, n_base, se_source, se_median)."""
        evals, se_source = add_standard_errors(evals, metric, window=se_window)
        fits = self.fit_curves(evals, metric, R0=pooled_base(evals, metric)["R0"], **fit_kw)
        if se_source == "unknown":
            evals = evals.assign(**{se_column(metric): residual_se(fits)})
        # A run that collapses is fitted up to its collapse and held flat after it (fits.collapse).
        grid = fit_kw.get("grid") or NOISE_FIT_GRID
        evals = mark_collapses(evals, metric, alpha=grid.collapse_alpha, window=grid.collapse_window)
        if evals[COLLAPSED].any():
            fits = self.fit_curves(evals, metric, R0=pooled_base(evals, metric)["R0"], **fit_kw)
        base = pd.DataFrame([{"metric": metric, **pooled_base(evals, metric), "se_source": se_source,
                              "se_median": float(evals[se_column(metric)].median())}])
        return evals, fits, base

    def metric_fits(self, evals, metric, *, grid=None, min_compute=None, **_):
        # Its standard errors with the default window (analysis.se_window applies to the main metric).
        return self.fit_curves(add_standard_errors(evals, metric)[0], metric, grid=grid, min_compute=min_compute)

    def study_curves(self, make_fits):
        return make_fits()

    def study_base(self, evals, metric):
        return pooled_base(evals, metric)["R0"]

    def cell_arrays(self, cell, metric, min_compute):
        return cell_arrays(cell, metric, min_compute)

    def cell_base(self, arr, R0):
        return R0

    def fit_resamples(self, arr, R0, idx, counts, *, grid, records):
        if counts is None:
            counts = np.stack([np.bincount(row, minlength=arr["compute"].size) for row in idx])
        res = fit_weighted(arr["compute"], arr["values"], R0, arr["weights"][:, None] * counts.T,
                           compute_range=arr["compute_range"], grid=grid, boot=True)
        # Kept for pooling until every cell is fitted: as the smallest unsigned type that holds
        # them (the same counts; int64 for every point of every replicate fills gigabytes).
        return res, (arr, counts.astype(np.min_scalar_type(int(counts.max(initial=0)))))

    def pool_replicates(self, boot, drawn, R0, grid):
        return get_pool(grid.pool).pool_replicates(boot, drawn, R0, grid)


@register_method("paper")
class PaperMethod(Method):
    """The paper's procedure exactly: running-maximum record points in bins, one R0 per run."""

    observed_range = False
    record_label = "record-breaking points"

    def default_grid(self):
        return FitGrid()

    def fit_curves(self, evals, metric, *, bin_width=0.01, ema_alpha=None, min_compute=None, grid=None, R0=None):
        return fit_curves_paper(evals, metric, bin_width=bin_width, ema_alpha=ema_alpha, min_compute=min_compute,
                                grid=grid)

    def cell_arrays(self, cell, metric, min_compute):
        return run_arrays(cell, metric, min_compute)

    def cell_base(self, arr, R0):
        return arr["R0"]

    def fit_resamples(self, arr, R0, idx, counts, *, grid, records):
        if idx is None:
            idx = _indices_from_counts(counts)
        res = fit_replicates(arr["compute"], arr["values"], R0, idx, records=records, grid=grid, dtype=np.float32)
        return res, None

    def figure_points(self, records, evals):
        return evals if records is None else records

    def pooled_record_fit(self, pool, rec, value, metric):
        R0 = (float(pool.loc[pool["step"] == 0, metric].mean()) if (pool["step"] == 0).any()
              else float(rec[value].iloc[0]))
        return fit_sigmoid(rec["compute"], rec[value], R0).as_dict()


def _indices_from_counts(counts: np.ndarray) -> np.ndarray:
    """Sorted index rows (R, K) with each point repeated `counts` times; short
    rows are padded with their last index (a repeated point is never a new record)."""
    rows = [np.repeat(np.arange(counts.shape[1]), c) for c in counts]
    width = max(len(r) for r in rows)
    return np.stack([np.concatenate([r, np.full(width - len(r), r[-1])]) for r in rows])
