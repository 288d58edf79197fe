"""Benchmark: how far noise moves the compute-optimal frontier and n*(C).

Known curves with a crossover (`synthetic.crossover_params`: a larger n has a
later midpoint and a higher asymptote; calibrated to the paper's Easy set at
B_p = 32, chosen before the noise method was designed and not changed since),
at the paper's scale: B_p = 32, n = 8..512, every run trained to C_max = 2^22
rollouts. Two evaluation schedules: every K = 10 steps (the paper's, verl's;
n = 8 gets 1,640 evaluations, n = 512 gets 27), and compute-matched (every
run at the same log-spaced compute points from C_max / 2^10, plus step 0 and
its last step: `schedule.compute_schedule_steps`; by default 64 points per
doubling, fewer evaluations in all than every 10 steps). Evaluation noise:
Gaussian with sd sigma on every evaluation (step 0 included), or
`--noise binomial` from P problems x 4 samples, P giving that sd at 0.6.

Methods: 'paper' (records, each run its own R0, curves extrapolated),
'noise' (the default of `run_analysis`), and 'oracle': the noise method told
the true R0 and B of every curve, a ceiling for any fit of one run at a time.
For each method x schedule x sigma, over `--seeds` replications, it prints
the mean bias of the frontier reward at C_max with its sd and the 95%
interval of the mean; the share of `--probes` log-spaced budgets over
[C_max / 2^10, C_max] where the estimated n* is the true one, and the mean
regret there (true frontier minus the true reward of the n chosen); the
fitted n*(C) law (L, U, c0, mean over replications) against the same fit to
the true n*(C). The fitting is `pipeline.fit_study`, as in `run_analysis`.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_frontier_bias.py [--seeds 20] [--quick] [--out table.csv]

--quick: 4 replications at sigma 0.03 only (about 10 s); `make test` runs it on the
crossover and the null truth (tests/benchmarks/test_benchmarks.py).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from isocompute.analysis.fits.fitter import fit_study
from isocompute.analysis.fits.methods import get_method
from isocompute.analysis.fits.noise import NOISE_FIT_GRID, add_standard_errors
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.analysis.fits.synthetic import (EvalNoise, GrowthTruth, crossover_params, synthetic_params,
                                               synthetic_study)
from isocompute.analysis.frontier.envelope import frontier, frontier_fixed_bp
from isocompute.analysis.frontier.nstar import fit_n_star_law, law_points, n_star_laws
from isocompute.analysis.inputs.check import check_evals
from isocompute.schedule import compute_schedule_steps
from isocompute.train.recipe import evaluation_steps

B_P = 32
NS = (8, 16, 32, 64, 128, 256, 512)
C_MAX = 2.0 ** 22
SPAN_DOUBLINGS = 10            # probes and matched evaluations start at C_max / 2^10
EVAL_SAMPLES = 4               # avg@4
P_AT = 0.6                     # avg@4 at which binomial noise has sd sigma
TARGET = {"bias": 0.01, "right": 0.90}   # what the noise method must reach: every K, sigma 0.03
METHODS = ("paper", "noise", "per-run", "oracle")


def saturating_params(B_p: int, n: int) -> dict:
    """A truth the trend model does not contain: A saturating in log2 n, C_mid
    a power of n times (1 + n / 128) (not a polynomial in log2 n either)."""
    d = np.log2(n / 8)
    return {"R0": 0.45, "A": 0.60 + 0.13 * (1 - np.exp(-d / 3)), "B": 1.5,
            "C_mid": 3e4 * (n / 8) ** 0.55 * (1 + n / 128)}


def peaked_params(B_p: int, n: int) -> dict:
    """Another: `synthetic.synthetic_params` (A peaks at n = 64 and declines beyond)."""
    return synthetic_params(B_p, n, GrowthTruth(R0=0.45, decline=0.02))


def null_params(B_p: int, n: int) -> dict:
    """A truth where nothing happens: every n on the curve of n = 64 (every n is optimal)."""
    return crossover_params(B_p, 64)


TRUTHS = {"crossover": crossover_params, "saturating": saturating_params, "peaked": peaked_params,
          "null": null_params}
PARAMS = crossover_params   # the truth in force (--truth)


def schedules(K: int, matched_points: int) -> dict:
    lo = C_MAX / 2 ** SPAN_DOUBLINGS
    return {
        f"every {K} steps": lambda B, M_max: evaluation_steps(M_max, K),
        f"matched ({matched_points} pts)": lambda B, M_max: compute_schedule_steps(
            B, M_max, matched_points, min_compute=lo, c_max=C_MAX),
    }


def truth(probes, grid):
    """True frontier reward and n* at the probes; the law fitted to the true n*(C) on `grid`."""
    params = [PARAMS(B_P, n) for n in NS]
    curves = lambda c: np.array([sigmoid_reward(c, **p) for p in params])  # noqa: E731
    at_probes = curves(probes)
    on_grid = curves(grid)
    front = pd.DataFrame({"compute": grid, "n_star": np.asarray(NS)[on_grid.argmax(0)], "reward": on_grid.max(0)})
    pts = law_points(front)
    law = fit_n_star_law(pts["log10_x"], pts["log2_n_star_avg"])
    return at_probes, law


# A ceiling for fits of one run at a time, not a method: the noise method without
# pooling, told the true R0 and the true efficiency exponent B of every curve
# (only A and C_mid left to fit). 'per-run' is the noise method without pooling.
PER_RUN_GRID = replace(NOISE_FIT_GRID, pool="none")


def oracle_grid():
    return replace(PER_RUN_GRID, b_bounds=(PARAMS(B_P, NS[0])["B"],) * 2, b_points=1, b_refine_points=1)


def analyse(evals: pd.DataFrame, method: str, probes) -> dict:
    """Frontier at the probes and the n* law of one study, by `method` (one of METHODS)."""
    if method == "oracle":
        evals = add_standard_errors(check_evals(evals), "avg@4")[0]
        fits = get_method("noise").fit_curves(evals, "avg@4", R0=PARAMS(B_P, NS[0])["R0"], grid=oracle_grid())
    elif method == "per-run":
        _, fits, _ = fit_study(check_evals(evals), AnalysisSettings(fit_grid=PER_RUN_GRID))
    else:
        _, fits, _ = fit_study(check_evals(evals), AnalysisSettings(method=method))
    extrapolate = not get_method("paper" if method == "paper" else "noise").observed_range
    at_probes = frontier(fits, probes, extrapolate=extrapolate)
    law = n_star_laws(frontier_fixed_bp(fits, extrapolate=extrapolate), by="B_p").iloc[0]
    return {"reward": at_probes["reward"].to_numpy(), "n_star": at_probes["n_star"].to_numpy(),
            "L": law["L"], "U": law["U"], "c0": law["c0"]}


def run(seeds: int, sigmas, noise: str, K: int, matched_points: int, n_probes: int) -> pd.DataFrame:
    probes = np.geomspace(C_MAX / 2 ** SPAN_DOUBLINGS, C_MAX, n_probes)
    rows = []
    for sched_name, steps_of in schedules(K, matched_points).items():
        first = min(B_P * n * next(s for s in steps_of(B_P * n, int(C_MAX // (B_P * n))) if s > 0) for n in NS)
        true_curves, true_law = truth(probes, np.geomspace(first, C_MAX, 100))
        true_best = true_curves.max(0)
        # every n within 1e-9 of the best is optimal (all of them on the null truth)
        optimal = np.abs(true_curves - true_best) <= 1e-9
        for sigma in sigmas:
            kw = ({"problems": int(round(P_AT * (1 - P_AT) / (EVAL_SAMPLES * sigma ** 2))), "samples": EVAL_SAMPLES}
                  if noise == "binomial" else {"sd": sigma})
            per = {m: [] for m in METHODS}
            seconds = dict.fromkeys(per, 0.0)
            n_evals = 0
            for s in range(seeds):
                evals = synthetic_study((B_P,), NS, c_max=C_MAX, eval_steps=steps_of, params=PARAMS,
                                        noise=EvalNoise(seed=s, **kw))
                n_evals = len(evals)
                for method in per:
                    start = time.perf_counter()
                    per[method].append(analyse(evals, method, probes))
                    seconds[method] += time.perf_counter() - start
            for method, results in per.items():
                bias = np.array([r["reward"][-1] - true_best[-1] for r in results])
                picked = np.array([r["n_star"] for r in results])
                right = np.array([optimal[np.searchsorted(NS, np.nan_to_num(p, nan=-1)).clip(0, len(NS) - 1),
                                          np.arange(probes.size)] & np.isin(p, NS) for p in picked]).mean(axis=1)
                chosen = np.searchsorted(NS, np.nan_to_num(picked, nan=NS[0])).clip(0, len(NS) - 1)
                got = true_curves[chosen, np.arange(probes.size)]        # true reward of the n chosen
                half = 1.96 * bias.std(ddof=1) / np.sqrt(seeds) if seeds > 1 else np.nan
                rows.append({
                    "method": method, "schedule": sched_name, "sigma": sigma, "noise": noise, "seeds": seeds,
                    "evals": n_evals, "bias": bias.mean(), "bias_sd": bias.std(ddof=1) if seeds > 1 else np.nan,
                    "bias_lo": bias.mean() - half, "bias_hi": bias.mean() + half,
                    "right_n_star": right.mean(), "right_min": right.min(),
                    # 95% interval of the mean share over replications (normal approximation)
                    "right_lo": right.mean() - (1.96 * right.std(ddof=1) / np.sqrt(seeds) if seeds > 1 else np.nan),
                    "right_hi": right.mean() + (1.96 * right.std(ddof=1) / np.sqrt(seeds) if seeds > 1 else np.nan),
                    "regret": (true_best - got).mean(),
                    **{p: np.mean([r[p] for r in results]) for p in ("L", "U", "c0")},
                    **{f"{p}_sd": np.std([r[p] for r in results]) for p in ("L", "U", "c0")},
                    **{f"true_{p}": getattr(true_law, p) for p in ("L", "U", "c0")},
                    "seconds": seconds[method],
                })
    return pd.DataFrame(rows)


def print_table(table: pd.DataFrame) -> None:
    head = (f"{'method':<8}{'schedule':<18}{'sigma':>6}{'evals':>6}  {'bias at C_max (sd) [95% CI]':<33}"
            f"{'right n* [95% CI]':>22}{'regret':>8}   {'law L / U / c0 (truth)':<34}")
    print(head)
    print("-" * len(head))
    for r in table.itertuples():
        bias = f"{r.bias:+.4f} ({r.bias_sd:.4f}) [{r.bias_lo:+.4f}, {r.bias_hi:+.4f}]"
        law = f"{r.L:.2f} / {r.U:.2f} / {r.c0:.2f} ({r.true_L:.2f} / {r.true_U:.2f} / {r.true_c0:.2f})"
        right = f"{r.right_n_star:.1%} [{r.right_lo:.1%}, {r.right_hi:.1%}]"
        print(f"{r.method:<8}{r.schedule:<18}{r.sigma:>6.3f}{r.evals:>6}  {bias:<33}{right:>22}"
              f"{r.regret:>8.4f}   {law:<34}")


def verdict(table: pd.DataFrame, K: int) -> str:
    row = table[(table["method"] == "noise") & (table["schedule"] == f"every {K} steps") & (table["sigma"] == 0.03)]
    if row.empty:
        return "done-when (noise method, every K steps, sigma 0.03): not run"
    r = row.iloc[0]
    ok_bias = abs(r["bias"]) <= TARGET["bias"]
    ok_right = r["right_n_star"] >= TARGET["right"]
    return (f"done-when (noise method, every {K} steps, sigma 0.03): |bias| {abs(r['bias']):.4f} <= "
            f"{TARGET['bias']} {'PASS' if ok_bias else 'FAIL'}; right n* {r['right_n_star']:.1%} >= "
            f"{TARGET['right']:.0%} {'PASS' if ok_right else 'FAIL'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="replications per cell of the table (default: 20)")
    parser.add_argument("--quick", action="store_true", help="4 replications, sigma 0.03 only (a smoke run)")
    parser.add_argument("--sigmas", type=float, nargs="+", default=[0.013, 0.03],
                        help="evaluation noise sd (default: 0.013 0.03, i.e. 300 and 60 problems x 4)")
    parser.add_argument("--noise", choices=("gaussian", "binomial"), default="gaussian")
    parser.add_argument("--eval-every", type=int, default=10, metavar="K", help="paper schedule (default: 10)")
    parser.add_argument("--matched-points", type=int, default=641,
                        help="compute points of the matched schedule (default: 641, 64 per doubling: fewer "
                             "evaluations in all than every 10 steps)")
    parser.add_argument("--probes", type=int, default=20, help="probe budgets for n* (default: 20)")
    parser.add_argument("--truth", choices=sorted(TRUTHS), default="crossover",
                        help="the known curves (default: crossover, the calibrated ones; saturating and peaked "
                             "are outside the pooled trend model, to check it does not only fit its own form; null "
                             "puts every n on one curve, where any n is right and the bias is the winner's curse)")
    parser.add_argument("--out", default=None, help="write the table as CSV")
    args = parser.parse_args(argv)
    seeds, sigmas = (4, [0.03]) if args.quick else (args.seeds, args.sigmas)
    global PARAMS
    PARAMS = TRUTHS[args.truth]
    if seeds < 1:
        parser.error("--seeds must be >= 1")
    print(f"truth: {args.truth}; B_p = {B_P}, n = {', '.join(map(str, NS))}, C_max = 2^{np.log2(C_MAX):g}, "
          f"{args.noise} noise, {seeds} replications; "
          f"probes: {args.probes} budgets over [C_max/2^{SPAN_DOUBLINGS}, C_max]")
    if args.noise == "gaussian":
        print("(Gaussian tables carry no 'problems' column: the noise method assumes one error for all "
              "evaluations, estimated from the residuals)")
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = run(seeds, sigmas, args.noise, args.eval_every, args.matched_points, args.probes)
    print()
    print_table(table)
    print()
    print(verdict(table, args.eval_every))
    print(f"{time.perf_counter() - start:.0f} s")
    if args.out:
        table.to_csv(args.out, index=False)
        print(f"table -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
