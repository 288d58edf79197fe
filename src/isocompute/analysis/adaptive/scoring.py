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
from isocompute.analysis.adaptive.claims import compare_claims
from isocompute.analysis.adaptive.intervals import truth_bootstrap
from isocompute.analysis.adaptive.oracle import oracle_share
from isocompute.analysis.adaptive.replay import replay, with_grid_band
from isocompute.analysis.adaptive.strata import B_PS, C_MAX, NS, SPAN_DOUBLINGS, Truth, draw_truth
from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
from isocompute.schedule import compute_schedule_steps
from isocompute.sweep import SweepSettings

EVAL_ROLLOUTS = 300 * 4
SETTINGS = ((0.013, 4), (0.03, 4), (0.013, 2), (0.03, 2))     # (noise sd, evaluations per doubling), by truth index
PROBES = 20
TARGET = {"wrong_hi": 0.05, "over_grid": 0.01, "bill_mean": 0.40, "bill_stratum": 0.60}   # the bar the sweep is held to


def setting(truth_seed: int) -> tuple[float, int]:
    return SETTINGS[truth_seed % len(SETTINGS)]


def study(truth: Truth, truth_seed: int, noise_seed: int) -> pd.DataFrame:
    sigma, ppd = setting(truth_seed)
    points = ppd * SPAN_DOUBLINGS + 1
    steps = lambda B, M_max: compute_schedule_steps(B, M_max, points,  # noqa: E731
                                                    min_compute=C_MAX / 2 ** SPAN_DOUBLINGS, c_max=C_MAX)
    return synthetic_study(B_PS, NS, c_max=C_MAX, eval_steps=steps, reward=truth.reward,
                           noise=EvalNoise(sd=sigma, seed=10_007 * truth_seed + noise_seed,
                                           binomial_like=bool(truth.noise.get("binomial", False)),
                                           run_sd=truth.noise.get("run_sd", 0.0),
                                           wiggle_sd=truth.noise.get("wiggle_sd", 0.0),
                                           wiggle_doublings=truth.noise.get("wiggle_doublings", 1.0)))


def regrets(truth: Truth, p: SweepSettings) -> dict:
    """The regret the sweep may accept on each B_p of `truth`, in reward (`SweepSettings.regret` of
    the truth's rise): what "wrong by regret" is judged against."""
    return {B_p: p.regret(truth.rise(B_p, NS, C_MAX)) for B_p in B_PS}


def decision_calibration(truth: Truth, log: list, p: SweepSettings) -> tuple[int, int]:
    """Decision-level calibration of the shared model: of the runs it stopped at a rung (each a chance
    below its floor, 1 - Phi(z)), how many truly beat every run that went on from that rung by more
    than the regret at some compute ahead (true best-checkpoint values, `Truth.value`, on 65 points
    from the rung to C_max). Returns (bad stops, stops); bad / stops should sit at or under the floor."""
    eps = regrets(truth, p)
    stops = bad = 0
    for entry in log:
        d = entry["decision"]
        model = d[(~d["continue"].astype(bool)) & d["reason"].astype(str).str.startswith("shared model")]
        if model.empty:
            continue
        grid = np.geomspace(entry["rung"], C_MAX, 65)[1:]
        for B_p, n in zip(model["B_p"], model["n"]):
            rivals = [k for b, k in entry["going"] if b == B_p]
            stops += 1
            if not rivals:
                bad += 1
                continue
            top = np.max([truth.value(B_p, int(k), grid) for k in rivals], axis=0)
            bad += bool(np.any(truth.value(B_p, int(n), grid) > top + eps[B_p] + 1e-12))
    return bad, stops


def first_stops(log: list) -> dict:
    """From a replay's decision log: the rung of each B_p's first stop, by any rule."""
    first = {}
    for entry in log:
        d = entry["decision"]
        for b in d.loc[~d["continue"].astype(bool), "B_p"]:
            first.setdefault(b, entry["rung"])
    return first


def where_they_part(res: dict, only: np.ndarray) -> dict:
    """Of the probes `only` (a mask over a replay's probes: the sweep wrong where the grid is right),
    how many lie below their B_p's first stop (no decision of the sweep's yet: only the stopped runs'
    shorter data, so their fits, differ from the grid's), and at how many the sweep's answer is a
    run it trained to C_max."""
    pr = res["probes"]
    first = first_stops(res["log"])
    before = pr["compute"].to_numpy(dtype=float) < np.array([first.get(b, np.inf) for b in pr["B_p"]]) * (1 - 1e-9)
    reached = {(float(b), float(k)): c for b, k, c in res["runs"][["B_p", "n", "stopped_at"]].itertuples(index=False)}
    full_pick = np.array([reached.get((float(b), float(k)), 0.0) >= C_MAX * (1 - 1e-9)
                          for b, k in zip(pr["B_p"], pr["n_star_adaptive"].to_numpy(dtype=float))])
    return {"sweep_only": int(only.sum()), "sweep_only_before_stops": int((only & before).sum()),
            "sweep_only_full_pick": int((only & full_pick).sum())}


