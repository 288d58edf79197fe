"""Benchmark: do the analysis's intervals hold their coverage, and does it say
"undetermined" when nothing can be told?

Known sigmoid curves at the paper's scale (B_p = 32, n = 8..512, every run
trained to C_max = 2^22 rollouts unless the truth says otherwise), with
evaluation noise, analysed by the tool's own default chain
(`isocompute.design.chain.analyse`: `fit_study`, the bootstrap of
`frontier_tables`, `recommendation_table`, the claims of `claims`), under
two schedules: every K = 10 steps (the paper's) and
compute-matched (`--matched-points` log-spaced points from C_max / 2^10).

The truths, and the pass criteria, were fixed before any was run:

  tuned on (the fixes were developed against these)
    null           every n the same curve: n* is undefined, nothing can rise
    null_unequal   n = 8, 32, 128, 512, the same curve, runs of unequal length
                   (C_max x 1, 1/4, 1/2, 1)
    null_3         n = 8, 64, 512 only (below the pooling minimum), the same curve
    small_wins     a larger n is slower and lower: n* = 8 at every C
    middle_best    n = 64 has the highest asymptote, all midpoints equal (a tent)
    falling        a larger n starts faster but plateaus lower: n* falls with C
    step           n <= 32 one curve, n >= 64 another (later, higher): n* jumps
    edges          a crossover from R0 0.03 to 0.97, binomial noise (heteroscedastic)
  held out (not looked at until the fixes were done)
    crossover      `synthetic.crossover_params`, the calibrated truth of bench_frontier_bias
    saturating     A saturating in log2 n, C_mid not polynomial in log2 n
    peaked         `synthetic.synthetic_params` (A peaks at n = 64 and declines)
    null_binomial  every n the same curve, binomial noise

  criteria, on every truth and both schedules
    coverage of each nominal 95% interval the tool prints in [0.90, 0.98]:
      the frontier reward band at C_max, the n* band at C_max (it covers when it
      holds an n the truth makes optimal), recommend's n* and reward intervals at
      C_max; the law's L and U intervals where the truth has a law (not on nulls)
    (where n tie at the optimum, as in `step`, the truth is the range between the law
    of the smallest and of the largest optimal n; an interval covers when it meets it)
    the rate at which the tool claims a rise (or a fall) it should not: <= 5%
    |bias| of the frontier reward at C_max <= 0.005

With `--seeds` replications the coverage of a 95% interval is estimated within
about +-1.96 sqrt(0.05 * 0.95 / seeds) (20 seeds: +-0.10), so the table prints
the count and the binomial 95% interval of every rate; a criterion fails only
when that interval lies outside the target.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_coverage.py [--seeds 20] [--truths null step] [--quick]

--quick: 4 seeds (unless --seeds says otherwise) and 50 bootstrap replicates (about ten
minutes over every truth on 2 cores); `make test` runs it on two truths, one schedule and 2
seeds (tests/benchmarks/test_benchmarks.py).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd

from bench_frontier_bias import B_P, C_MAX, NS, peaked_params, saturating_params, schedules  # one setting, two benchmarks

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import USABLE, sigmoid_reward
from isocompute.analysis.fits.synthetic import CrossoverTruth, EvalNoise, crossover_params, synthetic_study
from isocompute.analysis.frontier.claims import FALLS, RISES
from isocompute.analysis.frontier.nstar import fit_n_star_law, law_points
from isocompute.design.chain import analyse, rate   # the tool's chain and the interval, as the power analysis' own
from isocompute.design.costs import EVAL_SAMPLES

TARGET = {"coverage": (0.90, 0.98), "false_claim": 0.05, "bias": 0.005}
BASE = crossover_params(B_P, 64)          # the curve every n shares in the null truths


def _same(B_p, n):
    return dict(BASE)


def _small_wins(B_p, n):
    d = np.log2(n / 8)
    return {"R0": 0.45, "A": 0.66 - 0.01 * d, "B": 1.5, "C_mid": 3e4 * (n / 8) ** 0.75}


def _middle_best(B_p, n):
    return {"R0": 0.45, "A": 0.70 - 0.012 * np.log2(n / 64) ** 2, "B": 1.5, "C_mid": 1.4e5}


def _falling(B_p, n):
    d = np.log2(n / 8)
    return {"R0": 0.45, "A": 0.72 - 0.015 * d, "B": 1.5, "C_mid": 3e5 * (n / 8) ** -0.5}


def _step(B_p, n):
    return ({"R0": 0.45, "A": 0.62, "B": 1.5, "C_mid": 5e4} if n <= 32
            else {"R0": 0.45, "A": 0.68, "B": 1.5, "C_mid": 2e5})


def _edges(B_p, n):
    return crossover_params(B_p, n, CrossoverTruth(R0=0.03, A_ref=0.82, A_per_doubling=0.025))


# name -> (params, n studied, run length as a fraction of C_max per n, noise, null?, held out?)
TRUTHS = {
    "null": (_same, NS, None, "gaussian", True, False),
    "null_unequal": (_same, (8, 32, 128, 512), {8: 1, 32: 1 / 4, 128: 1 / 2, 512: 1}, "gaussian", True, False),
    "null_3": (_same, (8, 64, 512), None, "gaussian", True, False),
    "small_wins": (_small_wins, NS, None, "gaussian", False, False),
    "middle_best": (_middle_best, NS, None, "gaussian", False, False),
    "falling": (_falling, NS, None, "gaussian", False, False),
    "step": (_step, NS, None, "gaussian", False, False),
    "edges": (_edges, NS, None, "binomial", False, False),
    "crossover": (crossover_params, NS, None, "gaussian", False, True),
    "saturating": (saturating_params, NS, None, "gaussian", False, True),
    "peaked": (peaked_params, NS, None, "gaussian", False, True),
    "null_binomial": (_same, NS, None, "binomial", True, True),
}


def _truncated(steps_of, lengths):
    """A schedule whose run of batch B stops at lengths[n] x C_max (n = B / B_p)."""
    if lengths is None:
        return steps_of

    def steps(B, M_max):
        keep = int(M_max * lengths[B // B_P])
        return [s for s in steps_of(B, M_max) if s <= keep]
    return steps


def true_frontier(params, ns, lengths, grid):
    """True reward of every run (NaN beyond its end) on `grid`, the frontier, and the set of optimal n."""
    rewards = np.array([sigmoid_reward(grid, **params(B_P, n)) for n in ns], dtype=float)
    if lengths is not None:
        rewards[np.array([grid > C_MAX * lengths[n] * (1 + 1e-9) for n in ns])] = np.nan
    best = np.nanmax(rewards, axis=0)
    optimal = np.abs(rewards - best) <= 1e-9 * np.maximum(best, 1)
    return rewards, best, optimal


def true_laws(params, ns, lengths, compute_lo):
    """The n* law fitted to the true n*(C) over [compute_lo, C_MAX]: with the smallest and with the
    largest optimal n (they differ only where n tie, as in `step`: then the truth is a range of laws)."""
    grid = np.geomspace(compute_lo, C_MAX, 100)
    _, best, optimal = true_frontier(params, ns, lengths, grid)
    laws = []
    for pick in (optimal.argmax(0), len(ns) - 1 - optimal[::-1].argmax(0)):
        pts = law_points(pd.DataFrame({"compute": grid, "n_star": np.asarray(ns, dtype=float)[pick], "reward": best}))
        laws.append(fit_n_star_law(pts["log10_x"], pts["log2_n_star_avg"]))
    return laws


def _inside(lo, value, hi) -> float:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return np.nan
    return float(lo - 1e-12 <= value <= hi + 1e-12)


def one_replication(name, steps_of, seed, settings, problems) -> dict:
    params, ns, lengths, noise, null, _ = TRUTHS[name]
    kw = ({"problems": problems, "samples": EVAL_SAMPLES} if noise == "binomial" else {"sd": 0.03})
    evals = synthetic_study((B_P,), ns, c_max=C_MAX, eval_steps=_truncated(steps_of, lengths), params=params,
                            noise=EvalNoise(seed=seed, **kw))
    out = analyse(evals, settings, (C_MAX,))
    front, law = out["frontier"], out["n_star_fit"].iloc[0]
    last = front.iloc[-1]
    c_end = float(last["compute"])
    _, best, optimal = true_frontier(params, ns, lengths, np.array([c_end]))
    optimal_n = np.asarray(ns, dtype=float)[optimal[:, 0]]
    row = {"bias": float(last["reward"]) - best[0],
           "reward_cover": _inside(last["reward_lo"], best[0], last["reward_hi"]),
           "n_star_cover": (float(np.any((optimal_n >= last["n_star_lo"]) & (optimal_n <= last["n_star_hi"])))
                            if np.isfinite(last["n_star_lo"]) else np.nan),
           "n_star_right": float(last["n_star"] in optimal_n),
           "claim": str(law.get("claim", "")),
           "point_rise": float(law["status"] == "ok" and abs(law["U"] - law["L"]) >= 2),
           "interval_rise": float(np.isfinite(law.get("U_lo", np.nan))
                                  and (law["U_lo"] >= law["L_hi"] + 2 or law["L_lo"] >= law["U_hi"] + 2))}
    rec = out["recommendations"]
    if len(rec):
        r = rec.iloc[0]
        _, best_b, opt_b = true_frontier(params, ns, lengths, np.array([float(r["budget"])]))
        opt_n = np.asarray(ns, dtype=float)[opt_b[:, 0]]
        row["rec_n_cover"] = (float(np.any((opt_n >= r["n_star_lo"] / 2 ** 0.5) & (opt_n <= r["n_star_hi"] * 2 ** 0.5)))
                              if np.isfinite(r["n_star_lo"]) else np.nan)
        row["rec_reward_cover"] = _inside(r["reward_lo"], best_b[0], r["reward_hi"])
    if not null:
        fits = out["fits"]
        compute_lo = float(fits.loc[fits["status"].isin(USABLE), "compute_min"].max())
        laws = true_laws(params, ns, lengths, compute_lo)
        if all(t.status == "ok" for t in laws):
            for p in ("L", "U"):     # the interval covers when it meets the range of the true laws' values
                lo, hi = law.get(f"{p}_lo", np.nan), law.get(f"{p}_hi", np.nan)
                t_lo, t_hi = sorted(getattr(t, p) for t in laws)
                row[f"{p}_cover"] = (np.nan if not (np.isfinite(lo) and np.isfinite(hi))
                                     else float(lo <= t_hi + 1e-12 and t_lo <= hi + 1e-12))
    return row


COVERAGES = ("reward_cover", "n_star_cover", "rec_n_cover", "rec_reward_cover", "L_cover", "U_cover")


def summarise(name, schedule, rows) -> dict:
    null = TRUTHS[name][4]
    out = {"truth": name, "schedule": schedule, "seeds": len(rows), "held_out": TRUTHS[name][5], "null": null}
    bias = np.array([r["bias"] for r in rows])
    half = 1.96 * bias.std(ddof=1) / np.sqrt(bias.size) if bias.size > 1 else np.nan
    out.update(bias=bias.mean(), bias_lo=bias.mean() - half, bias_hi=bias.mean() + half)
    for key in COVERAGES + ("n_star_right", "point_rise", "interval_rise"):
        out[key], out[f"{key}_n"], out[f"{key}_lo"], out[f"{key}_hi"] = rate([r.get(key, np.nan) for r in rows])
    wrong = {"rises": RISES, "falls": FALLS}
    claims = [r["claim"] for r in rows]
    out["claims"] = ", ".join(f"{c or 'none'}: {claims.count(c)}" for c in sorted(set(claims)))
    out["false_claim"] = np.nan
    if null:
        out["false_claim"], _, out["false_claim_lo"], out["false_claim_hi"] = rate(
            [float(c in wrong.values()) for c in claims])
    return out


def verdicts(row) -> list[str]:
    """The criteria a row fails: only when the rate's 95% interval lies wholly outside the target."""
    fails = []
    lo_t, hi_t = TARGET["coverage"]
    for key in COVERAGES:
        if row[f"{key}_n"] and (row[f"{key}_hi"] < lo_t or row[f"{key}_lo"] > hi_t):
            fails.append(f"{key} {row[key]:.2f}")
    if row["null"] and np.isfinite(row["false_claim"]) and row["false_claim_lo"] > TARGET["false_claim"]:
        fails.append(f"false claim {row['false_claim']:.2f}")
    if np.isfinite(row["bias_lo"]) and (row["bias_lo"] > TARGET["bias"] or row["bias_hi"] < -TARGET["bias"]):
        fails.append(f"bias {row['bias']:+.4f}")
    return fails


