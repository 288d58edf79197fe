"""The adaptive sweep on a prior of known truths, judged by regret, per stratum: the scoring of
benchmarks/bench_adaptive_strata.py, which prints it.

A study (`study`) is a truth of `adaptive.strata` on the paper's Easy columns B_p 16 and 32,
n 8..512, C_max 2^22, validated on the compute-matched schedule from C_max / 2^10 with 300 x 4
generations per evaluation; its noise sd (0.013 or 0.03) and evaluations per doubling (2 or 4)
cycle with the truth's index (`setting`). `judge` replays one study with the sweep's rule
(`adaptive.replay.replay`) and scores it at `PROBES` probe budgets per B_p over
[C_max / 2^10, C_max]: wrong by regret (the true worth of the sweep's n* more than epsilon below
the best n's; a run's worth at a budget is the true reward of its best checkpoint so far,
`Truth.value`; the rate by the reward at the budget beside it), outside the full grid's n* band
(with a bootstrap), exact agreement with the full grid's n*, the bill as a share of the grid's
beside the oracle floor (`oracle.oracle_share`), revivals, and optionally the calibration of the
shared model's band (`calibration.calibration`). `summary` gives one row per stratum with Wilson
intervals (`wilson`) and `verdict` judges it against `TARGET`.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from isocompute.analysis.adaptive.calibration import calibration
from isocompute.analysis.adaptive.oracle import oracle_share
from isocompute.analysis.adaptive.replay import replay, with_grid_band
from isocompute.analysis.adaptive.strata import B_PS, C_MAX, NS, SPAN_DOUBLINGS, Truth, draw_truth
from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
from isocompute.schedule import compute_schedule_steps
from isocompute.sweep import SweepSettings

EVAL_ROLLOUTS = 300 * 4
SETTINGS = ((0.013, 4), (0.03, 4), (0.013, 2), (0.03, 2))     # (noise sd, evaluations per doubling), by truth index
PROBES = 20
TARGET = {"wrong_hi": 0.05, "over_grid": 0.01, "bill_mean": 0.50, "bill_late": 0.70, "bill_max": 1.0}


def setting(truth_seed: int) -> tuple[float, int]:
    return SETTINGS[truth_seed % len(SETTINGS)]


def study(truth: Truth, truth_seed: int, noise_seed: int) -> pd.DataFrame:
    sigma, ppd = setting(truth_seed)
    points = ppd * SPAN_DOUBLINGS + 1
    steps = lambda B, M_max: compute_schedule_steps(B, M_max, points,  # noqa: E731
                                                    min_compute=C_MAX / 2 ** SPAN_DOUBLINGS, c_max=C_MAX)
    return synthetic_study(B_PS, NS, c_max=C_MAX, eval_steps=steps, reward=truth.reward,
                           noise=EvalNoise(sd=sigma, seed=10_007 * truth_seed + noise_seed))


def judge(task: tuple) -> dict:
    """One study: (stratum, truth seed, noise seed, rule params, bootstrap) -> its row."""
    stratum, ts, ns_, params, n_boot, calibrate = task
    start = time.perf_counter()
    truth = draw_truth(stratum, ts)
    evals = study(truth, ts, ns_)
    p = SweepSettings.of(params)
    budgets = np.geomspace(C_MAX / 2 ** SPAN_DOUBLINGS, C_MAX, PROBES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # Gaussian tables: one error for all evaluations
        res = replay(evals, c_max=C_MAX, params=p, probes=budgets, eval_rollouts=EVAL_ROLLOUTS)
        if n_boot:
            res = with_grid_band(res, evals, n_boot)
    pr = res["probes"]
    def wrong_by(worth):
        """Per answer column (the sweep's, the full grid's): whether each probe's n* is worth more than
        epsilon less than the best n by `worth`, each (probe, n) worth computed once."""
        W = np.array([[float(worth(b, k, c)) for k in NS] for b, c in zip(pr["B_p"], pr["compute"])])
        best = W.max(axis=1)
        for col in ("n_star_adaptive", "n_star_full"):
            got = np.array([W[i, NS.index(int(k))] if np.isfinite(k) else -np.inf
                            for i, k in enumerate(pr[col].to_numpy(dtype=float))])
            yield best - got > p.epsilon + 1e-12
    wrong, wrong_full = wrong_by(truth.value)
    now, now_full = wrong_by(truth.reward)
    out_band = int((~pr["in_band"]).sum()) if "in_band" in pr else np.nan
    sigma, ppd = setting(ts)
    return {"stratum": stratum, "truth": ts, "noise_seed": ns_, "sigma": sigma, "per_doubling": ppd,
            "lead_doublings": truth.lead_doublings, "bill": res["share"], "training": res["share_training"],
            "validation": res["share_validation"], "oracle": oracle_share(truth, evals, p.epsilon, EVAL_ROLLOUTS),
            "probes": len(pr), "wrong": int(wrong.sum()), "wrong_full": int(wrong_full.sum()),
            "wrong_now": int(now.sum()), "wrong_now_full": int(now_full.sum()),
            "outside_band": out_band,
            "same_n_star": float((pr["n_star_adaptive"] == pr["n_star_full"]).mean()),
            "revivals": int(res["runs"]["revivals"].sum()),
            "calibration": calibration(truth, evals, p) if calibrate else {},
            "seconds": time.perf_counter() - start}


def wilson(k: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion k / n."""
    if n <= 0:
        return (np.nan, np.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per stratum: bill mean and p95, oracle floor, wrong by regret (sweep, grid) with
    Wilson intervals, outside the grid's band, exact agreement, revivals."""
    rows = []
    for stratum, g in table.groupby("stratum", sort=False):
        probes = g["probes"].sum()
        lo, hi = wilson(g["wrong"].sum(), probes)
        glo, ghi = wilson(g["wrong_full"].sum(), probes)
        band = g["outside_band"].dropna()
        blo, bhi = wilson(band.sum(), g.loc[band.index, "probes"].sum()) if len(band) else (np.nan, np.nan)
        rows.append({"stratum": stratum, "studies": len(g), "bill": g["bill"].mean(),
                     "bill_p95": g["bill"].quantile(0.95), "bill_max": g["bill"].max(), "oracle": g["oracle"].mean(),
                     "wrong": g["wrong"].sum() / probes, "wrong_lo": lo, "wrong_hi": hi,
                     "grid_wrong": g["wrong_full"].sum() / probes, "grid_wrong_hi": ghi,
                     "wrong_now": g["wrong_now"].sum() / probes, "grid_wrong_now": g["wrong_now_full"].sum() / probes,
                     "studies_wrong": float((g["wrong"] > 0).mean()),
                     "outside_band": band.sum() / g.loc[band.index, "probes"].sum() if len(band) else np.nan,
                     "outside_band_hi": bhi, "same_n_star": g["same_n_star"].mean(),
                     "revivals": int(g["revivals"].sum())})
    return pd.DataFrame(rows)


def verdict(summ: pd.DataFrame) -> list[str]:
    lines = []
    for r in summ.itertuples():
        ok = r.wrong_hi <= TARGET["wrong_hi"] and r.wrong <= r.grid_wrong + TARGET["over_grid"] and r.bill_max <= 1.0
        lines.append(f"{r.stratum:<11} wrong {r.wrong:.1%} [{r.wrong_lo:.1%}, {r.wrong_hi:.1%}] (grid {r.grid_wrong:.1%})"
                     f", bill max {r.bill_max:.1%}: {'PASS' if ok else 'FAIL'}")
    mean = summ["bill"].mean()
    lines.append(f"bill averaged over the strata {mean:.1%} <= 50%: {'PASS' if mean <= TARGET['bill_mean'] else 'FAIL'}")
    late = summ.loc[summ["stratum"] == "late", "bill"]
    if len(late):
        lines.append(f"late stratum bill {late.iloc[0]:.1%} <= 70%: {'PASS' if late.iloc[0] <= TARGET['bill_late'] else 'FAIL'}")
    return lines
