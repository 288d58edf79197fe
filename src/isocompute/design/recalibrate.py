"""The recalibration of a simulated assurance: what `isocompute design` prints is the share of its
simulated studies that establish a claim (`assurance.assess`, "raw"), passed through a map measured
on synthetic pilots of known truths (`reliability`), because that share is over-confident.

Why a map and not a better simulation: a simulated truth is one of the pilot's bootstrap replicates,
which is the pilot's point fit plus a second helping of its noise, so the drawn truths separate the n
more than the truth does, and a design judged on them determines an n* that the real study cannot.
Four fixes of the draws themselves were tried on tuning truths (an empirical-Bayes shrinkage of the
replicates' differences between n, a BIC and an AIC mixture with the replicate's null, a shrunk
run-to-run sd; docs/replication.md) and none was calibrated. The map is the standard remedy for a
forecast whose ranking is right and whose level is not. Per claim, beta calibration (Kull, Silva
Filho and Flach 2017, "Beyond sigmoids"):

    assurance = expit(c + a ln(p) - b ln(1 - p)),   p = raw share clipped to [1 / (2N + 2), 1 - 1 / (2N + 2)]

with N the simulated studies behind it (so that 0 of 20 and 20 of 20 stay finite and ordered), and
a, b >= 0 so that it keeps the order. With a = b it is Platt's scaling (Cox's calibration regression),
expit(c + a logit(p)), which the tool used before (`form="platt"`): a, b < 1 say the raw shares are too
extreme at that end, c < 0 too high. The third parameter lets the two ends bend apart: the raw shares
of "n* determined" pile up at 20 of 20 while its middle is under-confident, which one slope cannot
follow (a 3-fold cross-validation by pilots, docs/replication.md). `fit` finds (c, a, b) by maximum
likelihood on the rows of a reliability study (raw prediction against 0/1 outcomes of the design run
on the known truth), with a bootstrap over pilots for their intervals; `MEASURED` holds the maps the
tool uses, with the truths they were fitted on. They were judged afterwards on truths no fit saw
(docs/replication.md). A map holds for pilots like those it was fitted on: the reliability study's
laptop-sized pilot and its six shapes; a pilot far from them is printed with its raw shares beside.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit, logit

# The maps the tool applies, claim -> (c, a, b): `fit` on the rows of the reliability study's truths
# 3000-3095 and 5030-5221 (288 pilots, 1,152 designs per claim; `bench_design_reliability.py
# --first-truth 3000 --pilots 48 --out a.csv`, the same from 3048, 5030, 5078, 5126 and 5174, then
# `--from-rows` all six with `--fit`; 2026-12-07). Every block from 5030 on was first a judgement of the
# maps of its day on fresh truths (docs/replication.md); the last two found the 192-pilot maps
# under-confident at the ends of every claim, so these maps take them in. 95% over 400 resamples of
# the pilots: rises c [-0.49, +0.58], a [0.60, 1.02], b [0.33, 0.92]; determined c [-0.79, +0.80], a
# [0.41, 1.82], b [0.47, 1.05]; U c [-0.51, +0.58], a [0.65, 1.12], b [0.03, 0.62]. In a 6-fold
# cross-validation over those pilots (blocks of 48 truth seeds, `--cv 6`), 5 of 59 judged bins fell
# outside (Platt's: 4 of 54), Brier 0.1273 (0.1270). Judged on fresh truths 5222-5269 (declared in
# 27b0534): 9 of 11 judged bins inside, both misses at the floor of rises and U (0.07 against 0.02,
# p 0.36 x bins); on 5270-5317, unchanged: 8 of 9, rises' floor again; pooled, 10 of 14, 0.021
# family-wise, and no better than the raw shares by Brier. On pilots with 4 seeds per cell (truths
# 6000-6095, 87044a3 and 4e41be3): 12 of 13 judged bins inside, the miss rises' floor (docs/replication.md).
MEASURED_MAPS: dict[str, tuple[float, ...]] = {"rises": (0.047, 0.796, 0.599),
                                               "determined": (-0.143, 0.929, 0.797),
                                               "U": (0.057, 0.878, 0.323)}
MEASURED_FROM = "reliability truths 3000-3095 and 5030-5221 (288 synthetic pilots; docs/replication.md)"
MEASURED_CAVEAT = ("on 96 fresh pilots (truths 5222-5317) the maps came out over-confident at the floor of rises and U "
                   "(printed 0.07 and 0.06, observed 0.02) and under-confident at the low end of 'n* det' (printed 0.14, "
                   "observed 0.32); on 96 pilots with 4 seeds per cell (truths 6000-6095) they held every judged "
                   "bin but the floor of rises (0.07, 0.03); read the raw share beside it")


def _logits(p, studies) -> np.ndarray:
    """logit of the raw share(s) `p` of `studies` simulated studies, clipped to [1/(2N+2), 1 - 1/(2N+2)]."""
    edge = 1.0 / (2 * np.maximum(np.asarray(studies, dtype=float), 1.0) + 2)
    return logit(np.clip(np.asarray(p, dtype=float), edge, 1 - edge))


@dataclass(frozen=True)
class Recalibration:
    """Per claim, the map (c, a, b) of the module doc; a claim without one passes through unchanged.
    `source` says which truths fitted it; `caveat`, what a judgement on fresh truths found it gets wrong."""

    maps: dict
    source: str = ""
    caveat: str = ""

    def __call__(self, claim: str, p, studies: int) -> np.ndarray | float:
        """The recalibrated assurance of raw share(s) `p` of `studies` simulated studies (NaN stays NaN)."""
        x = np.asarray(p, dtype=float)
        if claim not in self.maps:
            return x if x.ndim else float(x)
        c, a, b = _three(self.maps[claim])
        out = np.where(np.isfinite(x), expit(_features(x, studies) @ np.array([c, a, b])), np.nan)
        return out if out.ndim else float(out)

    def describe(self) -> str:
        if not self.maps:
            return "assurance not recalibrated (raw shares of the simulated studies)"
        maps = "; ".join(f"{claim} c {c:+.2f} a {a:.2f} b {b:.2f}"
                         for claim, (c, a, b) in ((k, _three(v)) for k, v in self.maps.items()))
        caveat = f"; {self.caveat}" if self.caveat else ""
        return f"assurance recalibrated (expit(c + a ln(raw) - b ln(1 - raw))): {maps}; fitted on {self.source}{caveat}"


def _three(m) -> tuple[float, float, float]:
    """A map as (c, a, b); a Platt map (c, a) is (c, a, a)."""
    return (float(m[0]), float(m[1]), float(m[1])) if len(m) == 2 else tuple(float(v) for v in m)


def _features(p, studies) -> np.ndarray:
    """(1, ln p, -ln(1 - p)) of the clipped raw share(s) `p` (module doc), one row each."""
    x = np.atleast_1d(_logits(p, studies))
    with np.errstate(invalid="ignore"):                 # a NaN share stays NaN (the caller masks it)
        rows = np.column_stack([np.ones_like(x), -np.logaddexp(0.0, -x), np.logaddexp(0.0, x)])
    return rows.reshape(np.shape(p) + (3,))


IDENTITY = Recalibration({}, "")
MEASURED = Recalibration(MEASURED_MAPS, MEASURED_FROM, MEASURED_CAVEAT)


def _newton(X, hits, tries, iterations: int) -> np.ndarray | None:
    """The maximum-likelihood weights of a logistic regression of hits in tries on X, by Newton's method
    from zero (the usual start); None where it does not converge."""
    w = np.zeros(X.shape[1])
    for _ in range(iterations):
        q = expit(X @ w)
        hess = (X * (tries * q * (1 - q))[:, None]).T @ X
        try:
            step = np.linalg.solve(hess, X.T @ (hits - tries * q))
        except np.linalg.LinAlgError:
            return None
        w = w + step
        if np.max(np.abs(step)) < 1e-10:
            return w if np.all(np.isfinite(w)) else None
    return None


def fit_map(p, hits, tries, studies, iterations: int = 50, form: str = "beta") -> tuple[float, ...]:
    """(c, a, b) of one claim by maximum likelihood (a logistic regression of the outcomes on ln p and
    -ln(1 - p), by Newton's method; a slope that comes out negative is held at 0 and the rest refitted,
    as Kull et al. do; `form` 'platt' ties a = b and returns (c, a)): raw shares `p` of `studies`
    simulated studies each, `hits` successes in `tries` outcomes of the design run on its truth.
    ValueError where no increasing map fits."""
    if form not in ("beta", "platt"):
        raise ValueError(f"recalibration form {form!r}: expected 'beta' or 'platt'")
    F = _features(np.asarray(p, dtype=float), studies)
    hits, tries = np.asarray(hits, dtype=float), np.asarray(tries, dtype=float)
    if form == "platt":
        w = _newton(np.column_stack([F[:, 0], F[:, 1] + F[:, 2]]), hits, tries, iterations)
        ok = w is not None and w[1] > 0
    else:
        w = _newton(F, hits, tries, iterations)
        if w is not None and (w[1] < 0) != (w[2] < 0):          # one end does not order: hold it at 0
            keep = [0, 1] if w[2] < 0 else [0, 2]
            part = _newton(F[:, keep], hits, tries, iterations)
            w = None if part is None else np.insert(part, 2 if w[2] < 0 else 1, 0.0)
        ok = w is not None and np.all(w[1:] >= 0) and np.any(w[1:] > 0)
    if not ok:
        shown = "none converged" if w is None else ", ".join(f"{v:.3g}" for v in w)
        raise ValueError(f"recalibration: no increasing map ({shown}): the raw shares do not order the outcomes")
    return tuple(float(v) for v in w)


def fit(rows: pd.DataFrame, column: str = "predicted_raw", boot: int = 200, seed: int = 0,
        form: str = "beta") -> pd.DataFrame:
    """Per claim of a reliability study's rows (`reliability.pilot_rows`: claim, `column` the raw share,
    successes, outcomes, studies, truth_seed, as `reliability.repredicted` gives them; refused pilots left
    out): (c, a, b) (with `form` 'platt', b = a), the designs they rest on, and the 95% percentile interval
    of each over `boot` resamples of the pilots (a pilot's designs kept together)."""
    rows = rows[rows["claim"].notna() & rows[column].notna()]
    rng = np.random.default_rng(seed)
    out = []
    for claim, g in rows.groupby("claim", sort=False):
        cols = [g[column].to_numpy(dtype=float), g["successes"].to_numpy(dtype=float),
                g["outcomes"].to_numpy(dtype=float), g["studies"].to_numpy(dtype=float)]
        point = _three(fit_map(*cols, form=form))
        pilots, where = np.unique(g["truth_seed"].to_numpy(), return_inverse=True)
        members = [np.flatnonzero(where == i) for i in range(len(pilots))]
        draws = []
        for _ in range(boot):
            pick = np.concatenate([members[i] for i in rng.integers(0, len(pilots), size=len(pilots))])
            try:
                draws.append(_three(fit_map(*(c[pick] for c in cols), form=form)))
            except ValueError:
                continue
        lo, hi = (np.quantile(np.array(draws), [0.025, 0.975], axis=0) if draws
                  else (np.full(3, np.nan), np.full(3, np.nan)))
        row = {"claim": claim}
        for k, name in enumerate("cab"):
            row.update({name: point[k], f"{name}_lo": lo[k], f"{name}_hi": hi[k]})
        out.append({**row, "designs": len(g), "pilots": len(pilots), "resamples": len(draws)})
    return pd.DataFrame(out)
