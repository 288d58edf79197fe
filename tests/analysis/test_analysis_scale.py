"""analyze on large tables: what was made cheaper gives the same numbers as the plain way.

The trend pool's residuals keep what a solver step leaves unchanged, the grid fit refines B
a block of replicates at a time, the bootstrap keeps its drawn counts in a small type, and
significant records are searched a window at a time. Each is compared here with the plain
computation it replaced, bit for bit, and the whole analysis of the study that
benchmarks/bench_analyze_scale.py times (fits.synthetic.scale_study: seeds, a dense schedule)
with the analysis run the plain way. The progress lines are checked too; speed is the
benchmark's, not a test's.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits import grid_search, methods, progress, records
from isocompute.analysis.fits import pooled as fits_pooled
from isocompute.analysis.fits import sigmoid as fits
from isocompute.analysis.fits.noise import fit_weighted
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.analysis.fits.synthetic import scale_study
from isocompute.analysis.pipeline import run_analysis


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def plain_residuals(X, R0, compute, y, sw, b_slope=False):
    """The trend model's residuals as they were written: the sigmoid recomputed at every theta
    (with `b_slope`, B per point: `fits_pooled._efficiency`)."""
    def residuals(theta):
        B, a, m = fits_pooled._unpack(theta, X.shape[1] - 1, b_slope)
        return sw * (sigmoid_reward(compute, R0, X @ a, fits_pooled._efficiency(B, X), np.exp(X @ m)) - y)
    return residuals


def plain_significant_records(values, se, z):
    """`records.significant_record_mask` point by point, as it was written."""
    v = np.asarray(values, dtype=float)
    e = np.broadcast_to(np.asarray(se, dtype=float), v.shape)
    mask = np.zeros(v.shape, dtype=bool)
    if v.shape[-1] == 0:
        return mask
    mask[..., 0] = True
    best = v[..., 0].copy()
    for j in range(1, v.shape[-1]):
        new = v[..., j] > best + z * e[..., j]
        mask[..., j] = new
        best = np.where(new, v[..., j], best)
    return mask


def plain_fit_resamples(self, arr, R0, idx, counts, *, grid, records):
    """NoiseMethod.fit_resamples as it was: the drawn counts kept as drawn (int64)."""
    if counts is None:
        counts = np.stack([np.bincount(row, minlength=arr["compute"].size) for row in idx])
    res = fit_weighted(arr["compute"], arr["values"], R0, arr["weights"][:, None] * counts.T,
                       compute_range=arr["compute_range"], grid=grid, boot=True)
    return res, (arr, counts)


def test_trend_residuals_are_the_sigmoids_bit_for_bit():
    rng = np.random.default_rng(3)
    N, degree = 4000, 2
    X = np.repeat(fits_pooled._design(np.log2([2.0, 4, 8, 16, 32]), 3.0, degree), N // 5, axis=0)
    c, y, sw = rng.uniform(1e3, 1e7, N), rng.uniform(0, 1, N), rng.uniform(1, 60, N)
    cached, plain = fits_pooled._WeightedResiduals(X, 0.31, c, y, sw), plain_residuals(X, 0.31, c, y, sw)
    theta = np.array([1.3, 0.02, 0.05, 0.62, 0.1, 0.4, 11.5])
    for _ in range(300):   # solver-like: one coefficient stepped (a Jacobian column), or all moved
        step = theta.copy()
        j = rng.integers(0, theta.size + 1)
        if j < theta.size:
            step[j] += 1e-7 * max(1.0, abs(step[j]))
        else:
            step = step + rng.normal(0, 0.02, theta.size)
            theta = step
        assert np.array_equal(_bits(cached(step)), _bits(plain(step)))
    # A at R0 exactly (the flat case) and the common curve (degree 0)
    flat = np.array([1.0, 0.31, np.log(3e4)])
    X0 = np.ones((N, 1))
    assert np.array_equal(_bits(fits_pooled._WeightedResiduals(X0, 0.31, c, y, sw)(flat)),
                          _bits(plain_residuals(X0, 0.31, c, y, sw)(flat)))
    # B varying with n (sweep.b_slope's trend): theta gains the slope after B
    sloped = np.array([1.3, 0.15, 0.02, 0.05, 0.62, 0.1, 0.4, 11.5])
    cached = fits_pooled._WeightedResiduals(X, 0.31, c, y, sw, b_slope=True)
    for j in (None, 0, 1, 4, 7):
        step = sloped.copy()
        if j is not None:
            step[j] += 1e-7 * max(1.0, abs(step[j]))
        np.testing.assert_allclose(cached(step), plain_residuals(X, 0.31, c, y, sw, b_slope=True)(step),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", [0, 1, 2, 300, 20000])
def test_significant_records_match_the_point_by_point_search(size):
    rng = np.random.default_rng(size)
    v = np.cumsum(rng.normal(4e-4, 0.01, size)) + rng.normal(0, 0.02, size)
    v[rng.random(size) < 0.01] = np.nan
    se = rng.uniform(0.005, 0.03, size)
    for z in (0.0, 2.0):
        assert np.array_equal(records.significant_record_mask(v, se, z), plain_significant_records(v, se, z))


def test_refining_b_by_blocks_of_replicates_gives_the_same_fits(monkeypatch):
    rng = np.random.default_rng(5)
    P = 600
    c = np.sort(rng.uniform(1e3, 1e6, P))
    y = 0.3 + 0.4 / (1 + (3e4 / c) ** 1.3) + rng.normal(0, 0.02, P)
    idx = np.sort(rng.integers(0, P, size=(40, P)), axis=1)
    grid = fits.FitGrid(a_step=0.001, c_mid_points=120, c_mid_margin=0.5)
    weights = rng.uniform(100, 900, P)[:, None] * np.stack([np.bincount(r, minlength=P) for r in idx]).T
    whole = {"paper": fits.fit_replicates(c, y, 0.3, idx, grid=grid, dtype=np.float32),
             "noise": fit_weighted(c, y, 0.3, weights, grid=grid, boot=True)}
    monkeypatch.setattr(grid_search, "REFINE_BLOCK", 4 * 9 * P * 3)      # blocks of about 3 replicates
    blocks = {"paper": fits.fit_replicates(c, y, 0.3, idx, grid=grid, dtype=np.float32),
              "noise": fit_weighted(c, y, 0.3, weights, grid=grid, boot=True)}
    for how in whole:
        for key in ("A", "B", "C_mid", "sse"):
            assert np.array_equal(_bits(whole[how][key]), _bits(blocks[how][key])), (how, key)


def _tables(evals, settings) -> dict:
    out = run_analysis(evals, settings)
    return {k: v.to_csv(index=False) for k, v in out.items() if isinstance(v, pd.DataFrame) and k != "timings"}


@pytest.mark.parametrize("method", ["noise", "paper"])
def test_analysis_of_a_seeded_dense_study_equals_the_plain_way(monkeypatch, method):
    """The benchmark's generator at a small size (2 seeds, a dense schedule): every table the
    same text as with the plain residuals, records, counts and one refinement block."""
    evals = scale_study(2e3)
    assert evals["seed"].nunique() == 2 and len(evals) > 1500
    settings = AnalysisSettings(method=method, bootstrap=6, grid_points=40)
    with monkeypatch.context() as m:
        m.setattr(grid_search, "REFINE_BLOCK", 2 ** 12)                  # many blocks, even at this size
        faster = _tables(evals, settings)
    with monkeypatch.context() as m:
        m.setattr(grid_search, "REFINE_BLOCK", 2 ** 62)
        m.setattr(fits_pooled, "_WeightedResiduals", plain_residuals)
        m.setattr(records, "significant_record_mask", plain_significant_records)
        m.setattr(methods.NoiseMethod, "fit_resamples", plain_fit_resamples)
        plain = _tables(evals, settings)
    assert faster.keys() == plain.keys()
    assert "bootstrap_fits" in faster and "records" in faster
    for key in plain:
        assert faster[key] == plain[key], key


def test_long_loops_say_where_they_are(monkeypatch, caplog):
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    evals = scale_study(2e3)
    with caplog.at_level(logging.INFO, logger="isocompute"):
        run_analysis(evals, AnalysisSettings(bootstrap=3, grid_points=30))
    said = [r.getMessage() for r in caplog.records]
    for phase in ("fits done", "bootstrap fits done", "studies done"):
        assert any(line.startswith(f"analyze: {phase} (") for line in said), said
    cells = evals.groupby(["B_p", "n"]).ngroups
    assert any(line.startswith(f"analyze: bootstrap fits (cells) {cells}/{cells} (") for line in said), said
    assert any(line.startswith("analyze: bootstrap pooling (replicates) 3/3 (") for line in said), said
    # a library caller that set no logging up hears nothing of it
    assert list(progress.progress(range(3), desc="x")) == [0, 1, 2]
