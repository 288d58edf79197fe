"""Benchmark: the adaptive sweep on a prior of truths, judged by regret, per stratum.

The truths are `isocompute.analysis.adaptive.strata`'s: early, mid and late crossovers (by
lambda = log2(C_max / C_lead)), n* still climbing at C_max, saturating, peaked and null
curves, and a B_p that collapses mid-run; on the paper's Easy columns B_p 16 and 32,
n 8..512, C_max 2^22, validated on the compute-matched schedule from C_max / 2^10 with
300 x 4 generations per evaluation. Each truth is studied with two noise seeds; its noise
sd (0.013 or 0.03) and evaluations per doubling (2 or 4) cycle with the truth's index, so
every stratum holds each of the four settings equally.

Each study is replayed by `adaptive.replay.replay` with the sweep's schema defaults (or
`--bands`), and judged at 20 probe budgets per B_p over [C_max / 2^10, C_max]:
- wrong by regret: the true worth of the sweep's n* is more than epsilon (sweep.epsilon,
  0.01) below the best n's; the full grid's own rate beside it (its n* from all the data).
  A run's worth at a budget is the true reward of its best checkpoint so far (`Truth.value`):
  the study's frontier is a running maximum (docs/methods.md, section 6), so the n* it names is a claim about
  best checkpoints. It differs from the reward at the budget only after a collapse (the
  unstable stratum), where the rate judged by the reward at the budget is printed beside it
  (wrong_now, grid_wrong_now);
- wrong by the full grid's band (with --bootstrap R > 0): the sweep's n* outside the full
  grid's n* band (frontier.csv's n_star_lo / hi, R resamples);
- exact agreement with the full grid's n*;
- the bill (training rollouts + validation generations) as a share of the grid's, and the
  oracle floor: the least any rule told the true curves could train so that at every probe
  some run trained that far is within epsilon of the best (`oracle_share`);
- revivals (the safety net resuming a stopped run).
Wrong-answer rates carry Wilson 95% intervals over the probes (probes of one study are
correlated, so the intervals are narrower than an interval over studies would be; the
per-study share of wrong probes is printed as well).

Seeds: truths 0..T-1 with noise seeds 0 and 1 are the report seeds. The rule's settings
(reach, insurance, epsilon) were chosen on truth seeds 1000-1009 (noise seed 0), which the
report never uses.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_adaptive_strata.py [--truths 50] [--first-truth 0]
        [--strata early,late] [--bootstrap 0] [--jobs 2] [--out studies.csv]

--quick: 2 truths per stratum, one noise seed (what `make test` runs).
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
import sys
import time
import warnings

import numpy as np
import pandas as pd
import yaml

from isocompute.analysis.adaptive.replay import replay, with_grid_band
from isocompute.analysis.adaptive.rule import rule_settings
from isocompute.analysis.adaptive.strata import B_PS, C_MAX, NS, SPAN_DOUBLINGS, STRATA, Truth, draw_truth
from isocompute.analysis.adaptive.pooled import Horizon
from isocompute.analysis.adaptive.shared import TrendDraws, trend_ensemble
from isocompute.analysis.fits.fitter import fit_study
from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
from isocompute.schedule import compute_schedule_steps
from isocompute.sweep import SweepSettings

EVAL_ROLLOUTS = 300 * 4
SETTINGS = ((0.013, 4), (0.03, 4), (0.013, 2), (0.03, 2))     # (noise sd, evaluations per doubling), by truth index
PROBES = 20
INFLATIONS = (1.0, 2.0, 3.0)       # --calibration: the coverage at each of these widenings of the model's sd
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


def oracle_share(truth: Truth, evals: pd.DataFrame, epsilon: float, eval_rollouts: float, points: int = 161) -> float:
    """The least bill, as a share of the grid's, of a sweep that knows the curves: per B_p, covering
    the probed range from C_max down, each time with the run within epsilon of the best that stays
    so furthest down (trained to where the cover starts). Validation: a run's evaluations up to
    where it is trained."""
    grid = np.geomspace(C_MAX / 2 ** SPAN_DOUBLINGS, C_MAX, points)
    spent = 0.0
    for B_p in B_PS:
        ok = np.array([truth.value(B_p, n, grid) >= truth.best(B_p, NS, grid) - epsilon - 1e-12 for n in NS])
        trained = np.zeros(len(NS))
        g = points - 1
        while g >= 0:
            # the run that covers grid point g and, going down, the most points after it
            run = [np.argmin(np.append(ok[i, :g + 1][::-1], False)) if ok[i, g] else -1 for i in range(len(NS))]
            i = int(np.argmax(run))
            trained[i] = max(trained[i], grid[g])
            g -= max(run[i], 1)
        for i, n in enumerate(NS):
            rows = evals[(evals["B_p"] == B_p) & (evals["n"] == n)]
            spent += np.floor(trained[i] / (B_p * n) + 1e-9) * B_p * n
            spent += eval_rollouts * int((rows["compute"] <= trained[i] * (1 + 1e-9)).sum()) if trained[i] else 0.0
    total = float(evals.groupby(["B_p", "n"])["compute"].max().sum()) + eval_rollouts * len(evals)
    return spent / total


def calibration(truth: Truth, evals: pd.DataFrame, p: SweepSettings) -> dict:
    """The shared model's 95% band at C_max against the truth, fitted on the grid's data up to each
    rung but the last: {doublings from C_max: (runs covered, runs judged)} over the B_p where the
    model is in force (`shared.trend_ensemble`), its collapse test at the rule's level (`rule.rule_settings`)."""
    s = rule_settings(None, p, C_MAX)
    out = {}
    rng = np.random.default_rng(0)
    for budget in p.budgets(C_MAX)[:-1]:
        seen, fits, _ = fit_study(evals[evals["compute"] <= budget * (1 + 1e-9)], s)
        d = round(float(np.log2(C_MAX / budget)), 2)
        for B_p in B_PS:
            for k in INFLATIONS:
                how = TrendDraws(s.metric, s.pool_degree, s.pool_alpha, draws=1000, inflation=k)
                ens = trend_ensemble(seen, fits, B_p, Horizon(budget, C_MAX, 2), how, rng)
                if ens is None:
                    break
                lo, hi = np.percentile(ens.curves[:, :, -1], [2.5, 97.5], axis=0)
                true = np.array([truth.value(B_p, int(n), C_MAX) for n in ens.n]).ravel()
                got = out.setdefault((k, d), [0, 0])
                got[0] += int(((true >= lo) & (true <= hi)).sum())
                got[1] += true.size
    return out


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


