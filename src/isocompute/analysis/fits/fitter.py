"""The fitter: how a study's runs are fitted, as one object built from the
`AnalysisSettings` (its method, metric, fit grid, bin_width, ema_alpha,
min_compute, se_window, record_z, and for the bootstrap its bootstrap, seed and
bootstrap_unit, each under its schema name), with the study's base R0 once the
fitting stage has pooled it. The pipeline, the bootstrap, the secondary studies
and the adaptive rule take a `Fitter` where they took loose keyword bundles;
what the methods do differently stays in their hooks (`methods.Method`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pandas as pd

from isocompute.analysis.fits.methods import Method
from isocompute.analysis.fits.records import RecordRule, record_points
from isocompute.analysis.fits.settings import AnalysisSettings


@dataclass(frozen=True)
class Fitter:
    """`settings`: the analysis settings; `R0`: the study's base (the noise method's pooled R0,
    from `study`; None: each fit finds its own, as the method does)."""

    settings: AnalysisSettings = field(default_factory=AnalysisSettings)
    R0: float | None = None

    @property
    def method(self) -> Method:
        return self.settings.strategy

    @property
    def metric(self) -> str:
        return self.settings.metric

    def at_base(self, R0: float | None) -> "Fitter":
        """This fitter with the study's base R0."""
        return replace(self, R0=R0)

    def but(self, **settings) -> "Fitter":
        """This fitter with some settings changed (schema names; checked as ever)."""
        return replace(self, settings=replace(self.settings, **settings))

    def _fit_kw(self) -> dict:
        s = self.settings
        return dict(bin_width=s.bin_width, ema_alpha=s.ema_alpha, min_compute=s.min_compute, grid=s.grid)

    def study(self, evals: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
        """The fitting stage on a checked evaluation table: (evals, fits, base); `base` None
        for a method without a pooled base. `at_base(base R0)` is the fitter of what follows."""
        return self.method.fit_study(evals, self.metric, se_window=self.settings.se_window, **self._fit_kw())

    def curves(self, evals: pd.DataFrame, metric: str | None = None) -> pd.DataFrame:
        """Every run's fitted curve of `metric` (default: the settings'), with the fitter's R0."""
        return self.method.fit_curves(evals, metric or self.metric, R0=self.R0, **self._fit_kw())

    def metric_curves(self, evals: pd.DataFrame, metric: str) -> pd.DataFrame:
        """Fits of another metric than the main one (Figs. 8, 10, 20): its own standard errors."""
        return self.method.metric_fits(evals, metric, **self._fit_kw())

    def cell_arrays(self, cell: pd.DataFrame) -> dict:
        """One cell's points as the method fits them (the bootstrap's input)."""
        return self.method.cell_arrays(cell, self.metric, self.settings.min_compute)

    def resamples(self, arr: dict, R0: float, idx, counts):
        """One cell refitted on each resample (`methods.Method.fit_resamples`)."""
        s = self.settings
        return self.method.fit_resamples(arr, R0, idx, counts, grid=s.grid,
                                         records=RecordRule(s.bin_width, s.ema_alpha, s.min_compute))

    def pooled_records(self, evals: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Fig. 5's tables: each B_p's record points over its runs pooled, and (paper) the curve through them."""
        s, parts, fits = self.settings, [], []
        for B_p, pool in evals.groupby("B_p", sort=True):
            rec = record_points(pool, s.metric, bin_width=s.bin_width, ema_alpha=s.ema_alpha, method=s.method,
                                z=s.record_z)
            parts.append(rec)
            value = "smoothed" if "smoothed" in rec.columns else s.metric
            fit = self.method.pooled_record_fit(pool, rec, value, s.metric) if len(rec) else None
            if fit is not None:
                fits.append({"B_p": B_p, **fit})
        records = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        return records, pd.DataFrame(fits)


def fit_study(evals: pd.DataFrame, settings: AnalysisSettings):
    """The fitting stage by `settings` (`Fitter(settings).study`): (evals, fits, base)."""
    return Fitter(settings).study(evals)
