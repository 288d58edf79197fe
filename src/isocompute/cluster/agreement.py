"""Whether two samplers agree within sampling error: the z of the difference of their mean
pass rates over the same problems (`agreement_z`), and the bound beyond which they do not.

The CPU twin's test of vLLM against the local sampler (tests/envs/test_twin_vllm_difficulty.py)
and the GPU check's same test on CUDA (benchmarks/gpu_check.py) both read it from here.
"""

from __future__ import annotations

import pandas as pd

Z_BOUND = 4.0  # |z| of agreement_z beyond which the samplers disagree (two-sided, ~1 in 16,000)


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
