"""The adaptive sweep's rule (issue 13): rungs, the pure pruning decision on
hand-built bands, and `decide` on a synthetic study with known curves."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.adaptive import decide, prune, rule_params, rung_budgets
from isocompute.analysis.schedule import compute_schedule_steps
from isocompute.analysis.synthetic import crossover_params, synthetic_study

C_MAX = 2.0 ** 22


def test_rung_budgets_end_at_c_max():
    assert rung_budgets(1024.0, 2, 4) == [128.0, 256.0, 512.0, 1024.0]
    assert rung_budgets(1024.0, 4, 1) == [1024.0]
    with pytest.raises(ValueError, match="eta"):
        rung_budgets(1024.0, 1.0, 3)
    with pytest.raises(ValueError, match="rungs"):
        rung_budgets(1024.0, 2, 0)


def test_rule_params_take_the_schema_defaults():
    p = rule_params({"z": 3.0})
    assert p["z"] == 3.0 and p["eta"] == 2 and p["frontier"] == "fixed_B_p"
    with pytest.raises(ValueError, match="unknown adaptive rule key"):
        rule_params({"zz": 1})


def _bands(curves: dict, reached: float, compute=(100.0, 200.0, 400.0, 800.0), B_p: int = 1, fitted=None):
    """Hand-built bands: curves[n] = (lo, mid, hi) sequences over `compute`."""
    rows = []
    for n, (lo, mid, hi) in curves.items():
        for c, a, m, b in zip(compute, lo, mid, hi):
            rows.append({"B_p": B_p, "n": n, "compute": c, "reward": m, "reward_lo": a, "reward_hi": b,
                         "reached": reached, "fitted": True if fitted is None else fitted.get(n, True)})
    return pd.DataFrame(rows)


def test_prune_stops_a_run_whose_band_stays_below_the_frontier():
    bands = _bands({
        8: ([.50, .50, .50, .50], [.51, .51, .51, .51], [.52, .52, .52, .52]),     # plateaued low
        64: ([.55, .60, .65, .70], [.56, .61, .66, .71], [.57, .62, .67, .72]),    # the frontier
        128: ([.45, .50, .55, .60], [.50, .55, .60, .66], [.60, .65, .70, .75]),   # wide: could reach it
    }, reached=100.0)
    out = prune(bands, neighbours=0).set_index("n")
    assert not out.loc[8, "continue"] and "below" in out.loc[8, "reason"]
    assert out.loc[64, "continue"] and out.loc[128, "continue"]
    assert out.loc[8, "gap"] == pytest.approx(0.52 - 0.60)   # nearest approach, at C = 200


def test_prune_keeps_the_neighbours_of_n_star_and_unfitted_runs():
    bands = _bands({
        8: ([.40] * 4, [.41] * 4, [.42] * 4),
        16: ([.40] * 4, [.45] * 4, [.46] * 4),
        32: ([.60] * 4, [.61] * 4, [.62] * 4),
        64: ([np.nan] * 4, [np.nan] * 4, [np.nan] * 4),
    }, reached=100.0, fitted={64: False})
    out = prune(bands, neighbours=1).set_index("n")
    assert out.loc[16, "continue"] and "n* = 32" in out.loc[16, "reason"]
    assert not out.loc[8, "continue"]
    assert out.loc[64, "continue"] and out.loc[64, "reason"] == "too few evaluations to fit"


def test_prune_only_looks_ahead_and_stops_finished_runs():
    # n = 8 is the frontier only at the compute it has already reached.
    bands = _bands({
        8: ([.60, .60, .60, .60], [.61, .61, .61, .61], [.62, .62, .62, .62]),
        64: ([.50, .65, .70, .75], [.52, .66, .71, .76], [.55, .67, .72, .77]),
    }, reached=200.0)
    out = prune(bands, neighbours=0).set_index("n")
    assert not out.loc[8, "continue"]
    assert out.loc[64, "continue"]
    done = prune(_bands({8: ([.5] * 4, [.5] * 4, [.5] * 4)}, reached=800.0), neighbours=0)
    assert not done["continue"].iloc[0] and done["reason"].iloc[0] == "reached C_max"


def test_prune_groups_by_b_p_unless_joint():
    low = _bands({8: ([.40] * 4, [.41] * 4, [.42] * 4)}, reached=100.0, B_p=64)
    high = _bands({8: ([.60] * 4, [.61] * 4, [.62] * 4)}, reached=100.0, B_p=32)
    bands = pd.concat([low, high], ignore_index=True)
    per_bp = prune(bands, neighbours=0).set_index("B_p")
    assert per_bp["continue"].all()               # each is its own B_p's frontier
    joint = prune(bands, neighbours=0, frontier="joint").set_index("B_p")
    assert joint.loc[32, "continue"] and not joint.loc[64, "continue"]


@pytest.fixture(scope="module")
def crossover_study():
    ns = (8, 16, 32, 64, 128, 256, 512)
    steps = lambda B, M: compute_schedule_steps(B, M, 161, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    return synthetic_study((32,), ns, c_max=C_MAX, eval_steps=steps, noise=0.013, seed=7)


def test_decide_stops_dominated_runs_and_keeps_the_frontier(crossover_study):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = decide(crossover_study, rung_compute=C_MAX / 4, c_max=C_MAX).set_index("n")
    # At C_max / 4 the small n have plateaued well below the large n (true asymptotes 0.60 vs 0.72).
    assert not out.loc[8, "continue"] and not out.loc[16, "continue"]
    assert out.loc[256, "continue"] and out.loc[512, "continue"]
    true_best = max(crossover_params(32, n)["A"] for n in out.index)
    assert out.loc[512, "reward_hi_at_c_max"] <= true_best + 0.2
    assert set(out.columns) >= {"continue", "reason", "reward_hi_at_c_max", "frontier_lo_at_c_max"}
