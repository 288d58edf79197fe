"""The analysis chain: evaluation tables -> record points -> sigmoid fits ->
frontiers and n*(C) -> the n* law with bootstrap intervals -> figures; and
the adaptive sweep's pruning rule (adaptive) with its offline replay
(adaptive_replay).

Pure functions over frames live in records, curves (`fit_curves`, by the
method: fits, the paper's, or fits_noise, the default noise-aware one), frontier,
nstar, bootstrap, studies; `isocompute.schedule` (below the analysis: the
training recipe reads it too) says when runs are evaluated; reading files is in
io, writing in pipeline.write_analysis, figures in plots (the `isocompute
analyze` command is `isocompute.cli.analysis`). Names are imported lazily so
that the command line starts without loading pandas and scipy.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "record_points": "records", "record_points_by_run": "records", "record_mask": "records",
    "metric_bins": "records", "ema": "records", "running_frontier": "records",
    "FitGrid": "fits", "SigmoidFit": "fits", "sigmoid_reward": "fits", "fit_sigmoid": "fits",
    "fit_curves": "curves", "fit_curves_paper": "fits", "predict": "fits",
    "compute_grid": "frontier", "frontier": "frontier", "frontier_fixed_bp": "frontier",
    "frontier_fixed_batch": "frontier", "frontier_joint": "frontier",
    "LawGrid": "nstar", "NStarLaw": "nstar", "running_average": "nstar", "n_star_sigmoid": "nstar",
    "fit_n_star_law": "nstar", "fit_n_star_laws": "nstar", "n_star_laws": "nstar",
    "bootstrap_fits": "bootstrap", "bootstrap_law_intervals": "bootstrap", "bootstrap_intervals": "bootstrap",
    "fit_curves_noise": "fits_noise", "add_standard_errors": "fits_noise", "pooled_base": "fits_noise",
    "significant_record_mask": "records",
    "compute_schedule_steps": "isocompute.schedule", "compute_points": "isocompute.schedule",
    "metric_optima": "studies", "sensitivity": "studies", "interference_histograms": "studies",
    "extrapolation_check": "studies", "value_at_compute": "studies",
    "check_evals": "tables", "check_train": "tables",
    "read_evals": "io", "read_train": "io", "parse_verl_jsonl": "io",
    "run_analysis": "pipeline", "write_analysis": "pipeline", "fit_study": "methods",
    "AnalysisSettings": "settings", "METHODS": "methods", "get_method": "methods",
    "synthetic_evals": "synthetic", "synthetic_params": "synthetic", "synthetic_study": "synthetic",
    "crossover_params": "synthetic",
    "rung_budgets": "isocompute.schedule", "prediction_bands": "adaptive", "prune": "adaptive", "decide": "adaptive",
    "replay": "adaptive_replay",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        module = _EXPORTS[name]
        return getattr(importlib.import_module(module if "." in module else f"{__name__}.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
