"""What a pilot can tell, measured on known truths: why `isocompute design` predicts a determined n*
on null truths (n does not matter) that their studies do not find (`null_diagnosis`), and how often
the pilot's run-level test that n matters (`pilot.n_effect`) finds it, by shape (`n_effect_rates`);
and how the reliability bar itself behaves: how often a perfectly calibrated forecaster passes it
(`bar_pass_rate`). benchmarks/bench_design_null.py prints the first two,
benchmarks/bench_design_reliability.py --bar the third; docs/replication.md reads them."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.design.assurance import CLAIMS, Plan, assess, judge, simulate_study
from isocompute.design.chain import clopper_pearson, rate
from isocompute.design.pilot import n_effect
from isocompute.design.reliability import (BINS, MIN_DESIGNS, SHAPES, Study, analysed, bin_index, judged_rows,
                                           known_truth, outcome, outcome_seed, pilot_of, quiet)


def null_diagnosis(seed: int, study: "Study" = None, outcomes: int = 3) -> dict:
    """Why a pilot on a null truth (n does not matter) predicts that n* will be determined: the null truth of
    `seed` (shape 'null', whatever the seed's turn), its pilot as `_pilot_rows` makes it, and
      fits_over_1      the pilot's fits with an asymptote A > 1, which a simulated run clips to 1
                       (`assurance.simulate_study`): a curve still low on its rise becomes flat
      top_spread       max - min over n of the pilot's fitted rewards at its C_max (the truth's: 0)
      boot_sd          the bootstrap replicates' sd of those rewards, averaged over n: what the
                       tool reads as the pilot's noise
      pilot_determined the pilot's own analysis: n* determined at its C_max (0/1)
      predicted        the tool's assurance that the pilot's design determines n*
      observed         the pilot's design run `outcomes` times on the truth with fresh noise: how
                       often n* is determined (`successes` of them)."""
    study = study or Study()
    params, run_sd, _ = known_truth("null", seed, study.pilot)
    with quiet():
        out = analysed(study.pilot, params, seed, run_sd, study.pilot_bootstrap)
        pilot = pilot_of(out, study.pilot, f"truth {seed} (null)")
        top = study.pilot.c_max
        point = [sigmoid_reward(top, **pilot.point.params(b, n)) for b, n in _cells(pilot.point)]
        boot = np.array([[sigmoid_reward(top, **r.params(b, n)) for b, n in _cells(pilot.point)]
                         for r in pilot.replicates])
        table, _ = assess([pilot.design], pilot, Plan(draws=study.draws, bootstrap=study.bootstrap, seed=seed,
                                                      fitted_null=False))
        seen = [outcome(pilot.design, params, run_sd, outcome_seed(seed, 0, k), study.outcome_replicates)
                for k in range(outcomes)]
    return {"truth_seed": seed, "run_sd": run_sd, "run_sd_measured": pilot.run_sd,
            "fits_over_1": int((out["fits"]["A"] > 1).sum()), "fits": len(out["fits"]),
            "top_spread": float(np.ptp(point)), "boot_sd": float(boot.std(axis=0).mean()),
            "pilot_determined": judge(out, study.pilot)["determined"],
            "predicted": float(table["determined"].iloc[0]),
            "observed": float(np.mean([s["determined"] for s in seen])), "outcomes": outcomes,
            "successes": int(sum(s["determined"] for s in seen))}


# Truth seeds of the run-level test's level and power (`n_effect_rates`): used nowhere else.
EFFECT_TRUTHS = 20_000


def n_effect_rates(shapes=SHAPES, truths: int = 200, first_truth: int = EFFECT_TRUTHS, level: float = 0.05,
                   study: "Study" = None) -> pd.DataFrame:
    """What the pilot can tell: per shape, `truths` known truths (seeds from `first_truth`, each with its own
    run-to-run sd) run as the pilot design, and the share whose run-level test (`pilot.n_effect`) finds
    that n matters at `level`, with its Clopper-Pearson interval: the test's level on null truths, its
    power on the others. Only the pilot's evaluations are made; nothing is analysed."""
    d = (study or Study()).pilot
    rows = []
    for shape in shapes:
        ps = []
        for seed in range(first_truth, first_truth + truths):
            try:
                params, run_sd, _ = known_truth(shape, seed, d)
            except RuntimeError:                    # no truth of this shape for the pilot's grid
                continue
            found = n_effect(simulate_study(d, params, seed, run_sd))
            ps.append(np.nan if found is None else found[0])
        ps = np.array(ps, dtype=float)
        share, n, lo, hi = rate((ps[np.isfinite(ps)] < level).astype(float).tolist())
        rows.append({"shape": shape, "truths": n, "found": share, "found_lo": lo, "found_hi": hi,
                     "median_p": float(np.nanmedian(ps)) if n else np.nan})
    return pd.DataFrame(rows)


