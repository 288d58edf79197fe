"""Frontiers: the upper envelope of fitted curves, n*(C), and the three studies."""

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits.methods import get_method
from isocompute.analysis.fits.sigmoid import USABLE, sigmoid_reward
from isocompute.analysis.fits.synthetic import synthetic_evals
from isocompute.analysis.frontier.envelope import (compute_grid, frontier, frontier_fixed_batch, frontier_fixed_bp,
                                                   frontier_joint)
from isocompute.analysis.frontier.nstar import law_points, n_star_laws
from support import TINY_CONFIG, make_study_dir, run_snakemake, seed_study, write_config


def _fits(rows):
    cols = ["B_p", "n", "R0", "A", "B", "C_mid", "status", "compute_min", "compute_max"]
    return pd.DataFrame(rows, columns=cols)


# Two crossing curves: n=8 rises early to 0.6, n=64 rises late to 0.8.
CROSSING = _fits([
    [32, 8, 0.3, 0.6, 2.0, 1e3, "ok", 10, 1e6],
    [32, 64, 0.3, 0.8, 2.0, 1e4, "ok", 10, 1e6],
])


def test_compute_grid_is_log_spaced_over_the_positive_range():
    g = compute_grid([0, 10, 1000], points=3)
    assert g.tolist() == pytest.approx([10, 100, 1000])


def test_envelope_switches_to_the_larger_n_where_its_curve_is_higher():
    grid = np.geomspace(10, 1e6, 50)
    f = frontier(CROSSING, grid)
    r8 = sigmoid_reward(grid, 0.3, 0.6, 2.0, 1e3)
    r64 = sigmoid_reward(grid, 0.3, 0.8, 2.0, 1e4)
    assert np.allclose(f["reward"], np.maximum(r8, r64))
    assert f["n_star"].tolist() == np.where(r64 > r8, 64, 8).tolist()
    assert f["n_star"].iloc[0] == 8 and f["n_star"].iloc[-1] == 64
    assert (np.diff(f["n_star"]) >= 0).all()


def test_ties_go_to_the_smaller_n_and_unusable_fits_are_ignored():
    same = _fits([[32, 64, 0.3, 0.7, 1.0, 1e3, "ok", 1, 1e5], [32, 8, 0.3, 0.7, 1.0, 1e3, "ok", 1, 1e5],
                  [32, 16, 0.3, 0.99, 1.0, 1e3, "too_few_points", 1, 1e5]])
    f = frontier(same, [1e2, 1e4])
    assert f["n_star"].tolist() == [8, 8]


def test_flat_fits_take_part_at_r0():
    rows = _fits([[32, 8, 0.5, 0.5, np.nan, np.nan, "flat", 1, 1e5], [32, 16, 0.3, 0.7, 1.0, 1e4, "ok", 1, 1e5]])
    f = frontier(rows, [1e2, 1e6])
    assert f["n_star"].tolist() == [8, 16]
    assert f["reward"].iloc[0] == pytest.approx(0.5)


def test_without_extrapolation_curves_stop_at_their_largest_compute():
    short = CROSSING.assign(compute_max=[1e6, 1e4])   # n=64 stopped early
    g = [1e5, 1e6]
    assert frontier(short, g)["n_star"].tolist() == [64, 64]
    assert frontier(short, g, extrapolate=False)["n_star"].tolist() == [8, 8]
    assert frontier(short.assign(compute_max=[1e3, 1e3]), g, extrapolate=False)["n_star"].isna().all()


def test_fixed_bp_fixed_batch_and_joint_studies():
    fits = _fits([
        [32, 8, 0.3, 0.6, 2.0, 1e3, "ok", 256, 1e6],
        [32, 64, 0.3, 0.8, 2.0, 1e4, "ok", 2048, 1e6],
        [64, 4, 0.3, 0.6, 2.0, 1e3, "ok", 256, 1e6],     # B = 256 with (32, 8)
        [64, 32, 0.3, 0.7, 2.0, 1e4, "ok", 2048, 1e6],   # B = 2048 with (32, 64)
    ])
    q1 = frontier_fixed_bp(fits, grid_points=10)
    assert q1.columns.tolist() == ["B_p", "compute", "n_star", "reward", "comparable"]
    assert sorted(q1["B_p"].unique()) == [32, 64] and len(q1) == 20
    assert q1["compute"].min() == pytest.approx(256) and q1["compute"].max() == pytest.approx(1e6)
    q2 = frontier_fixed_batch(fits, grid_points=10)
    assert q2.columns.tolist() == ["B", "M", "compute", "n_star", "B_p_star", "reward"]
    assert sorted(q2["B"].unique()) == [256, 2048]
    assert np.allclose(q2["compute"], q2["B"] * q2["M"])
    assert np.allclose(q2["B_p_star"] * q2["n_star"], q2["B"])
    b256 = q2[q2["B"] == 256]
    assert b256["M"].min() == pytest.approx(1.0) and b256["M"].max() == pytest.approx(1e6 / 256)
    q3 = frontier_joint(fits, grid_points=10)
    assert q3.columns.tolist() == ["compute", "n_star", "B_p_star", "reward"]
    assert q3["n_star"].iloc[-1] == 64 and q3["B_p_star"].iloc[-1] == 32


