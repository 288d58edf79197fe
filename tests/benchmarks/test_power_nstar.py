"""The power analysis (isocompute.design.power) and its benchmark (benchmarks/power_nstar.py,
run as a user runs it) in its quick mode, and what its table rests on: the rise truth moves n*
from 2 to 8, the null truth puts every n on one curve, and the cost model (cluster.plan's, at
the units design.costs measured) prices the embedded study's jobs as they were measured."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from support import run_benchmark
from isocompute.cluster.plan import packed_wall
from isocompute.design import power as power_nstar
from isocompute.design.costs import MEASURED

# Sum of the job wall seconds (column s) in results/replicate_pilot/benchmarks/train/{split}/*.tsv of
# the replication pilot (config/replicate_pilot.yaml) on 2026-12-03 (E12 on Easy and Hard, 2 seeds per cell), which the
# defaults were measured on.
MEASURED_JOB_S = {"easy": 2567.1, "hard": 1930.1}


def _design(name: str) -> power_nstar.Design:
    return next(d for d in power_nstar.DESIGNS if d.name.split()[0] == name)


@pytest.mark.parametrize("split", ["easy", "hard"])
def test_rise_truth_moves_n_star_from_2_to_8_and_stays(split):
    c_max = power_nstar.EMBEDDED_C_MAX[split]
    n_star = [int(power_nstar.true_n_star(split, c)) for c in (2.0 ** 8, c_max / 4, c_max, 2.0 ** 17)]
    assert n_star == [2, 4, 8, 8]


@pytest.mark.parametrize("split", ["easy", "hard"])
def test_null_truth_is_one_curve_in_the_embedded_reward_range(split):
    params = power_nstar.truth(split, "null")
    curves = [params(8, n) for n in (2, 4, 8, 16, 32, 64)]
    assert all(c == curves[0] for c in curves)
    lo, hi = (0.40, 0.75) if split == "easy" else (0.01, 0.06)
    rise = power_nstar.truth(split, "rise")
    assert all(lo <= rise(8, n)["A"] <= hi and lo <= rise(8, n)["R0"] <= hi for n in (2, 4, 8, 16))


@pytest.mark.parametrize("split", ["easy", "hard"])
def test_cost_model_prices_the_replication_jobs_as_measured(split):
    design = replace(_design("E12"), seeds=2)                 # config/replicate_pilot.yaml
    if split == "hard":
        design = replace(design, split="hard", n=(2, 4, 8, 16), B_max=64)
    cost = power_nstar.design_cost(design, MEASURED, cores=2)
    assert cost["jobs"] == {"easy": 28, "hard": 18}[split]
    assert cost["cpu_s"] == pytest.approx(MEASURED_JOB_S[split], rel=0.03)


def test_packing_puts_the_longest_jobs_on_different_cores():
    assert packed_wall([10, 10, 1, 1], workers=2) == 11
    assert packed_wall([10, 10, 1, 1], workers=1) == 22


@pytest.mark.slow   # runs a benchmark (--quick)
def test_quick_mode_prints_a_table_of_rates_and_says_what_it_would_run(tmp_path):
    out = tmp_path / "power.csv"
    printed = run_benchmark("power_nstar.py", "--quick", "--out", str(out), timeout=1200).stdout
    table = pd.read_csv(out)
    assert list(table["design"]) == list(power_nstar.QUICK)
    for rate in ("power", "false"):
        values = table[[rate, f"{rate}_lo", f"{rate}_hi"]].to_numpy(dtype=float)
        assert np.all((values >= 0) & (values <= 1))
        assert np.all((values[:, 1] <= values[:, 0]) & (values[:, 0] <= values[:, 2]))
        assert np.all(table[f"{rate}_n"] == 3) and np.all(table[f"{rate}_k"] <= 3)
    assert np.all(table["wall_min"] > 0) and np.all(np.diff(table["rollouts"]) > 0)
    # The null truth on the largest design: the analysis must not claim what is not there
    # (at the 5% it aims for, two claims in three would happen about 0.7% of the time).
    assert int(table["false_k"].iloc[-1]) <= 1
    for what in ("power", "power beyond n = 4"):     # one verdict each, on the hand-made truth
        verdicts = [line for line in printed.splitlines() if line.startswith("easy, hand-made truth: ")
                    and f" {what} >= 80%" in line]
        assert len(verdicts) == 1 and ("cheapest design" in verdicts[0] or "no design reaches" in verdicts[0])