def _cells(truth) -> list[tuple[int, int]]:
    return [(int(b), int(n)) for b, g in truth.cells.items() for n in g["n"]]


def bar_pass_rate(rows: pd.DataFrame, sims: int = 2000, rho: float = 0.0, seed: int = 0, bins=BINS,
                  min_designs: int = MIN_DESIGNS) -> float:
    """How often a perfectly calibrated forecaster passes the reliability bar (every judged bin's mean
    prediction inside its Clopper-Pearson interval, `reliability_table`) with the predictions of `rows`:
    each simulated study draws every design's outcome as Bernoulli(predicted), exactly calibrated, the
    designs of one pilot and claim sharing a Gaussian copula of correlation `rho` ** 2 (a pilot's truth
    weighs on all its designs). The bar's false-fail rate is one minus it."""
    rows = judged_rows(rows)
    rng = np.random.default_rng(seed)
    edges = np.asarray(bins, dtype=float)
    rows = rows.sort_values(["claim", "truth_seed"], kind="stable")
    owner = rows.groupby(["claim", "truth_seed"]).ngroup().to_numpy()      # one latent draw per pilot and claim
    preds, claims = rows["predicted"].to_numpy(dtype=float), rows["claim"].to_numpy()
    where = bin_index(preds, edges)
    judged = [(m, float(preds[m].mean())) for c in CLAIMS for b in range(len(edges) - 1)
              for m in [(claims == c) & (where == b)] if m.sum() >= min_designs]
    passed = 0
    for _ in range(sims):
        z = rho * rng.standard_normal(owner.max() + 1)[owner] + np.sqrt(1 - rho ** 2) * rng.standard_normal(len(preds))
        hits = norm.cdf(z) < preds                       # Bernoulli(predicted) marginally
        passed += all(lo <= mean <= hi for m, mean in judged
                      for lo, hi in [clopper_pearson(int(hits[m].sum()), int(m.sum()))])
    return passed / sims


def residual_correlation(rows: pd.DataFrame) -> float:
    """The correlation of standardized residuals, (outcome - predicted) / sd, between two designs of one
    pilot and claim: how much a pilot's truth weighs on all its designs (module doc). `bar_pass_rate`'s rho
    is the latent correlation's square root: near p = 0.5 a latent rho^2 gives a correlation of outcomes of
    (2 / pi) arcsin(rho^2), 0.16 at rho 0.5 and 0.33 at 0.7."""
    rows = judged_rows(rows)
    p = rows["predicted"].to_numpy(dtype=float)
    rows = rows.assign(_e=(rows["successes"] / rows["outcomes"] - p) / np.sqrt(np.clip(p * (1 - p), 1e-3, None)))
    pairs = [(e[i], e[j]) for _, g in rows.groupby(["claim", "truth_seed"]) for e in [g["_e"].to_numpy()]
             for i in range(len(e)) for j in range(i + 1, len(e))]
    return float(np.corrcoef(np.array(pairs).T)[0, 1]) if len(pairs) > 2 else float("nan")