def print_table(table: pd.DataFrame) -> None:
    cols = [("reward_cover", "F band"), ("n_star_cover", "n* band"), ("rec_n_cover", "rec n*"),
            ("rec_reward_cover", "rec F"), ("L_cover", "law L"), ("U_cover", "law U"),
            ("n_star_right", "n* right"), ("point_rise", "pt rise"), ("interval_rise", "U>L int")]
    head = f"{'truth':<15}{'schedule':<18}{'bias':>8} " + "".join(f"{h:>9}" for _, h in cols) + "  claims / fails"
    print(head)
    print("-" * len(head))
    for _, r in table.iterrows():
        cells = "".join(f"{r[k]:>9.2f}" if r[f'{k}_n'] else f"{'-':>9}" for k, _ in cols)
        tag = "*" if r["held_out"] else " "
        fails = verdicts(r)
        print(f"{r['truth'] + tag:<15}{r['schedule']:<18}{r['bias']:>+8.4f} {cells}  {r['claims']}"
              + (f"  FAIL: {'; '.join(fails)}" if fails else ""))
    print("(* held out; coverage columns: share of replications whose 95% interval holds the truth)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=None, help="replications (default: 20, or 4 with --quick)")
    parser.add_argument("--truths", nargs="+", choices=sorted(TRUTHS), default=list(TRUTHS))
    parser.add_argument("--eval-every", type=int, default=10, metavar="K")
    parser.add_argument("--matched-points", type=int, default=41,
                        help="compute points of the matched schedule (default: 41, 4 per doubling, the paper "
                             "configs' density)")
    parser.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates (default: 200, the tool's)")
    parser.add_argument("--schedules", nargs="+", choices=("every", "matched"), default=["every", "matched"])
    parser.add_argument("--pool", choices=("trend", "none"), default="trend")
    parser.add_argument("--quick", action="store_true",
                        help="4 seeds unless --seeds is given, 50 bootstrap replicates (a smoke run)")
    parser.add_argument("--out", default=None, help="write the table as CSV")
    args = parser.parse_args(argv)
    seeds = args.seeds if args.seeds is not None else 4 if args.quick else 20
    n_boot = 50 if args.quick else args.bootstrap
    if seeds < 1:
        parser.error("--seeds must be >= 1")
    settings = AnalysisSettings(bootstrap=n_boot, pool=args.pool)
    problems = int(round(0.6 * 0.4 / (EVAL_SAMPLES * 0.03 ** 2)))    # binomial sd 0.03 at 0.6
    start = time.perf_counter()
    rows = []
    for sched, steps_of in schedules(args.eval_every, args.matched_points).items():
        if sched.split()[0] not in args.schedules:
            continue
        for name in args.truths:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reps = [one_replication(name, steps_of, s, settings, problems) for s in range(seeds)]
            rows.append(summarise(name, sched, reps))
            print(f"  {name} / {sched}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    print(f"B_p {B_P}, n {NS[0]}..{NS[-1]}, C_max 2^22, sigma 0.03 (binomial: {problems} problems x 4), "
          f"{seeds} seeds, {n_boot} bootstrap replicates, pool {args.pool}")
    print_table(table)
    failed = sum(bool(verdicts(r)) for _, r in table.iterrows())
    print(f"{failed} of {len(table)} rows fail a criterion; {time.perf_counter() - start:.0f} s")
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
