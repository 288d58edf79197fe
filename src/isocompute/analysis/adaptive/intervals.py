"""Intervals of the adaptive sweep's judged rates: Wilson's for a proportion (`wilson`), and a
bootstrap over truths for a ratio of sums over a stratum's studies, each truth's noise seeds drawn
together (`truth_bootstrap`): a study's probes, and a truth's studies, are not independent draws.
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
