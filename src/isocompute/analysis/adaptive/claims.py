"""The paper's output, sweep against grid against truth: every claim of summary.csv and the n*(C) law.

A sweep that stops runs early is judged by regret at probe budgets (`scoring`); what a study
publishes, though, is its summary.csv (`frontier.claims.summary_table`: per B_p, whether the runs
share one curve, n* at the top of the compute range with its band, the direction of n*(C)) and
the law through n*(C) (`frontier.nstar`). `compare_claims` derives both, with the analysis's own
functions in the pipeline's order (Q1 of `pipeline.frontier_tables`: fit, frontier, law,
bootstrap bands, claims), from the full grid's evaluations and from the adaptive study's, and
from the truth's known curves: the truth's frontier on the same grid (`envelope.study_grid` and
`comparable` over the runs' evaluated range), its n* exact (bands of zero width) and the F-test
replaced by whether the B_p's curves are identical. `claims_summary` counts per stratum how often
the claims differ, with Wilson intervals (`intervals.wilson`).

Cost: the bootstrap of the two studies' bands (`fits.pooled`'s trend model refitted per replicate)
is nearly all of it, linear in `resamples`: on the benchmark's studies (B_p 16, 32 x n 8..512) 0.07
to 0.45 s of CPU per resample, 0.15-0.7 s without. Fewer than 41 resamples make each 95% band the
replicates' range, about a (R - 1) / (R + 1) band: bolder claims than the pipeline's 200.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pandas as pd

from isocompute.analysis.adaptive.intervals import wilson
from isocompute.analysis.adaptive.strata import Truth
from isocompute.analysis.fits.fitter import Fitter
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import OK
from isocompute.analysis.frontier.bootstrap import LawBootstrap, bootstrap_fits, bootstrap_laws
from isocompute.analysis.frontier.claims import (FALLS, NO_EFFECT, RISES, frontier_claims, law_claims,
                                                 summary_table)
from isocompute.analysis.frontier.envelope import comparable, frontier_fixed_bp, study_grid
from isocompute.analysis.frontier.nstar import LAW_PARAMS, n_star_laws
from isocompute.analysis.inputs.check import check_evals

STUDIES = ("grid", "sweep", "truth")
CLAIMS = ("n_effect", "n_star_claim", "law_claim")      # summary.csv's claims, per B_p
VALUES = ("log2_n_star", "reward", *LAW_PARAMS)          # its numbers at the top, and the law's parameters
PAIRS = (("sweep", "grid"), ("sweep", "truth"), ("grid", "truth"))
RESAMPLES = 20                                           # bootstrap resamples of each study's bands
CLAIM_COLUMNS = ["B_p", "claim", *STUDIES, *(f"{s}_category" for s in STUDIES),
                 *(f"{a}_vs_{b}_differs" for a, b in PAIRS)]
VALUE_COLUMNS = ["B_p", "value", *STUDIES, *(f"{a}_minus_{b}" for a, b in PAIRS)]


def study_claims(evals: pd.DataFrame, settings: AnalysisSettings) -> dict:
    """summary.csv and n_star_fit.csv of one study's evaluations, as `pipeline.frontier_tables`
    makes them for Q1 (fixed B_p): fits, frontier, law per B_p, bootstrap bands when
    `settings.bootstrap` > 0, then the claims. Returns {"summary", "laws", "frontier", "fits"}."""
    s = settings
    evals, fits, base = Fitter(s).study(check_evals(evals, s.metric))
    fitter = Fitter(s, None if base is None else float(base["R0"].iloc[0]))
    front = s.frontier_kw()
    q1 = frontier_fixed_bp(fits, min_runs=2, **front)
    laws = n_star_laws(q1, by="B_p", window=s.window)
    if s.bootstrap > 0:
        boot = bootstrap_fits(evals, fitter)
        laws, q1, _ = bootstrap_laws(boot, fits, laws, q1, LawBootstrap(window=s.window, ci=s.ci, **front))
    q1 = frontier_claims(q1, fits)
    laws = law_claims(laws, q1, fits)
    return {"summary": summary_table(q1, laws, fits), "laws": laws, "frontier": q1, "fits": fits}


def _truth_fits(truth: Truth, evals: pd.DataFrame) -> pd.DataFrame:
    """One row per run of `evals`: its evaluated compute range (first positive compute to last), as a
    usable fit, and model 'common' where every run of its B_p follows one true curve, else 'runs'."""
    ranges = evals[evals["compute"] > 0].groupby(["B_p", "n"], sort=True)["compute"].agg(["min", "max"])
    rows = [{"B_p": B_p, "n": n, "status": OK, "compute_min": float(lo), "compute_max": float(hi)}
            for (B_p, n), (lo, hi) in ranges.iterrows()]
    fits = pd.DataFrame(rows)
    fits["model"] = fits["B_p"].map(lambda b: "common" if _one_curve(truth, b) else "runs")
    return fits


def _one_curve(truth: Truth, B_p) -> bool:
    """Whether every run of `B_p` has the same true curve (nothing depends on n)."""
    curves = [(tuple(sorted(p.items())), truth.collapse.get(key)) for key, p in truth.params.items() if key[0] == B_p]
    return len(set(curves)) <= 1


def truth_claims(truth: Truth, evals: pd.DataFrame, settings: AnalysisSettings) -> dict:
    """What summary.csv would say if the curves were known: on the frontier grid of the runs'
    evaluated range (`study_grid`, `comparable`: as the analysis draws it), n* is the n whose best
    checkpoint is best (`Truth.value`, ties to the smaller n, as `envelope`), its band of zero width;
    the law is fitted to it (`n_star_laws`) and the claims follow (`frontier_claims`, `law_claims`)."""
    s = settings
    extrapolate = not s.observed_range
    fits = _truth_fits(truth, evals)
    parts = []
    for B_p, group in fits.groupby("B_p", sort=True):
        grid = study_grid(group, s.grid_points, extrapolate=extrapolate)
        if group["n"].nunique() < 2 or grid is None:
            continue
        ns = np.sort(group["n"].to_numpy())
        worth = np.array([np.broadcast_to(truth.value(B_p, int(n), grid), grid.shape) for n in ns])   # (K, G)
        best = np.argmax(worth, axis=0)
        n_star = ns[best].astype(float)
        parts.append(pd.DataFrame({"B_p": B_p, "compute": grid, "n_star": n_star, "reward": worth.max(axis=0),
                                   "comparable": comparable(group, grid, extrapolate=extrapolate),
                                   "n_star_lo": n_star, "n_star_hi": n_star}))
    q1 = pd.concat(parts, ignore_index=True)
    laws = n_star_laws(q1, by="B_p", window=s.window)
    q1 = frontier_claims(q1, fits)
    laws = law_claims(laws, q1, fits)
    return {"summary": summary_table(q1, laws, fits), "laws": laws, "frontier": q1, "fits": fits}


def claim_category(claim: str, text) -> str:
    """The category of a claim's text, what two studies must share to say the same thing:
    n_effect 'effect' / 'no effect'; n_star_claim 'determined' / 'undetermined' / 'no effect' /
    'no interval' / 'no frontier'; law_claim 'rises' / 'falls' / 'no effect' / 'not established';
    'missing' where the study has no row for the B_p."""
    if not isinstance(text, str):
        return "missing"
    if claim == "n_effect":
        return "no effect" if text == "common" else "effect"
    if claim == "law_claim":
        return {RISES: "rises", FALLS: "falls", NO_EFFECT: "no effect"}.get(text, "not established")
    if text == "no frontier":
        return text
    if text.startswith("undetermined: no effect"):
        return "no effect"
    if text.startswith("undetermined"):
        return "undetermined"
    return "no interval" if text.endswith("(no interval)") else "determined"


def _values(study: dict) -> pd.DataFrame:
    """Per B_p: log2 n* and the frontier reward at the top of the range, the law's L, U, k, c0."""
    summ = study["summary"].set_index("B_p")
    laws = study["laws"].set_index("B_p")
    out = pd.DataFrame(index=summ.index.union(laws.index))
    out["log2_n_star"] = np.log2(summ["n_star"].astype(float))
    out["reward"] = summ["reward"].astype(float)
    for name in LAW_PARAMS:
        out[name] = laws[name].astype(float)
    return out


