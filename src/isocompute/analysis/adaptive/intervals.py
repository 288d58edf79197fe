"""Intervals of the adaptive sweep's judged rates: Wilson's for a proportion (`wilson`), and a
bootstrap over truths for a ratio of sums over a stratum's studies, each truth's noise seeds drawn
together (`truth_bootstrap`): a study's probes, and a truth's studies, are not independent draws.
And the relative bar (the sweep wrong where it acts at most `over` above the grid, in every
stratum) read with its own error rate (`gap_bar`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def wilson(k: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion k / n."""
    if n <= 0:
        return (np.nan, np.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def truth_bootstrap(g: pd.DataFrame, numerators: list[str], denominators: list[str], resamples: int = 2000,
                    seed: int = 0) -> list[tuple[float, float]]:
    """95% percentile intervals of sum(numerator) / sum(denominator) over a stratum's studies, each
    pair resampled by truth (a truth's noise seeds drawn together): one (lo, hi) per pair."""
    truths = g.groupby("truth", sort=True)[list(dict.fromkeys(numerators + denominators))].sum()
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(truths), size=(resamples, len(truths)))
    out = []
    for num, den in zip(numerators, denominators):
        a, b = truths[num].to_numpy(dtype=float)[pick].sum(axis=1), truths[den].to_numpy(dtype=float)[pick].sum(axis=1)
        ratio = np.divide(a, b, out=np.full(resamples, np.nan), where=b > 0)
        ok = ratio[np.isfinite(ratio)]
        out.append(tuple(np.percentile(ok, [2.5, 97.5])) if ok.size else (np.nan, np.nan))
    return out


def _truth_gaps(studies: pd.DataFrame) -> dict:
    """Per stratum: each truth's paired difference (sweep wrong - grid wrong where the sweep acts, its noise
    seeds summed), its probes, and the stratum's gap (sum of differences / sum of probes)."""
    out = {}
    for stratum, g in studies.groupby("stratum", sort=False):
        t = g.groupby("truth")[["wrong_acting", "grid_wrong_acting", "acting_probes"]].sum()
        diff = (t["wrong_acting"] - t["grid_wrong_acting"]).to_numpy(dtype=float)
        probes = t["acting_probes"].to_numpy(dtype=float)
        out[stratum] = (diff, probes, diff.sum() / probes.sum() if probes.sum() > 0 else np.nan)
    return out


def gap_bar(studies: pd.DataFrame, over: float = 0.01, true_gaps=(0.0, 0.005), resamples: int = 4000,
            seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """The relative bar read with its error rate, from a holdout's studies (bench_adaptive_strata's rows).
    Per stratum: the paired gap and its one-sided p against 'the true gap is at most `over`' (the
    stratum's per-truth differences shifted so that their gap is `over`, then resampled by truth: how
    often a gap as large as the one seen), and how often it alone exceeds `over` at each true gap (column
    fails_at_<g in points>). And, for each true gap g in `true_gaps`, the share of
    resampled holdouts (every stratum shifted to g) in which some stratum's gap exceeds `over`: how
    often a sweep exactly that much worse than the grid everywhere fails the bar."""
    rng = np.random.default_rng(seed)
    per = _truth_gaps(studies)
    rows, fails = [], {g: np.zeros(resamples, dtype=bool) for g in true_gaps}
    for stratum, (diff, probes, gap) in per.items():
        pick = rng.integers(0, len(probes), size=(resamples, len(probes)))
        def shifted(g, diff=diff, probes=probes, gap=gap, pick=pick):
            d = diff - probes * (gap - g)
            return d[pick].sum(axis=1) / probes[pick].sum(axis=1)
        row = {"stratum": stratum, "truths": len(probes), "gap": gap, "p_over": float(np.mean(shifted(over) >= gap - 1e-12))}
        for g in true_gaps:
            over_here = shifted(g) > over + 1e-12
            row[f"fails_at_{100 * g:g}"] = float(over_here.mean())
            fails[g] |= over_here
        rows.append(row)
    return pd.DataFrame(rows), {g: float(f.mean()) for g, f in fails.items()}