def test_fixed_batch_cells_join_fig9_but_not_the_fixed_bp_frontiers():
    """A B_p with one n (grid.<split>.cells, Fig. 9's B_p = 8 and 16) has no frontier over n,
    but is a point of its fixed-B study."""
    fits = _fits([
        [32, 8, 0.3, 0.6, 2.0, 1e3, "ok", 256, 1e6],
        [32, 64, 0.3, 0.8, 2.0, 1e4, "ok", 2048, 1e6],
        [4, 512, 0.3, 0.7, 2.0, 1e4, "ok", 2048, 1e6],   # B = 2048 with (32, 64)
    ])
    assert sorted(frontier_fixed_bp(fits, grid_points=10, min_runs=2)["B_p"].unique()) == [32]
    assert sorted(frontier_fixed_bp(fits, grid_points=10)["B_p"].unique()) == [4, 32]
    q2 = frontier_fixed_batch(fits, grid_points=10)
    assert sorted(q2["B"].unique()) == [2048] and set(q2["B_p_star"]) <= {4, 32}


def test_grid_cells_adds_listed_cells_beyond_b_max():
    from isocompute.config import check_config
    from isocompute.errors import ConfigError
    from isocompute.grid import grid_cells

    grid = {"B_p": [32, 64], "n": [8, 16], "B_max": 1024, "C_max": 65536, "cells": [[8, 1024], [16, 512], [32, 8]]}
    cells = grid_cells(check_config({"splits": {"names": ["easy"]}, "grid": {"easy": grid}}))
    assert [(c.B_p, c.n, c.M_max) for c in cells] == [(8, 1024, 8), (16, 512, 8), (32, 8, 256), (32, 16, 128),
                                                      (64, 8, 128), (64, 16, 64)]
    with pytest.raises(ConfigError, match=r"grid.easy.cells\[0\]': B_p \* n = 131072 exceeds C_max"):
        grid_cells(check_config({"splits": {"names": ["easy"]},
                                 "grid": {"easy": {**grid, "cells": [[128, 1024]]}}}))


def test_first_replicate_trains_new_seeds_on_the_same_cells():
    """A confirmation study (config/replicate.yaml) starts past its pilot's replicates: new run
    directories, new training seeds, the same cells; a grid without the key is unchanged."""
    from isocompute.config import check_config
    from isocompute.grid import grid_cells
    from isocompute.train.recipe import run_seed

    grid = {"B_p": [16], "n": [2, 4], "B_max": 256, "C_max": 1024, "seeds": 2}
    cfg = check_config({"splits": {"names": ["easy"]}, "grid": {"easy": grid}})
    assert "first_replicate" not in cfg["grid"]["easy"]          # no default: old params stay as they were
    assert [c.name for c in grid_cells(cfg)] == ["bp16_n2", "bp16_n2_s1", "bp16_n4", "bp16_n4_s1"]
    later = check_config({"splits": {"names": ["easy"]}, "grid": {"easy": {**grid, "first_replicate": 2}}})
    cells = grid_cells(later)
    assert [c.name for c in cells] == ["bp16_n2_s2", "bp16_n2_s3", "bp16_n4_s2", "bp16_n4_s3"]
    assert [run_seed(later, c) for c in cells] == [later["seed"] + r for r in (2, 3, 2, 3)]


@pytest.fixture(scope="module")
def synthetic_q1():
    evals = synthetic_evals(B_ps=(32, 64), ns=(8, 16, 32, 64, 128, 256), points=120)
    fits = get_method("noise").fit_curves(evals, "avg@4")
    return evals, fits, frontier_fixed_bp(fits)


def test_synthetic_grid_n_star_grows_with_compute_and_saturates(synthetic_q1):
    _, fits, q1 = synthetic_q1
    assert (fits["status"] == "ok").all()
    for B_p, f in q1.groupby("B_p"):
        n_star = f["n_star"].to_numpy()
        assert n_star[0] == 8
        assert n_star[-1] == 64                     # the synthetic asymptote peaks at n_sat = 64
        smooth = law_points(f)["log2_n_star_avg"].to_numpy()
        assert np.corrcoef(np.log10(f["compute"]), smooth)[0, 1] > 0.8
    laws = n_star_laws(q1)
    assert (laws["status"] == "ok").all()
    assert (laws["U"] > laws["L"]).all()
    assert laws["U"].to_numpy() == pytest.approx(6.0, abs=0.6)      # log2 64
    assert laws["L"].to_numpy() == pytest.approx(3.0, abs=0.3)      # log2 8


