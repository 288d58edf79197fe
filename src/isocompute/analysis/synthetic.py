"""Synthetic evaluation tables with known sigmoid parameters.

Used by the tests (known answers) and the benchmark (paper-scale tables): each
run's curve is ScaleRL's sigmoid with an asymptote that grows and saturates
with n and a midpoint that moves to larger compute with n, so that the
compute-optimal n grows with compute, as in the paper.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.analysis.fits import sigmoid_reward


def synthetic_params(B_p: int, n: int, *, R0: float = 0.3, A_lo: float = 0.5, A_hi: float = 0.8,
                     n_sat: float = 64.0, decline: float = 0.01, B: float = 1.2,
                     c_mid_scale: float = 2000.0, bp_exponent: float = 0.5, n_exponent: float = 0.9) -> dict:
    """Known (R0, A, B, C_mid) of run (B_p, n): A rises with log n up to `n_sat`
    and falls by `decline` per doubling beyond; C_mid = c_mid_scale * B_p^0.5 * n^0.9,
    so that at a fixed batch B_p * n a larger n is slower to start but goes
    higher (n*(M) grows with M, as in the paper's Fig. 9)."""
    x = min(np.log2(n) / np.log2(n_sat), 1.0)
    A = A_lo + (A_hi - A_lo) * (1 - np.exp(-2.5 * x)) - decline * max(np.log2(n / n_sat), 0.0)
    C_mid = c_mid_scale * B_p ** bp_exponent * n ** n_exponent
    return {"R0": R0, "A": float(A), "B": B, "C_mid": float(C_mid)}


def synthetic_evals(B_ps=(32,), ns=(8, 16, 32, 64, 128), *, points: int = 200, span: float = 20.0,
                    budget: float | None = None,
                    noise: float = 0.0, seed: int = 0,
                    **param_kw) -> pd.DataFrame:
    """An evaluation table: `points` evaluations per run (step 0 included),
    evenly spaced in steps up to about `span` x the run's own C_mid (runs
    beyond `n_sat` stop where the n_sat run stops), or a common `budget`. Columns B_p, n, step, compute, avg@4, best@4, worst@4, tokens.
    best@4 / worst@4 are smooth transforms of avg@4 (coverage above, sharpening
    below), enough for their optima to be defined."""
    rng = np.random.default_rng(seed)
    rows = []
    for B_p in B_ps:
        for n in ns:
            p = synthetic_params(B_p, n, **param_kw)
            n_sat = param_kw.get("n_sat", 64.0)
            run_budget = (span * synthetic_params(B_p, min(n, n_sat), **param_kw)["C_mid"]
                          if budget is None else budget)
            every = max(1, int(np.ceil(run_budget / (B_p * n * (points - 1)))))
            steps = np.arange(points) * every
            compute = B_p * n * steps
            avg = sigmoid_reward(compute, p["R0"], p["A"], p["B"], p["C_mid"])
            if noise:
                avg = avg + rng.normal(0, noise, size=avg.shape) * (steps > 0)
            avg = np.clip(avg, 0, 1)
            frame = pd.DataFrame({"B_p": B_p, "n": n, "step": steps, "compute": compute, "avg@4": avg})
            frame["best@4"] = np.clip(1 - (1 - avg) ** (1.5 + 0.1 * np.log2(n)), 0, 1)
            frame["worst@4"] = np.clip(avg ** (2.5 - 0.1 * np.log2(n)), 0, 1)
            frame["tokens"] = compute * 500.0 * (1 + 0.1 * np.log2(n) * steps / max(steps.max(), 1))
            rows.append(frame)
    return pd.concat(rows, ignore_index=True)
