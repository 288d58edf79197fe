"""Synthetic evaluation tables with known sigmoid parameters.

Used by the tests (known answers) and the benchmarks (paper-scale tables):
each run's curve is ScaleRL's sigmoid with an asymptote that grows with n and
a midpoint that moves to larger compute with n, so that the compute-optimal n
grows with compute, as in the paper. `synthetic_evals` spaces a fixed number
of evaluations per run; `synthetic_study` trains every run to one compute
budget under a given evaluation schedule, with evaluation noise as a real
validation set gives it (Gaussian, or binomial from problems x samples).
`scale_study` is the large table `analyze` is timed and checked on (benchmarks/
bench_analyze_scale.py, tests/analysis/test_analysis_scale.py): seeds and a dense schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from isocompute.analysis.fits.sigmoid import sigmoid_reward

SPAN = 20.0      # synthetic_evals: each run's evaluations span about this many times its C_mid


@dataclass(frozen=True)
class GrowthTruth:
    """`synthetic_params`' truth: A rises with log n from `A_lo` towards `A_hi` up to `n_sat`
    and falls by `decline` per doubling beyond; C_mid = c_mid_scale * B_p^bp_exponent *
    n^n_exponent; R0 and B shared."""

    R0: float = 0.3
    A_lo: float = 0.5
    A_hi: float = 0.8
    n_sat: float = 64.0
    decline: float = 0.01
    B: float = 1.2
    c_mid_scale: float = 2000.0
    bp_exponent: float = 0.5
    n_exponent: float = 0.9


def synthetic_params(B_p: int, n: int, truth: GrowthTruth = GrowthTruth()) -> dict:
    """Known (R0, A, B, C_mid) of run (B_p, n): A rises with log n up to `n_sat`
    and falls by `decline` per doubling beyond; C_mid = c_mid_scale * B_p^0.5 * n^0.9,
    so that at a fixed batch B_p * n a larger n is slower to start but goes
    higher (n*(M) grows with M, as in the paper's Fig. 9)."""
    t = truth
    x = min(np.log2(n) / np.log2(t.n_sat), 1.0)
    A = t.A_lo + (t.A_hi - t.A_lo) * (1 - np.exp(-2.5 * x)) - t.decline * max(np.log2(n / t.n_sat), 0.0)
    C_mid = t.c_mid_scale * B_p ** t.bp_exponent * n ** t.n_exponent
    return {"R0": t.R0, "A": float(A), "B": t.B, "C_mid": float(C_mid)}


def synthetic_evals(B_ps=(32,), ns=(8, 16, 32, 64, 128), *, points: int = 200, budget: float | None = None,
                    noise: float = 0.0, seed: int = 0, truth: GrowthTruth = GrowthTruth()) -> pd.DataFrame:
    """An evaluation table: `points` evaluations per run (step 0 included),
    evenly spaced in steps up to about SPAN x the run's own C_mid (runs
    beyond `n_sat` stop where the n_sat run stops), or a common `budget`. Columns B_p, n, step, compute, avg@4, best@4, worst@4, tokens.
    best@4 / worst@4 are smooth transforms of avg@4 (coverage above, sharpening
    below), enough for their optima to be defined."""
    rng = np.random.default_rng(seed)
    rows = []
    for B_p in B_ps:
        for n in ns:
            p = synthetic_params(B_p, n, truth)
            run_budget = (SPAN * synthetic_params(B_p, min(n, truth.n_sat), truth)["C_mid"]
                          if budget is None else budget)
            every = max(1, int(np.ceil(run_budget / (B_p * n * (points - 1)))))
            steps = np.arange(points) * every
            compute = B_p * n * steps
            avg = sigmoid_reward(compute, p["R0"], p["A"], p["B"], p["C_mid"])
            if noise:
                avg = avg + rng.normal(0, noise, size=avg.shape) * (steps > 0)
            rows.append(_run_frame(B_p, n, steps, np.clip(avg, 0, 1)))
    return pd.concat(rows, ignore_index=True)


def _run_frame(B_p: int, n: int, steps, avg) -> pd.DataFrame:
    """One run's rows: avg@4 as given; best@4 / worst@4 smooth transforms of it
    (coverage above, sharpening below), enough for their optima to be defined;
    tokens growing with the response length."""
    steps = np.asarray(steps)
    compute = B_p * n * steps
    frame = pd.DataFrame({"B_p": B_p, "n": n, "step": steps, "compute": compute, "avg@4": avg})
    frame["best@4"] = np.clip(1 - (1 - avg) ** (1.5 + 0.1 * np.log2(n)), 0, 1)
    frame["worst@4"] = np.clip(avg ** (2.5 - 0.1 * np.log2(n)), 0, 1)
    frame["tokens"] = compute * 500.0 * (1 + 0.1 * np.log2(n) * steps / max(steps.max(), 1))
    return frame


@dataclass(frozen=True)
class CrossoverTruth:
    """`crossover_params`' truth: A = A_ref + A_per_doubling per doubling of n over n_ref,
    C_mid = c_mid_ref * (n / n_ref)^c_mid_exponent; R0 and B shared."""

    R0: float = 0.45
    A_ref: float = 0.60
    A_per_doubling: float = 0.02
    n_ref: int = 8
    c_mid_ref: float = 3e4
    c_mid_exponent: float = 0.75
    B: float = 1.5


def crossover_params(B_p: int, n: int, truth: CrossoverTruth = CrossoverTruth()) -> dict:
    """Known curves with a crossover, on the paper's Easy scale at B_p = 32.

    A larger n has a higher asymptote (`A_per_doubling` per doubling of n) and
    a later midpoint (C_mid = c_mid_ref * (n / n_ref)^c_mid_exponent), so small
    n gains fastest early and large n overtakes it later. Calibrated to the
    paper's statements, not to any estimator: R0 0.45 (Easy: base avg@16 in
    [0.3, 0.6]); at C = 2^22 the optimum is n = 512 and the range across
    n = 8..512 is 0.10 (Fig. 10: 9.2% on Easy); n*(C) climbs from 8 to 512 in
    between (Fig. 6/7); n = 8 is half way after ~120 of its steps. B_p does not
    enter (one B_p per study in the benchmark).
    """
    t = truth
    doublings = np.log2(n / t.n_ref)
    return {"R0": t.R0, "A": t.A_ref + t.A_per_doubling * doublings, "B": t.B,
            "C_mid": t.c_mid_ref * (n / t.n_ref) ** t.c_mid_exponent}


@dataclass(frozen=True)
class EvalNoise:
    """How a synthetic study's evaluations are drawn around the truth: Gaussian with sd `sd`,
    or, with `problems`, binomial from problems x `samples` draws; every cell trained `seeds`
    times; the generator seeded by `seed`.

    Gaussian noise may carry more structure: `binomial_like` scales sd by sqrt(r (1 - r)) / 0.5 at
    the true reward r (a success rate's sd, equal to `sd` at 0.5); `run_sd` adds one persistent
    deviation per run and `wiggle_sd` a wiggle correlated along log2 compute (Ornstein-Uhlenbeck,
    correlation exp(-distance / `wiggle_doublings`)) to every evaluation at positive compute (a
    run's evaluations share one validation set, so their errors correlate; the base model's
    evaluation at step 0 has neither). Without them the draws are the plain Gaussian's, unchanged."""

    sd: float = 0.0
    problems: int | None = None
    samples: int = 4
    seeds: int = 1
    seed: int = 0
    binomial_like: bool = False
    run_sd: float = 0.0
    wiggle_sd: float = 0.0
    wiggle_doublings: float = 1.0


def _shared_errors(rng: np.random.Generator, compute: np.ndarray, noise: EvalNoise) -> np.ndarray:
    """One run's correlated evaluation errors (`EvalNoise.run_sd`, `wiggle_sd`): 0 at compute 0."""
    out = np.zeros(compute.shape)
    pos = np.flatnonzero(compute > 0)
    if not pos.size:
        return out
    offset = noise.run_sd * rng.standard_normal()
    x = np.log2(compute[pos].astype(float))
    shocks = rng.standard_normal(pos.size)
    wiggle = np.empty(pos.size)
    wiggle[0] = noise.wiggle_sd * shocks[0]
    rho = np.exp(-np.diff(x) / max(noise.wiggle_doublings, 1e-9))
    for k in range(1, pos.size):
        wiggle[k] = rho[k - 1] * wiggle[k - 1] + np.sqrt(1 - rho[k - 1] ** 2) * noise.wiggle_sd * shocks[k]
    out[pos] = offset + wiggle
    return out


def synthetic_study(B_ps, ns, *, c_max: float, eval_steps, params=crossover_params,
                    noise: EvalNoise = EvalNoise(), reward=None) -> pd.DataFrame:
    """An evaluation table of a study trained to one compute budget.

    Each run (B_p, n) takes M_max = c_max // (B_p n) steps and is validated at
    `eval_steps(B, M_max)` (B = B_p n; e.g. every K steps, or a compute-matched
    schedule). Its true avg@4 is `params(B_p, n)`'s sigmoid. Noise (`EvalNoise`): Gaussian
    with sd `noise.sd` on every evaluation (step 0 included: each run evaluates
    the base model itself), or, with `noise.problems`, binomial from problems x
    `samples` draws (then the table carries columns problems and samples).
    With `noise.seeds` > 1 every cell is trained that many times (column seed).
    `reward(B_p, n, compute)`, when given, is the true avg@4 instead of `params`' sigmoid (a truth
    that is not one sigmoid per run: `adaptive.strata.Truth.reward`).
    """
    problems, samples, seeds = noise.problems, noise.samples, noise.seeds
    rng = np.random.default_rng(noise.seed)
    rows = []
    for B_p in B_ps:
        for n in ns:
            M_max = int(c_max // (B_p * n))
            steps = np.asarray(eval_steps(B_p * n, M_max), dtype=np.int64)
            if reward is None:
                p = params(B_p, n)
                truth = sigmoid_reward(B_p * n * steps, p["R0"], p["A"], p["B"], p["C_mid"])
            else:
                truth = np.asarray(reward(B_p, n, B_p * n * steps), dtype=float)
            for s in range(seeds):
                if problems is not None:
                    draws = problems * samples
                    avg = rng.binomial(draws, np.clip(truth, 0, 1)) / draws
                else:
                    sd = noise.sd
                    if noise.binomial_like:
                        r = np.clip(truth, 0, 1)
                        sd = noise.sd * np.sqrt(r * (1 - r)) / 0.5
                    avg = truth + sd * rng.standard_normal(truth.shape)
                    if noise.run_sd > 0 or noise.wiggle_sd > 0:
                        avg = avg + _shared_errors(rng, B_p * n * steps, noise)
                    avg = np.clip(avg, 0, 1)
                frame = _run_frame(B_p, n, steps, avg)
                if problems is not None:
                    frame["problems"], frame["samples"] = problems, samples
                if seeds > 1:
                    frame.insert(2, "seed", s)
                rows.append(frame)
    return pd.concat(rows, ignore_index=True)


# The scale study: every cell of SCALE_B_PS x SCALE_NS, binomial noise from SCALE_PROBLEMS x
# SCALE_SAMPLES, validated from C_MAX / 2^SCALE_SPAN_DOUBLINGS to C_MAX at compute-matched points.
SCALE_B_PS = (4, 8, 16, 32)
SCALE_NS = (2, 4, 8, 16, 32, 64, 128, 256)
SCALE_PROBLEMS, SCALE_SAMPLES = 100, 4
SCALE_SPAN_DOUBLINGS = 10


def scale_study_shape(rows: float) -> dict:
    """Seeds and evaluation points per run of a scale study of about `rows` rows: seeds grow
    with the size (2 at 10^4, 8 at 10^6), the schedule takes the rest."""
    cells = len(SCALE_B_PS) * len(SCALE_NS)
    seeds = 2 if rows < 3e4 else 4 if rows < 3e5 else 8
    points = max(8, int(round(rows / (cells * seeds))))
    return {"seeds": seeds, "points": points}


def scale_study(rows: float, *, seed: int = 0) -> pd.DataFrame:
    """The evaluation table of a study of about `rows` rows (`scale_study_shape`): every cell of
    SCALE_B_PS x SCALE_NS trained to one budget, `seeds` times, validated at `points`
    compute-matched points (a dense schedule; a large batch has fewer distinct steps at small
    compute)."""
    from isocompute.schedule import compute_schedule_steps

    shape = scale_study_shape(rows)
    # Budget large enough that the largest batch has a distinct step for every point.
    c_max = float(2 ** int(np.ceil(np.log2(max(SCALE_B_PS) * max(SCALE_NS) * shape["points"] * 4))))
    lo = c_max / 2 ** SCALE_SPAN_DOUBLINGS
    # crossover_params' midpoints sit near 3e4-4e5 rollouts: scale them into the validated range.
    scale = lo * 2 ** 3 / 3e4

    def params(B_p, n):
        p = crossover_params(B_p, n)
        return {**p, "C_mid": p["C_mid"] * scale * (B_p / SCALE_B_PS[0]) ** 0.25}

    def schedule(B, M_max):
        return compute_schedule_steps(B, M_max, shape["points"], min_compute=lo, c_max=c_max)

    return synthetic_study(SCALE_B_PS, SCALE_NS, c_max=c_max, eval_steps=schedule, params=params,
                           noise=EvalNoise(problems=SCALE_PROBLEMS, samples=SCALE_SAMPLES, seeds=shape["seeds"],
                                           seed=seed))
