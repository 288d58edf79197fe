"""Whether two samplers agree within sampling error: the z of the difference of their mean
pass rates over the same problems (`agreement_z`), and the bound beyond which they do not.

The CPU twin's test of vLLM against the local sampler (tests/envs/test_twin_vllm_difficulty.py)
and the GPU check's same test on CUDA (benchmarks/gpu_check.py) both read it from here. The
twin's test adds two statistics that read the problems one by one (`dispersion_p`,
`concentration_p`; that test's docstring derives all three) and judges by all three
(`disagreement`), as benchmarks/power_sampler_agreement.py does when it measures its power.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

Z_BOUND = 4.0  # |z| of agreement_z beyond which the samplers disagree (two-sided, ~1 in 16,000)
# p-values of dispersion_p and concentration_p at or below which the samplers disagree (about
# 1 in 500 runs all told, with Z_BOUND), and the sign flips drawn for concentration_p.
P_BOUND, SIGN_FLIPS = 1e-3, 4000


def agreement_z(x: pd.Series, y: pd.Series, n: int) -> float:
    """z of the difference of the mean pass rates of paired Binomial(n) correct counts, per
    problem (aligned on the index). Under p_i = q_i for every problem, D = sum(x_i - y_i) / (n N)
    has mean 0 and variance sum 2 n p_i (1 - p_i) / (n N)^2, estimated with the pooled
    p^_i = (x_i + y_i) / 2n (times 2n / (2n - 1), unbiased)."""
    x, y = x.align(y, join="inner")
    p = (x + y) / (2 * n)
    var = float((2 * n * p * (1 - p) * (2 * n) / (2 * n - 1)).sum()) / (n * len(x)) ** 2
    diff = float((x - y).sum()) / (n * len(x))
    return diff / var ** 0.5 if var > 0 else (0.0 if diff == 0 else float("inf"))


def dispersion_p(x: pd.Series, y: pd.Series, n: int, draws: int = 2000, seed: int = 0) -> float:
    """Parametric-bootstrap p-value of S = sum (x_i - y_i)^2 under equal per-problem rates: x*, y* ~
    Binomial(n, p^_i), p^_i = (x_i + y_i) / 2n, `draws` draws (seeded); the share with S* >= S."""
    x, y = x.align(y, join="inner")
    p = ((x + y) / (2 * n)).to_numpy()
    observed = float(((x - y) ** 2).sum())
    rng = np.random.default_rng(seed)
    null = ((rng.binomial(n, p, (draws, len(p))) - rng.binomial(n, p, (draws, len(p)))) ** 2).sum(axis=1)
    return (1 + int((null >= observed).sum())) / (1 + draws)


def concentration_p(x: pd.Series, y: pd.Series, draws: int = SIGN_FLIPS, seed: int = 0) -> float:
    """Two-sided sign-flip p-value of C = sum [x_i (x_i - 1) - y_i (y_i - 1)] (x (x - 1) counts a
    problem's pairs of correct samples: how the passes concentrate on few problems)."""
    x, y = x.align(y, join="inner")
    d = (x * (x - 1) - y * (y - 1)).to_numpy()
    null = (np.random.default_rng(seed).choice([-1, 1], (draws, len(d))) * d).sum(axis=1)
    return (1 + int((np.abs(null) >= abs(d.sum())).sum())) / (1 + draws)


def disagreement(x: pd.Series, y: pd.Series, n: int) -> tuple[bool, str]:
    """Whether correct counts `x` and `y` (of `n` samples a problem) differ beyond sampling error by
    any of the three statistics (|z| >= Z_BOUND, or a p-value <= P_BOUND), and the line that says
    how they read."""
    z, s, c = agreement_z(x, y, n), dispersion_p(x, y, n), concentration_p(x, y)
    line = (f"mean pass rate {x.mean() / n:.4f} against {y.mean() / n:.4f}: z = {z:+.2f}, "
            f"p(S) = {s:.4f}, p(C) = {c:.4f}")
    return abs(z) >= Z_BOUND or s <= P_BOUND or c <= P_BOUND, line
