"""A truth for the power analysis taken from a finished study's own fits, and when one n overtakes another.

The fits' usable statuses are the analysis' own (`fits.sigmoid.USABLE`: ok and flat); a flat
fit (it never rose: A = R0, no B or midpoint) is a constant curve to `overtake`, and has no
midpoint for the trend of `FittedTruth`, which keeps the fits with C_mid > 0.

`FittedTruth.from_tables(DIR)` reads `DIR/fits.csv` (a split's analysis tables,
results/{experiment}/analysis/{split}/tables) and gives the sigmoid of every (B_p, n) the
study fitted: R0, A, B, C_mid as the analysis fitted them (the trend model's values where it
pooled the runs). An n the study did not train is extrapolated along the study's own trend:
A and log C_mid quadratic in log2 n, per B_p, fitted to that B_p's runs (degree 1 with three
runs, flat with fewer), B the B_p's mean. A B_p the study did not train takes the nearest
trained B_p (in log2). Its null puts every n of a B_p on the curve of `null_n` (default 4).

`overtake(fits, B_p, low, high)` is the compute from which run `high` stays ahead of run
`low` on their fitted curves (inf where it never does up to `c_hi`, or, with A_high <= A_low,
at any compute); `overtake_interval` gives it per bootstrap replicate of the analysis
(bootstrap_fits.csv): the median, the 95% interval, and the share of replicates in which
`high` never overtakes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.analysis.fits.sigmoid import USABLE, sigmoid_reward

PARAMS = ("R0", "A", "B", "C_mid")


def usable_cells(fits: pd.DataFrame) -> pd.DataFrame:
    """One row per (B_p, n) with a usable fit (status ok or flat, C_mid > 0): its parameters, averaged
    over seeds. What a truth is built from, and what a pilot must have enough of."""
    ok = fits[fits["status"].isin(USABLE) & (fits["C_mid"] > 0)]
    return ok.groupby(["B_p", "n"], as_index=False)[list(PARAMS)].mean()      # seeds: one curve per cell


@dataclass(frozen=True)
class FittedTruth:
    """Per B_p: its runs' n and fitted (R0, A, B, C_mid) arrays."""

    cells: dict
    null_n: int = 4
    source: str = ""

    @classmethod
    def from_tables(cls, tables, null_n: int = 4) -> "FittedTruth":
        path = Path(tables) / "fits.csv" if Path(tables).is_dir() else Path(tables)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no fits table (expected a finished study's "
                                    f"results/<experiment>/analysis/<split>/tables/fits.csv)")
        return cls.from_fits(pd.read_csv(path), null_n, str(path))

    @classmethod
    def from_fits(cls, fits: pd.DataFrame, null_n: int = 4, source: str = "fits") -> "FittedTruth":
        """The truth of a fits table (fits.csv, or one replicate's rows of bootstrap_fits.csv);
        ValueError naming `source` when a column is missing or no fit is usable."""
        missing = [c for c in ("B_p", "n", "status", *PARAMS) if c not in fits.columns]
        if missing:
            raise ValueError(f"{source}: missing column {missing[0]!r} (expected fits.csv of the analysis)")
        ok = usable_cells(fits)
        if ok.empty:
            raise ValueError(f"{source}: no usable fit (status ok or flat with C_mid > 0)")
        cells = {int(b): g.sort_values("n").reset_index(drop=True) for b, g in ok.groupby("B_p")}
        return cls(cells, null_n, source)

    @property
    def name(self) -> str:
        return "fitted"

    def _group(self, B_p: int) -> pd.DataFrame:
        keys = np.array(sorted(self.cells))
        return self.cells[int(keys[np.argmin(np.abs(np.log2(keys) - np.log2(B_p)))])]

    def params(self, B_p: int, n: int) -> dict:
        """The fitted sigmoid of (B_p, n); off the study's n, extrapolated along its trend in log2 n."""
        g = self._group(B_p)
        hit = g[g["n"] == n]
        if len(hit):
            return {k: float(hit[k].iloc[0]) for k in PARAMS}
        x = np.log2(g["n"].to_numpy(dtype=float))
        degree = min(2, len(x) - 1)
        at = np.log2(float(n))
        A = float(np.polyval(np.polyfit(x, g["A"].to_numpy(dtype=float), degree), at)) if degree else float(g["A"].mean())
        log_mid = np.log(g["C_mid"].to_numpy(dtype=float))
        mid = float(np.exp(np.polyval(np.polyfit(x, log_mid, degree), at))) if degree else float(np.exp(log_mid.mean()))
        return {"R0": float(g["R0"].mean()), "A": float(np.clip(A, 0.0, 1.0)), "B": float(g["B"].mean()), "C_mid": mid}

    def truth(self, kind: str):
        """params(B_p, n) of the fitted ('rise') truth, or of its null: every n on null_n's curve."""
        if kind == "null":
            return lambda B_p, n: self.params(B_p, self.null_n)
        if kind != "rise":
            raise ValueError(f"unknown truth kind {kind!r}: expected 'rise' or 'null'")
        return self.params


def overtake(params_low: dict, params_high: dict, c_hi: float = 2.0 ** 40, points: int = 4001) -> float:
    """The compute from which the `high` curve stays above the `low` one, up to c_hi: inf where it is not
    ahead at c_hi or its asymptote A is not above low's (it then never stays ahead); 0 where always ahead."""
    if params_high["A"] <= params_low["A"]:
        return float("inf")
    grid = np.geomspace(1.0, c_hi, points)
    ahead = sigmoid_reward(grid, **params_high) > sigmoid_reward(grid, **params_low)
    if not ahead[-1]:
        return float("inf")
    behind = np.flatnonzero(~ahead)
    return 0.0 if not behind.size else float(grid[behind[-1] + 1])


def overtake_interval(boot: pd.DataFrame, B_p: int, low: int, high: int, ci: float = 0.95) -> dict:
    """`overtake` of n = high over n = low at B_p in each bootstrap replicate (bootstrap_fits.csv):
    median and `ci` interval of log2 compute (inf counted as never), and the share that never overtake."""
    rows = boot[(boot["B_p"] == B_p) & boot["n"].isin([low, high]) & boot["status"].isin(USABLE)]
    at = []
    for _, g in rows.groupby("replicate"):
        if set(g["n"]) != {low, high}:
            continue
        p = {int(n): {k: float(r[k]) for k in PARAMS} for n, r in g.set_index("n").iterrows()}
        at.append(overtake(p[low], p[high]))
    at = np.log2(np.maximum(np.array(at, dtype=float), 1.0)) if at else np.array([])
    if not at.size:
        return {"replicates": 0, "never": np.nan, "log2_median": np.nan, "log2_lo": np.nan, "log2_hi": np.nan}
    q = (1 - ci) / 2
    lo, med, hi = np.quantile(at, [q, 0.5, 1 - q], method="inverted_cdf")   # inf sorts last: "never"
    return {"replicates": int(at.size), "never": float(np.isinf(at).mean()), "log2_median": float(med),
            "log2_lo": float(lo), "log2_hi": float(hi)}