# The tokens axis of the embedded study (B_p = 4): every run has the one rollout budget, so
# each ends near 92.6k generated tokens, but a little apart; n = 32 ends last and lowest.
TOKENS_ENDS = _fits([
    [4, 2, 0.4075, 0.6211, 0.9118, 11573.5, "ok", 94, 92570],
    [4, 4, 0.4075, 0.6495, 0.9118, 14872.9, "ok", 187, 92578],
    [4, 32, 0.4075, 0.5000, 0.9118, 60000.0, "ok", 1500, 92757],
])


def test_tokens_frontier_does_not_drop_where_the_runs_end_a_little_apart():
    f = frontier_fixed_bp(TOKENS_ENDS, grid_points=100, min_runs=2, extrapolate=False)
    # the last point is the first of the runs' ends, where all three still have data
    assert f["compute"].iloc[-1] == 92570 and f["compute"].iloc[0] == 94 and len(f) == 100
    assert f["n_star"].iloc[-1] == 4
    assert (np.diff(f["reward"].to_numpy()) >= 0).all()
    # a run stopped far earlier (an adaptive sweep) leaves the grid's end where it was
    stopped = TOKENS_ENDS.assign(compute_max=[92570, 20000, 92757])
    g = frontier_fixed_bp(stopped, grid_points=100, min_runs=2, extrapolate=False)
    assert g["compute"].iloc[-1] == 92570 and len(g) == 100
    # extrapolated curves cover the whole grid: its end stays the furthest end
    assert frontier_fixed_bp(TOKENS_ENDS, grid_points=100, min_runs=2)["compute"].iloc[-1] == 92757


# The suite's tiny study trained on both splits, two B_p with two n each: real tokens fits whose
# runs end a little apart in generated tokens, as the embedded study's did.
TOKENS_GRID = {
    **TINY_CONFIG,
    "grid": {split: {"B_p": [1, 2], "n": [2, 4], "B_max": 8, "C_max": 32} for split in ("easy", "hard")},
    "train": {"eval_schedule": "steps", "eval_interval": 2, "lr_base": 1e-3, "B_ref": 8, "warmup_steps": 1,
              "probe_problems": 2, "probe_samples": 2},
}


@pytest.fixture(scope="module")
def tiny_tokens_fits(tmp_path_factory, tiny_stages) -> dict[str, pd.DataFrame]:
    """split -> fits_tokens.csv of TOKENS_GRID, trained and analysed from the shared tiny study."""
    work = seed_study(make_study_dir(tmp_path_factory.mktemp("tokens_frontier")), tiny_stages)
    cfg = write_config(work, TOKENS_GRID)
    splits = list(TOKENS_GRID["grid"])
    run_snakemake(work, *(f"results/tiny/analysis/{s}/tables" for s in splits), "--cores", "2",
                  "--configfile", str(cfg))
    return {s: pd.read_csv(work / "results" / "tiny" / "analysis" / s / "tables" / "fits_tokens.csv")
            for s in splits}


@pytest.mark.parametrize("split", ["easy", "hard"])
def test_a_studys_tokens_frontier_never_drops(split, tiny_tokens_fits):
    """On a trained study's tokens fits (where a reviewer saw every B_p's frontier of the
    embedded study drop): its runs end a little apart in tokens, and each B_p's frontier ends
    where all its usable runs still have data, so it never drops. The tiny study's curves are
    nearly flat, so the end is checked itself: at the furthest run's end it would drop on a
    real study's curves (the embedded study's easy split, every B_p)."""
    fits = tiny_tokens_fits[split]
    assert sorted(fits.groupby(["B_p", "n"]).groups) == [(1, 2), (1, 4), (2, 2), (2, 4)]
    usable = fits[fits["status"].isin(USABLE)]
    assert (usable.groupby("B_p")["compute_max"].nunique() > 1).any(), "no B_p whose runs end apart"
    front = frontier_fixed_bp(fits, min_runs=2, extrapolate=False)
    assert front["B_p"].nunique() == 2
    for B_p, g in front.groupby("B_p"):
        ends = usable.loc[usable["B_p"] == B_p, "compute_max"]
        assert g["compute"].iloc[-1] <= ends.min(), f"B_p {B_p}: the frontier outruns a run's end {ends.tolist()}"
        assert (np.diff(g["reward"].to_numpy()) >= 0).all(), f"B_p {B_p}: the tokens frontier drops"