def coverage_table(table: pd.DataFrame) -> pd.DataFrame:
    """Coverage of the model's 95% band at C_max per stratum (rows) and doublings from C_max (columns)."""
    rows = []
    for r in table.itertuples():
        for (k, d), (hit, total) in r.calibration.items():
            rows.append({"stratum": r.stratum, "inflation": k, "doublings": d, "hit": hit, "total": total})
    if not rows:
        return pd.DataFrame()
    g = pd.DataFrame(rows).groupby(["inflation", "stratum", "doublings"], sort=False)[["hit", "total"]].sum()
    return (g["hit"] / g["total"]).unstack("doublings")


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--truths", type=int, default=None, help="truths per stratum (default 50; 2 with --quick)")
    parser.add_argument("--first-truth", type=int, default=0, help="first truth seed (report: 0; tuning: 1000)")
    parser.add_argument("--noise-seeds", type=int, default=None, help="noise seeds per truth (default 2; 1 with --quick)")
    parser.add_argument("--strata", default=",".join(STRATA), help="comma-separated strata (default: all)")
    parser.add_argument("--bands", choices=("shared", "pooled", "runs"), default=None, help="the rule (default: the schema's)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a sweep setting for the replays (e.g. reach=3); repeatable")
    parser.add_argument("--bootstrap", type=int, default=0, help="resamples of the full grid's n* band (0: off)")
    parser.add_argument("--calibration", action="store_true",
                        help="also the shared model's 95%% band coverage of the true reward at C_max, by doublings")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", default=None, help="write one row per study as CSV")
    parser.add_argument("--quick", action="store_true", help="2 truths per stratum, one noise seed")
    args = parser.parse_args(argv)
    truths = args.truths or (2 if args.quick else 50)
    noise = args.noise_seeds or (1 if args.quick else 2)
    strata = [s for s in args.strata.split(",") if s]
    unknown = [s for s in strata if s not in STRATA]
    if unknown:
        parser.error(f"unknown stratum {unknown[0]!r}: expected some of {', '.join(STRATA)}")
    params = {k: yaml.safe_load(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    if args.bands:
        params["bands"] = args.bands
    params = SweepSettings.of(params).rule()
    tasks = [(s, t, k, params, args.bootstrap, args.calibration) for s in strata
             for t in range(args.first_truth, args.first_truth + truths) for k in range(noise)]
    print(f"B_p {B_PS}, n {NS}, C_max 2^22; {truths} truths x {noise} noise seeds per stratum "
          f"(truth seeds {args.first_truth}-{args.first_truth + truths - 1}); rule {params}", flush=True)
    start = time.perf_counter()
    rows = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for row in pool.map(judge, tasks, chunksize=1):
            rows.append(row)
    table = pd.DataFrame(rows)
    if args.calibration:
        print(coverage_table(table).to_string(float_format=lambda v: f"{v:.3f}"))
    table = table.drop(columns="calibration")
    if args.out:
        table.to_csv(args.out, index=False)
    summ = summary(table)
    with pd.option_context("display.width", 250):
        print(summ.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\n".join(verdict(summ)))
    print(f"{time.perf_counter() - start:.0f} s ({table['seconds'].mean():.1f} s per study, {args.jobs} jobs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
