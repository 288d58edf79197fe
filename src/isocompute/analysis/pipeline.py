"""The analysis chain end to end: evaluation table in, tables (and figures) out.

`run_analysis` is pure (frames in, frames out) and is what the CLI and the
Snakemake rules call; `write_analysis` is the only place that touches disk,
and it writes atomically: everything goes to a temporary folder next to the
destination, which is renamed into place only when complete.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.analysis.fits.fitter import Fitter, fit_study
from isocompute.analysis.fits.noise import run_groups
from isocompute.analysis.fits.records import record_points_by_run
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.frontier.bootstrap import (LawBootstrap, bootstrap_fits, bootstrap_intervals, bootstrap_laws,
                                                    resampling_unit)
from isocompute.analysis.frontier.claims import frontier_claims, law_claims, summary_table
from isocompute.analysis.frontier.envelope import frontier_fixed_batch, frontier_fixed_bp, frontier_joint
from isocompute.analysis.frontier.nstar import law_points, n_star_laws
from isocompute.analysis.frontier.recommend import recommendation_table
from isocompute.analysis.frontier.studies import (extrapolation_check, interference_histograms, interference_rates,
                                                  mechanism_table, metric_fits, metric_frontiers,
                                                  metric_optima, sensitivity)
from isocompute.analysis.inputs.check import check_evals, check_train, se_column
from isocompute.analysis.outputs.folder import PARAMS_FILE, TABLE_FILES, write_manifest
from isocompute.atomic import atomic_dir

__all__ = ["fit_study", "run_analysis", "write_analysis"]

log = logging.getLogger("isocompute")

def _with_law_points(frontier: pd.DataFrame, by, x: str, window: int) -> pd.DataFrame:
    """Add the running average of log2 n* (what the law is fitted to) per group."""
    if frontier.empty:
        return frontier.assign(log2_n_star_avg=pd.Series(dtype=float))
    parts = []
    for _, f in (frontier.groupby(by, sort=True) if by else [((), frontier)]):
        f = f.copy()
        f["log2_n_star_avg"] = law_points(f, x=x, window=window)["log2_n_star_avg"].to_numpy()
        parts.append(f)
    return pd.concat(parts, ignore_index=True)


def run_analysis(evals: pd.DataFrame, settings: AnalysisSettings | None = None, *,
                 train: pd.DataFrame | None = None, split: str | None = None) -> dict:
    """Every table of the analysis from one evaluation table, by `settings`
    (`AnalysisSettings`; default: the schema's `analysis` section).

    Returns a dict of DataFrames: evals (checked; the noise method adds
    `<metric>_se`), records, fits, frontier (Q1, per B_p, with bootstrap
    bands), n_star_fit (law per B_p with bootstrap intervals),
    frontier_fixed_batch / n_star_fit_fixed_batch (Q2, x = steps M),
    frontier_joint / n_star_fit_joint (Q3), optima, frontier_metrics (the
    frontier of each optima metric, per B_p), sensitivity, extrapolation,
    interference (with `train`), bootstrap_fits and n_star_fit_draws (with
    `bootstrap` > 0: every replicate's cell fits and Q1 law), recommendations
    (module `recommend` at a few budgets over the studied range and one
    `max_extrapolation` times above it), fits_tokens / frontier_tokens /
    n_star_fit_tokens (with a `tokens` column; runs missing a tokens value
    are left out of these, with a warning), base (noise method: the pooled R0
    and the evaluations' standard errors), record_points_pooled and
    record_fit_pooled (Fig. 5: each B_p's runs pooled), timings; and
    `settings` itself (written as params.json). Raises InputError on malformed
    input before computing anything. What each method does: `methods`
    (NoiseMethod, PaperMethod); what each setting means: the schema.
    """
    s = AnalysisSettings() if settings is None else settings
    clock = _Clock()
    evals = check_evals(evals, s.metric, split=split)
    train = None if train is None else check_train(train)
    clock.lap("validate")
    out: dict = {"settings": s, "split": split}
    out["evals"], out["fits"], base = Fitter(s).study(evals)
    fitter = Fitter(s, None if base is None else float(base["R0"].iloc[0]))
    if base is not None:
        out["base"] = base
    clock.lap("fits")
    out["records"] = records_table(out["evals"], s)
    out["record_points_pooled"], pooled_fit = fitter.pooled_records(out["evals"])
    if len(pooled_fit):
        out["record_fit_pooled"] = pooled_fit
    clock.lap("records")
    out.update(frontier_tables(out["evals"], out["fits"], fitter, clock))
    out["recommendations"] = recommendation_table(out, extrapolate=not s.observed_range, ci=s.ci,
                                                  max_extrapolation=s.max_extrapolation)
    out.update(study_tables(out["evals"], out["fits"], fitter, train))
    clock.lap("studies")
    out.update(token_tables(out["evals"], fitter))
    clock.lap("tokens")
    out["timings"] = clock.table()
    return out


def records_table(evals: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """Each run's record points (shown; the paper's method also fits them)."""
    records = record_points_by_run(evals, s.metric, method=s.method, z=s.record_z, bin_width=s.bin_width,
                                   ema_alpha=s.ema_alpha)
    keep = [c for c in ("run", "split", "B_p", "n", "seed", "step", "compute", "tokens", s.metric,
                        se_column(s.metric), "smoothed", "bin") if c in records.columns]
    return records[keep]


def frontier_tables(evals: pd.DataFrame, fits: pd.DataFrame, fitter: Fitter, clock: "_Clock") -> dict:
    """The frontiers and n* laws of Q1 (fixed B_p), Q2 (fixed B, x = M) and Q3 (joint), with
    bootstrap intervals for `bootstrap_studies` when `bootstrap` > 0."""
    s = fitter.settings
    front, window = s.frontier_kw(), s.window
    # A B_p with a single n (a fixed-B cell, grid.<split>.cells) has no frontier over n.
    q1 = frontier_fixed_bp(fits, min_runs=2, **front)
    laws = n_star_laws(q1, by="B_p", window=window)
    q2 = frontier_fixed_batch(fits, **front)
    laws_q2 = n_star_laws(q2, by="B", x="M", window=window)
    q3 = frontier_joint(fits, **front)
    laws_q3 = n_star_laws(q3, by=None, window=window)
    clock.lap("frontiers + laws")
    out = {}
    if s.bootstrap > 0:
        boot = bootstrap_fits(evals, fitter)
        clock.lap("bootstrap fits")
        spec = LawBootstrap(window=window, ci=s.ci, **front)
        # The replicate fits and Q1's replicate laws are kept: `recommend` predicts from them at any C.
        out["bootstrap_fits"] = boot.astype({c: np.float64 for c in boot.select_dtypes("float32")})
        if "fixed_B_p" in s.bootstrap_studies:
            laws, q1, out["n_star_fit_draws"] = bootstrap_laws(boot, fits, laws, q1, spec)
        if "fixed_batch" in s.bootstrap_studies:
            laws_q2, q2 = bootstrap_intervals(boot, fits, laws_q2, q2,
                                                replace(spec, by="B", scale_by_batch=True))
        if "joint" in s.bootstrap_studies:
            laws_q3, q3 = bootstrap_intervals(boot, fits, laws_q3, q3, replace(spec, by=None))
        clock.lap("bootstrap laws")
    # What may be said of n* follows the bands (`claims`): per grid point, and the law's direction.
    out["frontier"] = frontier_claims(_with_law_points(q1, "B_p", "compute", window), fits)
    laws = law_claims(laws, q1, fits)
    unit = (s.bootstrap_unit or resampling_unit(evals)) if s.bootstrap > 0 else "none"
    out["summary"] = summary_table(out["frontier"], laws, fits).assign(resampled=unit)
    out["frontier_fixed_batch"] = _with_law_points(q2, "B", "M", window)
    out["frontier_joint"] = _with_law_points(q3, None, "compute", window)
    out["n_star_fit"], out["n_star_fit_fixed_batch"], out["n_star_fit_joint"] = laws, laws_q2, laws_q3
    return out


def study_tables(evals: pd.DataFrame, fits: pd.DataFrame, fitter: Fitter, train: pd.DataFrame | None) -> dict:
    """The secondary studies: optima and frontiers of the other metrics (Figs. 8, 20),
    sensitivity (Fig. 10), the extrapolation check, interference (Fig. 11, with `train`) and
    the mechanism table (zero-variance groups by n, with `train`)."""
    s = fitter.settings
    by_metric = metric_fits(evals, fitter)
    out = {"optima": metric_optima(evals, fitter, fits=by_metric),
           "frontier_metrics": metric_frontiers(by_metric, **s.frontier_kw()),
           "sensitivity": sensitivity(evals, fitter, fits=fits),
           "extrapolation": extrapolation_check(evals, fitter, fits=fits)}
    if train is not None:
        out["interference"] = interference_histograms(interference_rates(train), bins=s.hist_bins)
        out["mechanism"] = mechanism_table(train)
    return out


def token_tables(evals: pd.DataFrame, fitter: Fitter) -> dict:
    """The fits, frontier and n* law with compute in generated tokens (appendix: tokens vs rollouts)."""
    by_tokens = _tokens_axis(evals)
    if by_tokens is None:
        return {}
    s = fitter.settings
    fits_tok = fitter.but(min_compute=None).curves(by_tokens)
    front_tok = frontier_fixed_bp(fits_tok, min_runs=2, **s.frontier_kw()).rename(columns={"compute": "tokens"})
    return {"fits_tokens": fits_tok,
            "n_star_fit_tokens": n_star_laws(front_tok, by="B_p", x="tokens", window=s.window),
            "frontier_tokens": _with_law_points(front_tok, "B_p", "tokens", s.window)}


def _tokens_axis(evals: pd.DataFrame) -> pd.DataFrame | None:
    """The evaluations of the runs whose every row has `tokens`, with compute = tokens.

    A run missing a tokens value (a log without response lengths) is left out
    of the tokens-axis tables with a warning, not the whole analysis."""
    if "tokens" not in evals.columns:
        return None
    keys = run_groups(evals)
    complete = evals["tokens"].notna().groupby([evals[k] for k in keys]).transform("all")
    if not complete.all():
        lacking = evals.loc[~complete, keys].drop_duplicates()
        names = ", ".join("(" + ", ".join(f"{k}={v}" for k, v in zip(keys, row)) + ")"
                          for row in lacking.itertuples(index=False))
        warnings.warn(f"column 'tokens' is missing in {len(lacking)} run(s) {names}: the tokens-axis tables "
                      f"(fits_tokens, frontier_tokens) use the other runs", stacklevel=3)
    kept = evals[complete.to_numpy()]
    if kept.empty:
        return None
    return kept.assign(compute=kept["tokens"].astype(float))


def write_analysis(results: dict, out_dir: Path | str, *, figures: bool = True,
                   formats=("png", "pdf")) -> list[Path]:
    """Write the tables (and figures/) of `run_analysis` into `out_dir`, then their manifest, atomically
    (`isocompute.atomic.atomic_dir`: all or nothing; an existing `out_dir` is
    replaced only once the new one is complete). Returns the written paths.
    """
    out_dir = Path(out_dir)
    written = []
    with atomic_dir(out_dir) as tmp:
        for key, name in TABLE_FILES.items():
            if key in results:
                results[key].to_csv(tmp / name, index=False)
                written.append(name)
        if "settings" in results:   # the settings by their schema names, and the split analysed
            params = {**results["settings"].as_json(), "split": results.get("split")}
            (tmp / PARAMS_FILE).write_text(json.dumps(params, indent=2) + "\n")
            written.append(PARAMS_FILE)
        if figures:
            from isocompute.analysis.plots import plot_all

            start = time.perf_counter()
            figs = plot_all(results, tmp / "figures", formats=formats)
            written += [str(Path(f).relative_to(tmp)) for f in figs]
            if "timings" in results:   # record the figure time alongside the others
                t = pd.concat([results["timings"], pd.DataFrame(
                    {"phase": ["figures"], "seconds": [time.perf_counter() - start]})], ignore_index=True)
                t.to_csv(tmp / TABLE_FILES["timings"], index=False)
        # Last: what every reader checks the tables against (outputs.folder.read_tables).
        written.append(write_manifest(tmp).name)
    return [out_dir / w for w in written]


class _Clock:
    def __init__(self):
        self.rows, self.last = [], time.perf_counter()

    def lap(self, phase: str) -> None:
        """End `phase`, and say so on the log (a long analysis tells where it is)."""
        now = time.perf_counter()
        self.rows.append((phase, now - self.last))
        log.info("analyze: %s done (%.1f s)", phase, now - self.last)
        self.last = now

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["phase", "seconds"]).astype({"seconds": np.float64})
