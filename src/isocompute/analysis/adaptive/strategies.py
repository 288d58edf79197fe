"""The adaptive sweep's band strategies (`sweep.bands`), registered by name like the analysis
methods: what a strategy adds, at a rung, to the per-run verdicts of `adaptive.rule.prune`, and
how it revives a run stopped at an earlier rung (`adaptive.rule.apply_revival`).

- `shared` (the default): the B_p's trend model predicts every run at once and stops the runs a
  run going on stays within sweep.epsilon of (`adaptive.shared`);
- `runs`: every run judged by its own band alone; a stopped run stays stopped;
- `pooled`: LEGACY, the earlier default, kept to replay studies run with it (`adaptive.pooled`).

With `sweep.frontier: joint` every strategy is `runs`: the models judge the runs of one B_p.
"""

from __future__ import annotations

import pandas as pd

from isocompute.analysis.adaptive.draws import Horizon
from isocompute.analysis.adaptive.pooled import apply_pooled, pooled_chances
from isocompute.analysis.adaptive.shared import apply_shared
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.registry import Registry
from isocompute.sweep import SweepSettings

BANDS = Registry("band strategy", key="sweep.bands")


@BANDS.register("runs")
class RunBands:
    """Every run judged by its own band (`adaptive.rule.prune`); no model, so none is revived."""

    def judge(self, decisions: pd.DataFrame, seen: pd.DataFrame, fits: pd.DataFrame, ahead: Horizon, *,
              params: SweepSettings, settings: AnalysisSettings, trained=None) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(the decisions, with this strategy's verdicts; the chances a stopped run is revived by)."""
        return decisions, pd.DataFrame()

    def revival(self, params: SweepSettings) -> tuple[float, str]:
        """(z: a stopped run resumes at a chance of at least 1 - Phi(z); what the chance is of)."""
        return params.z, "its own band reaches the frontier"


@BANDS.register("shared")
class SharedBands(RunBands):
    """The shared curve model's stops (`adaptive.shared.apply_shared`), revived by the same model."""

    def judge(self, decisions, seen, fits, ahead, *, params, settings, trained=None):
        return apply_shared(decisions, seen, fits, ahead, params=params, settings=settings, trained=trained)

    def revival(self, params):
        # A stopped run resumes only when its chance to matter is beyond a z/2 band's tail (13.0% at
        # z 2.25), not merely above the stopping floor: noise alone moves a chance across one
        # threshold from rung to rung, and each resumption trains the rungs it missed.
        by = f"{params.epsilon:g}" + (" of the rise" if params.epsilon_of == "rise" else "")
        return params.z / 2, f"the shared model has it beat every run going on by more than {by} somewhere ahead"


@BANDS.register("pooled")
class PooledBands(RunBands):
    """LEGACY: the pooled trend's verdict on runs whose own band at C_max is at most
    sweep.mature_width wide (`adaptive.pooled`), where the analysis pooled the B_p by its trend."""

    def judge(self, decisions, seen, fits, ahead, *, params, settings, trained=None):
        if "model" not in fits.columns:
            return decisions, pd.DataFrame()
        chances = pooled_chances(seen, fits, ahead, metric=settings.metric, degree=settings.pool_degree)
        return apply_pooled(decisions, chances, z=params.z, mature_width=params.mature_width), chances

    def revival(self, params):
        return params.z, "its pooled trend curve is n* ahead"
