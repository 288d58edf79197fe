"""What the analysis may say about n*: one rule, read by every output.

A point estimate of n*(C) is the argmax over noisy curves, and a fitted law
through those argmaxes rises or falls whether or not anything does (on
identical curves the maximum lands on some n anyway). So what is said follows
the intervals, never the point estimates alone:

- n* at C is *determined* when its bootstrap band spans at most `SPAN`
  doublings of n ("n* = 8 [4, 16]"), else *undetermined* ("undetermined:
  [2, 64]"); without a band it is stated as a point with "no interval".
  Where the runs of the B_p share one curve (`fits.pooled`: the F-test found
  no effect of n, column `model` 'common') every n is optimal: undetermined.
- n* *rises* (or *falls*) with compute only when the bands at the two ends of
  the range where every run can enter the frontier (column `comparable`) do
  not overlap, the upper end's band above (below) the lower end's, and the
  F-test has found an effect of n. Otherwise the direction is "not
  established", and the figures draw no law.

Used by the pipeline (the `claim` columns of frontier.csv and n_star_fit.csv),
the figures (Figs. 6, 7), `recommend` and the report.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SPAN = 2.0                                  # doublings of n a determined band may span
RISES = "rises: established"
FALLS = "falls: established"
NOT_ESTABLISHED = "not established"
NO_EFFECT = "not established: no effect of n detected"
NO_INTERVAL = "not established: no intervals (analysis.bootstrap = 0)"
ESTABLISHED = (RISES, FALLS)


def _n(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def n_star_claim(n_star: float, lo: float, hi: float, *, no_effect: bool = False) -> tuple[bool, str]:
    """(determined, text) for n* at one compute: the band decides, not the point."""
    if not np.isfinite(n_star):
        return False, "no frontier"
    has_band = np.isfinite(lo) and np.isfinite(hi) and lo > 0
    band = f"[{_n(lo)}, {_n(hi)}]" if has_band else ""
    if no_effect:
        return False, "undetermined: no effect of n detected" + (f" {band}" if band else "")
    if not has_band:
        return False, f"n* = {_n(n_star)} (no interval)"
    if np.log2(hi / lo) <= SPAN + 1e-9:
        return True, f"n* = {_n(n_star)} {band}"
    return False, f"undetermined: {band}"


def no_effect_groups(fits: pd.DataFrame, by: str = "B_p") -> set:
    """The groups whose runs share one curve (the F-test found no effect of n)."""
    if "model" not in fits.columns or by not in fits.columns:
        return set()
    model = fits.groupby(by)["model"].agg(lambda m: bool(len(m)) and bool((m == "common").all()))
    return set(model.index[model.to_numpy(dtype=bool)])


def frontier_claims(frontier: pd.DataFrame, fits: pd.DataFrame, by: str = "B_p") -> pd.DataFrame:
    """`frontier` (Q1, with or without bands) plus columns determined and claim."""
    out = frontier.copy()
    common = no_effect_groups(fits, by)
    lo = out["n_star_lo"].to_numpy(dtype=float) if "n_star_lo" in out.columns else np.full(len(out), np.nan)
    hi = out["n_star_hi"].to_numpy(dtype=float) if "n_star_hi" in out.columns else np.full(len(out), np.nan)
    keys = out[by].to_numpy() if by in out.columns else np.full(len(out), None)
    said = [n_star_claim(n, a, b, no_effect=k in common)
            for n, a, b, k in zip(out["n_star"].to_numpy(dtype=float), lo, hi, keys)]
    out["determined"] = np.array([d for d, _ in said], dtype=bool)
    out["claim"] = [t for _, t in said]
    return out


def direction(frontier: pd.DataFrame, *, no_effect: bool = False) -> str:
    """Whether n* rises or falls over one group's frontier, by its bands (module doc)."""
    if no_effect:
        return NO_EFFECT
    f = frontier
    if "comparable" in f.columns:
        f = f[f["comparable"].to_numpy(dtype=bool)]
    if "n_star_lo" not in f.columns:
        return NO_INTERVAL
    f = f[np.isfinite(f["n_star_lo"].to_numpy(dtype=float)) & np.isfinite(f["n_star_hi"].to_numpy(dtype=float))]
    if len(f) < 2:
        return NO_INTERVAL if len(f) == 0 else NOT_ESTABLISHED
    first, last = f.iloc[0], f.iloc[-1]
    if last["n_star_lo"] > first["n_star_hi"]:
        return RISES
    if last["n_star_hi"] < first["n_star_lo"]:
        return FALLS
    return NOT_ESTABLISHED


def law_claims(laws: pd.DataFrame, frontier: pd.DataFrame, fits: pd.DataFrame, by: str = "B_p") -> pd.DataFrame:
    """`laws` (one row per group) plus column claim: what may be said of the direction of n*(C)."""
    out = laws.copy()
    common = no_effect_groups(fits, by)
    claims = []
    for key in out[by]:
        f = frontier[frontier[by] == key]
        claims.append(direction(f, no_effect=key in common))
    out["claim"] = claims
    return out


def law_established(law) -> bool:
    """Whether a law row (dict or Series) may be drawn and quoted: its direction is established.
    Tables from before the claims (no claim column) keep the old behaviour."""
    claim = law.get("claim") if hasattr(law, "get") else None
    if claim is None or (isinstance(claim, float) and np.isnan(claim)):
        return True
    return claim in ESTABLISHED


def summary_table(frontier: pd.DataFrame, laws: pd.DataFrame, fits: pd.DataFrame, by: str = "B_p") -> pd.DataFrame:
    """One row per group: what the analysis may say, at the top of its compute range
    (summary.csv; the report and the README quote it). Columns: by, model (the
    pooling's: common / trend / runs), n_effect_p, compute (the frontier's last
    point), n_star, n_star_lo, n_star_hi, n_star_claim, reward, reward_lo,
    reward_hi, law_claim, L, U, U_lo, U_hi (the law's, quoted only when established); the
    pipeline adds resampled ('seeds', 'points' or 'none': what the bands resampled; with
    'points', one seed per cell, the bands do not hold run-to-run variation)."""
    rows = []
    for key, f in frontier.groupby(by, sort=True):
        f = f[np.isfinite(f["reward"].to_numpy(dtype=float))]
        if f.empty:
            continue
        end = f.iloc[-1]
        g = fits[fits[by] == key]
        law = laws[laws[by] == key]
        law = law.iloc[0] if len(law) else pd.Series(dtype=object)
        row = {by: key, "model": ",".join(sorted(set(g["model"]))) if "model" in g.columns else "",
               "n_effect_p": float(g["n_effect_p"].iloc[0]) if "n_effect_p" in g.columns and len(g) else np.nan,
               "compute": float(end["compute"]), "n_star": float(end["n_star"])}
        for col in ("n_star_lo", "n_star_hi", "reward", "reward_lo", "reward_hi"):
            row[col] = float(end[col]) if col in end.index else np.nan
        row["n_star_claim"] = end.get("claim", "")
        row["law_claim"] = law.get("claim", "")
        for col in ("L", "U", "U_lo", "U_hi"):
            row[col] = float(law[col]) if col in law.index else np.nan
        rows.append(row)
    return pd.DataFrame(rows)