def judge(task: tuple) -> dict:
    """One study: (stratum, truth seed, noise seed, rule params, bootstrap, calibrate[, claims]) -> its row.

    Wrong by regret is counted on three sets of probes: all 2 x PROBES (wrong, wrong_full), those
    at or above the first rung, where the sweep acts (below it every run has trained: acting_probes,
    wrong_acting, grid_wrong_acting), and at C_max alone (wrong_cmax, grid_wrong_cmax). With claims
    (bootstrap resamples; 0 or absent: off), the row carries the paper's claims and law of the grid,
    the sweep and the truth (`claims.compare_claims`: claims, law)."""
    stratum, ts, ns_, params, n_boot, calibrate, *rest = task
    n_claims = int(rest[0]) if rest else 0
    start = time.perf_counter()
    truth = draw_truth(stratum, ts)
    evals = study(truth, ts, ns_)
    p = SweepSettings.of(params)
    eps = regrets(truth, p)
    budgets = np.geomspace(C_MAX / 2 ** SPAN_DOUBLINGS, C_MAX, PROBES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # Gaussian tables: one error for all evaluations
        res = replay(evals, c_max=C_MAX, params=p, probes=budgets, eval_rollouts=EVAL_ROLLOUTS)
        if n_boot:
            res = with_grid_band(res, evals, n_boot)
        said = compare_claims(truth, evals, res["evals"], resamples=n_claims) if n_claims else None
    pr = res["probes"]
    tol = np.array([eps[b] for b in pr["B_p"]]) + 1e-12

    def wrong_by(worth):
        """Per answer column (the sweep's, the full grid's): whether each probe's n* is worth more than
        its B_p's regret less than the best n by `worth`, each (probe, n) worth computed once."""
        W = np.array([[float(worth(b, k, c)) for k in NS] for b, c in zip(pr["B_p"], pr["compute"])])
        best = W.max(axis=1)
        for col in ("n_star_adaptive", "n_star_full"):
            got = np.array([W[i, NS.index(int(k))] if np.isfinite(k) else -np.inf
                            for i, k in enumerate(pr[col].to_numpy(dtype=float))])
            yield best - got > tol
    wrong, wrong_full = wrong_by(truth.value)
    now, now_full = wrong_by(truth.reward)
    compute = pr["compute"].to_numpy(dtype=float)
    acting = compute >= p.budgets(C_MAX)[0] * (1 - 1e-9)
    at_max = np.isclose(compute, C_MAX)
    bad, stops = decision_calibration(truth, res["log"], p)
    sigma, ppd = setting(ts)
    return {"stratum": stratum, "truth": ts, "noise_seed": ns_, "sigma": sigma, "per_doubling": ppd,
            "lead_doublings": truth.lead_doublings, "regret": float(np.mean(list(eps.values()))),
            "bill": res["share"], "training": res["share_training"],
            "validation": res["share_validation"], "oracle": oracle_share(truth, evals, eps, EVAL_ROLLOUTS),
            "probes": len(pr), "wrong": int(wrong.sum()), "wrong_full": int(wrong_full.sum()),
            "acting_probes": int(acting.sum()), "wrong_acting": int(wrong[acting].sum()),
            "grid_wrong_acting": int(wrong_full[acting].sum()),
            "cmax_probes": int(at_max.sum()), "wrong_cmax": int(wrong[at_max].sum()),
            "grid_wrong_cmax": int(wrong_full[at_max].sum()),
            "wrong_now": int(now[acting].sum()), "wrong_now_full": int(now_full[acting].sum()),
            **where_they_part(res, acting & wrong & ~wrong_full),
            "grid_only": int((acting & wrong_full & ~wrong).sum()),
            "outside_band": int((~pr["in_band"]).sum()) if "in_band" in pr else np.nan,
            "same_n_star": float((pr["n_star_adaptive"] == pr["n_star_full"]).mean()),
            "revivals": int(res["runs"]["revivals"].sum()), "model_stops": stops, "bad_stops": bad,
            "calibration": calibration(truth, evals, p) if calibrate else {},
            "claims": said["claims"].assign(stratum=stratum, truth=ts, noise_seed=ns_) if said else None,
            "law": said["values"].assign(stratum=stratum, truth=ts, noise_seed=ns_) if said else None,
            "seconds": time.perf_counter() - start}


def summary(table: pd.DataFrame, resamples: int = 2000) -> pd.DataFrame:
    """One row per stratum: bill mean, p95 and max, oracle floor; wrong by regret on the probes at or
    above the first rung (the sweep's, the grid's) with 95% intervals by a bootstrap over truths
    (`truth_bootstrap`), at C_max alone, and the share of studies with any wrong probe there; the
    model's stops and the share of them that were truly needed (decision-level calibration, with its
    interval); the sweep's wrong rate less the grid's on the same probes (over_grid, paired: its interval
    by the same bootstrap); outside the grid's band, exact agreement, revivals."""
    rows = []
    for stratum, g in table.groupby("stratum", sort=False):
        acting = g["acting_probes"].sum()
        g = g.assign(over_grid=g["wrong_acting"] - g["grid_wrong_acting"])      # paired: the same probes
        (lo, hi), (glo, ghi), (clo, chi), (olo, ohi) = truth_bootstrap(
            g, ["wrong_acting", "grid_wrong_acting", "bad_stops", "over_grid"],
            ["acting_probes", "acting_probes", "model_stops", "acting_probes"], resamples)
        band = g["outside_band"].dropna()
        stops = g["model_stops"].sum()
        rows.append({"stratum": stratum, "studies": len(g), "bill": g["bill"].mean(),
                     "bill_p95": g["bill"].quantile(0.95), "bill_max": g["bill"].max(), "oracle": g["oracle"].mean(),
                     "wrong": g["wrong_acting"].sum() / acting, "wrong_lo": lo, "wrong_hi": hi,
                     "grid_wrong": g["grid_wrong_acting"].sum() / acting, "grid_wrong_lo": glo, "grid_wrong_hi": ghi,
                     "over_grid": g["over_grid"].sum() / acting, "over_grid_lo": olo, "over_grid_hi": ohi,
                     "wrong_cmax": g["wrong_cmax"].sum() / g["cmax_probes"].sum(),
                     "grid_wrong_cmax": g["grid_wrong_cmax"].sum() / g["cmax_probes"].sum(),
                     "wrong_all": g["wrong"].sum() / g["probes"].sum(),
                     "wrong_now": g["wrong_now"].sum() / acting, "grid_wrong_now": g["wrong_now_full"].sum() / acting,
                     "sweep_only": int(g["sweep_only"].sum()),
                     "before_stops": int(g["sweep_only_before_stops"].sum()),
                     "full_pick": int(g["sweep_only_full_pick"].sum()), "grid_only": int(g["grid_only"].sum()),
                     "studies_wrong": float((g["wrong_acting"] > 0).mean()),
                     "grid_studies_wrong": float((g["grid_wrong_acting"] > 0).mean()),
                     "model_stops": int(stops), "needed": g["bad_stops"].sum() / stops if stops else np.nan,
                     "needed_lo": clo, "needed_hi": chi,
                     "outside_band": band.sum() / g.loc[band.index, "probes"].sum() if len(band) else np.nan,
                     "same_n_star": g["same_n_star"].mean(), "revivals": int(g["revivals"].sum())})
    return pd.DataFrame(rows)


def mean_bill_interval(table: pd.DataFrame, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% interval of the bill averaged over the strata: each stratum's truths resampled (a truth's
    noise seeds together), the strata's mean bills averaged."""
    rng = np.random.default_rng(seed)
    means = []
    for _, g in table.groupby("stratum", sort=False):
        per_truth = g.groupby("truth")["bill"].mean().to_numpy(dtype=float)
        means.append(per_truth[rng.integers(0, per_truth.size, size=(resamples, per_truth.size))].mean(axis=1))
    lo, hi = np.percentile(np.mean(means, axis=0), [2.5, 97.5])
    return float(lo), float(hi)


def verdict(summ: pd.DataFrame, floor: float, bill_interval: tuple[float, float] | None = None) -> list[str]:
    """The bar the sweep is held to, per stratum: wrong by regret where the sweep acts at most the grid's plus
    TARGET over_grid, its bootstrap upper bound at most TARGET wrong_hi; the model's needed stops at
    or under `floor` (1 - Phi(z)); bills against TARGET."""
    lines = []
    for r in summ.itertuples():
        ok = r.wrong_hi <= TARGET["wrong_hi"] and r.wrong <= r.grid_wrong + TARGET["over_grid"]
        cal = "no model stops" if not r.model_stops else (
            f"needed stops {r.needed:.1%} [{r.needed_lo:.1%}, {r.needed_hi:.1%}] of {r.model_stops} "
            f"(floor {floor:.1%}): {'PASS' if r.needed <= floor else 'FAIL'}")
        lines.append(f"{r.stratum:<11} wrong {r.wrong:.1%} [{r.wrong_lo:.1%}, {r.wrong_hi:.1%}] (grid {r.grid_wrong:.1%}"
                     f"; sweep - grid {100 * r.over_grid:+.2f} points [{100 * r.over_grid_lo:+.2f}, "
                     f"{100 * r.over_grid_hi:+.2f}])"
                     f", bill {r.bill:.1%} (max {r.bill_max:.1%}): {'PASS' if ok else 'FAIL'}; {cal}")
    mean = summ["bill"].mean()
    ci = f" [{bill_interval[0]:.1%}, {bill_interval[1]:.1%}]" if bill_interval else ""
    lines.append(f"bill averaged over the strata {mean:.1%}{ci} <= {TARGET['bill_mean']:.0%}: "
                 f"{'PASS' if mean <= TARGET['bill_mean'] else 'FAIL'}")
    worst = summ.loc[summ["bill"].idxmax()]
    lines.append(f"highest stratum bill {worst['bill']:.1%} ({worst['stratum']}) <= {TARGET['bill_stratum']:.0%}: "
                 f"{'PASS' if worst['bill'] <= TARGET['bill_stratum'] else 'FAIL'}")
    return lines
