"""The recalibration of a simulated assurance: what `isocompute design` prints is the share of its
simulated studies that establish a claim (`assurance.assess`, "raw"), passed through a map measured
on synthetic pilots of known truths (`reliability`), because that share is over-confident.

Why a map and not a better simulation: a simulated truth is one of the pilot's bootstrap replicates,
which is the pilot's point fit plus a second helping of its noise, so the drawn truths separate the n
more than the truth does, and a design judged on them determines an n* that the real study cannot.
Four fixes of the draws themselves were tried on tuning truths (an empirical-Bayes shrinkage of the
replicates' differences between n, a BIC and an AIC mixture with the replicate's null, a shrunk
run-to-run sd; docs/replication.md) and none was calibrated. The map is the standard remedy for a
forecast whose ranking is right and whose level is not (Platt's scaling; Cox's calibration
regression): per claim,

    assurance = expit(a + b logit(p)),   p = raw share clipped to [1 / (2N + 2), 1 - 1 / (2N + 2)]

with N the simulated studies behind it (so that 0 of 20 and 20 of 20 stay finite and ordered). b < 1
says the raw shares are too extreme, a < 0 too high. `fit` finds (a, b) by maximum likelihood on the
rows of a reliability study (raw prediction against 0/1 outcomes of the design run on the known
truth), with a bootstrap over pilots for their intervals; `MEASURED` holds the maps the tool uses,
with the truths they were fitted on. They were judged afterwards on truths no fit saw
(docs/replication.md). A map holds for pilots like those it was fitted on: the reliability study's
laptop-sized pilot and its six shapes; a pilot far from them is printed with its raw shares beside.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit, logit

# The maps the tool applies, claim -> (a, b): `fit` on the rows of the reliability study's tuning
# truths 3000-3095 (96 pilots, 384 designs per claim; `bench_design_reliability.py --first-truth 3000
# --pilots 48 --out a.csv`, the same from 3048, then `--from-rows` both rows with `--fit`;
# 2026-12-07). 95% over 400 resamples of the pilots: rises a [-0.69, +0.09], b [0.55, 0.90];
# determined a [-1.11, -0.09], b [0.59, 1.07]; U a [-1.07, -0.34], b [0.46, 0.75]. Fitted on
# 3000-3047 alone and judged on 3048-3095, 9 of 10 judged bins were inside (raw: 5 of 9).
MEASURED_MAPS: dict[str, tuple[float, float]] = {"rises": (-0.314, 0.680), "determined": (-0.521, 0.795),
                                                 "U": (-0.687, 0.576)}
MEASURED_FROM = "reliability tuning truths 3000-3095 (96 synthetic pilots; docs/replication.md)"


def _logits(p, studies) -> np.ndarray:
    """logit of the raw share(s) `p` of `studies` simulated studies, clipped to [1/(2N+2), 1 - 1/(2N+2)]."""
    edge = 1.0 / (2 * np.maximum(np.asarray(studies, dtype=float), 1.0) + 2)
    return logit(np.clip(np.asarray(p, dtype=float), edge, 1 - edge))


@dataclass(frozen=True)
class Recalibration:
    """Per claim, the map (a, b) of the module doc; a claim without one passes through unchanged.
    `source` says which truths fitted it."""

    maps: dict
    source: str = ""

    def __call__(self, claim: str, p, studies: int) -> np.ndarray | float:
        """The recalibrated assurance of raw share(s) `p` of `studies` simulated studies (NaN stays NaN)."""
        x = np.asarray(p, dtype=float)
        if claim not in self.maps:
            return x if x.ndim else float(x)
        a, b = self.maps[claim]
        out = np.where(np.isfinite(x), expit(a + b * _logits(x, studies)), np.nan)
        return out if out.ndim else float(out)

    def describe(self) -> str:
        if not self.maps:
            return "assurance not recalibrated (raw shares of the simulated studies)"
        maps = "; ".join(f"{c} a {a:+.2f} b {b:.2f}" for c, (a, b) in self.maps.items())
        return f"assurance recalibrated (expit(a + b logit(raw))): {maps}; fitted on {self.source}"


IDENTITY = Recalibration({}, "")
MEASURED = Recalibration(MEASURED_MAPS, MEASURED_FROM)


def fit_map(p, hits, tries, studies, iterations: int = 50) -> tuple[float, float]:
    """(a, b) of one claim by maximum likelihood (a logistic regression of the outcomes on logit(p), by
    Newton's method): raw shares `p` of `studies` simulated studies each, `hits` successes in `tries`
    outcomes of the design run on its truth. ValueError where no increasing map fits."""
    x = _logits(p, studies)
    hits, tries = np.asarray(hits, dtype=float), np.asarray(tries, dtype=float)
    X = np.column_stack([np.ones_like(x), x])
    ab, converged = np.zeros(2), False              # Newton from zero: the usual start of a logistic fit
    for _ in range(iterations):
        q = expit(X @ ab)
        grad = X.T @ (hits - tries * q)
        hess = (X * (tries * q * (1 - q))[:, None]).T @ X
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break
        ab = ab + step
        if np.max(np.abs(step)) < 1e-10:
            converged = True
            break
    a, b = (float(v) for v in ab)
    if not converged or not (np.isfinite(a) and np.isfinite(b)) or b <= 0:
        raise ValueError(f"recalibration: no increasing map (a {a:.3g}, b {b:.3g}): the raw shares do not order "
                         "the outcomes")
    return a, b


def fit(rows: pd.DataFrame, column: str = "predicted_raw", boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """Per claim of a reliability study's rows (`reliability.pilot_rows`: claim, `column` the raw share,
    successes, outcomes, studies, truth_seed, as `reliability.repredicted` gives them; refused pilots left
    out): (a, b), the designs they rest on,
    and the 95% percentile interval of each over `boot` resamples of the pilots (a pilot's designs kept
    together)."""
    rows = rows[rows["claim"].notna() & rows[column].notna()]
    rng = np.random.default_rng(seed)
    out = []
    for claim, g in rows.groupby("claim", sort=False):
        cols = [g[column].to_numpy(dtype=float), g["successes"].to_numpy(dtype=float),
                g["outcomes"].to_numpy(dtype=float), g["studies"].to_numpy(dtype=float)]
        a, b = fit_map(*cols)
        pilots, where = np.unique(g["truth_seed"].to_numpy(), return_inverse=True)
        members = [np.flatnonzero(where == i) for i in range(len(pilots))]
        draws = []
        for _ in range(boot):
            pick = np.concatenate([members[i] for i in rng.integers(0, len(pilots), size=len(pilots))])
            try:
                draws.append(fit_map(*(c[pick] for c in cols)))
            except ValueError:
                continue
        lo, hi = (np.quantile(np.array(draws), [0.025, 0.975], axis=0) if draws
                  else (np.full(2, np.nan), np.full(2, np.nan)))
        out.append({"claim": claim, "a": a, "b": b, "a_lo": lo[0], "a_hi": hi[0], "b_lo": lo[1], "b_hi": hi[1],
                    "designs": len(g), "pilots": len(pilots), "resamples": len(draws)})
    return pd.DataFrame(out)