def compare_claims(truth: Truth, evals_full: pd.DataFrame, evals_adaptive: pd.DataFrame,
                   settings: AnalysisSettings | None = None, *, resamples: int = RESAMPLES) -> dict:
    """summary.csv's claims and the n*(C) law of the full grid, the adaptive sweep and the truth.

    `evals_full`: the grid's evaluations; `evals_adaptive`: the sweep's (`replay(...)["evals"]`);
    `settings`: the analysis's (default: the schema's, by the noise method), with `resamples`
    bootstrap resamples for the bands the claims follow (both studies draw with the settings' seed).
    The truth's are drawn on the grid's evaluated range (`truth_claims`).

    Returns a dict: claims (one row per B_p and claim of `CLAIMS`: B_p, claim, the text of grid,
    sweep and truth, each one's category (`claim_category`), and sweep_vs_grid_differs,
    sweep_vs_truth_differs, grid_vs_truth_differs: the categories differ), values (one row per B_p
    and value of `VALUES`: B_p, value, grid, sweep, truth, sweep_minus_grid, sweep_minus_truth,
    grid_minus_truth; NaN where a study has no such number, e.g. a law that did not fit), the
    three studies' summary and laws tables (summaries: {"grid", "sweep", "truth"}, laws: same), and
    seconds.
    """
    start = time.perf_counter()
    s = replace(settings or AnalysisSettings(), bootstrap=int(resamples))
    studies = {"grid": study_claims(evals_full, s), "sweep": study_claims(evals_adaptive, s),
               "truth": truth_claims(truth, check_evals(evals_full, s.metric), s)}
    summaries = {k: v["summary"].set_index("B_p") for k, v in studies.items()}
    b_ps = sorted(set().union(*(t.index for t in summaries.values())))
    column = {"n_effect": "model", "n_star_claim": "n_star_claim", "law_claim": "law_claim"}
    rows = []
    for B_p in b_ps:
        for claim in CLAIMS:
            text = {k: t.at[B_p, column[claim]] if B_p in t.index else None for k, t in summaries.items()}
            cat = {k: claim_category(claim, v) for k, v in text.items()}
            rows.append({"B_p": B_p, "claim": claim, **text, **{f"{k}_category": c for k, c in cat.items()},
                         **{f"{a}_vs_{b}_differs": cat[a] != cat[b] for a, b in PAIRS}})
    values = {k: _values(v) for k, v in studies.items()}
    vrows = []
    for B_p in b_ps:
        for name in VALUES:
            got = {k: float(t.at[B_p, name]) if B_p in t.index else np.nan for k, t in values.items()}
            vrows.append({"B_p": B_p, "value": name, **got, **{f"{a}_minus_{b}": got[a] - got[b] for a, b in PAIRS}})
    return {"claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS), "values": pd.DataFrame(vrows, columns=VALUE_COLUMNS),
            "summaries": {k: v["summary"] for k, v in studies.items()},
            "laws": {k: v["laws"] for k, v in studies.items()}, "seconds": time.perf_counter() - start}


def claims_summary(rows: pd.DataFrame, by=("stratum",)) -> pd.DataFrame:
    """Per group of `by` (columns of `rows`, `compare_claims`' claims of many studies, e.g. with a
    stratum column added; ("stratum", "claim") per claim too): the claims counted and the share
    where the sweep's category differs from the grid's, where it differs from the truth's, and where
    the grid's differs from the truth's, each with its Wilson 95% interval (claims of one study are
    correlated, so the intervals are narrower than an interval over studies would be)."""
    keys = [k for k in by if k in rows.columns]
    groups = rows.groupby(keys, sort=False) if keys else [((), rows)]
    out = []
    for key, g in groups:
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row["claims"] = len(g)
        for a, b in PAIRS:
            k = int(g[f"{a}_vs_{b}_differs"].sum())
            lo, hi = wilson(k, len(g))
            name = f"{a}_vs_{b}"
            row[name], row[f"{name}_lo"], row[f"{name}_hi"] = k / len(g) if len(g) else np.nan, lo, hi
        out.append(row)
    return pd.DataFrame(out)
