"""Assurance (isocompute.design.assurance): each simulated study draws its truth from one bootstrap
replicate of the pilot, so a replicate in which larger n never overtakes is a truth with no rise;
the run-to-run sd is measured between a pilot's seeds; designs are read from their text; costs
come from plan's cost model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.config import check_config
from isocompute.design.assurance import design_costs, design_of, replication, simulate_study
from isocompute.design.pilot import RUN_SD_PRIOR, n_effect, pilot_from_tables, run_to_run_sd
from isocompute.design.reliability import PILOT, known_truth
from isocompute.design.power import Design, simulate
from isocompute.design.truth import overtake
from isocompute.errors import InputError

NS = (2, 4, 8)


def _fits(A, replicate=None) -> pd.DataFrame:
    rows = [{"B_p": 8, "n": n, "R0": 0.40, "A": a, "B": 1.2, "C_mid": 600.0 * (n / 2) ** 1.5, "status": "ok",
             "compute_min": 16.0 * n, "compute_max": 2.0 ** 15, "n_evals": 40} for n, a in zip(NS, A)]
    frame = pd.DataFrame(rows)
    return frame if replicate is None else frame.assign(replicate=replicate)


RISING, NEVER = (0.50, 0.65, 0.80), (0.66, 0.63, 0.60)   # larger n: higher, later / never ahead


@pytest.fixture(scope="module")
def pilot():
    boot = pd.concat([_fits(RISING, 0), _fits(NEVER, 1)], ignore_index=True)
    return pilot_from_tables(_fits(RISING), boot, None, split="easy", source="hand-made", run_sd=0.0)


def test_each_replicate_is_a_truth_of_its_own(pilot):
    rising, never = pilot.replicates
    assert overtake(rising.params(8, 4), rising.params(8, 8)) < 2.0 ** 15
    assert overtake(never.params(8, 4), never.params(8, 8)) == np.inf


def test_assurance_draws_its_truths_from_the_replicates_in_turn(pilot):
    d = Design("strong", B_p=(8,), n=NS, c_max=2.0 ** 15, problems=400, per_doubling=4)
    settings = AnalysisSettings(bootstrap=20)
    rows = [replication(d, pilot, "assurance", i, settings) for i in range(2)]
    assert [r["truth"].endswith(f"replicate {i}") for i, r in enumerate(rows)] == [True, True]
    # The rising replicate has a rise to find, and the study finds it; the other has none, and none is claimed.
    assert rows[0]["truth_rises"] == 1.0 and rows[0]["rises"] == 1.0
    assert rows[1]["truth_rises"] == 0.0 and rows[1]["rises"] == 0.0
    null = replication(d, pilot, "fitted_null", 0, settings)
    assert null["truth"] == "hand-made/fits.csv" and "truth_rises" not in null


def test_run_to_run_sd_is_measured_between_seeds_and_a_prior_without_them():
    d = Design("seeds", B_p=(8,), n=NS, c_max=2.0 ** 13, problems=200, seeds=2)
    ratios = []
    for seed in range(6):                 # the same truth for both seeds: only evaluation noise between them
        sd, pairs = run_to_run_sd(simulate(d, "rise", seed))
        assert pairs > 20
        ratios.append(sd)
    assert np.median(ratios) < 0.015      # the evaluation sd is 0.017: what is left is small
    one = simulate(Design("one", B_p=(8,), n=NS, c_max=2.0 ** 13), "rise", 0)
    assert run_to_run_sd(one) is None
    boot = pd.concat([_fits(RISING, 0), _fits(NEVER, 1)], ignore_index=True)
    pilot = pilot_from_tables(_fits(RISING), boot, one, split="easy", source="x")
    assert pilot.run_sd == RUN_SD_PRIOR and "prior" in pilot.run_sd_from


def test_the_run_level_test_that_n_matters_holds_its_level_on_null_truths_and_finds_a_clear_effect():
    # Null truths (every n on one curve). A test that took each evaluation of the upper half as a unit calls
    # a run's own deviation an effect of n: on these 100 truths it rejected at 0.05 in 17% (run sd 0.015)
    # and 49% (0.04). With seeds as the error, about 5% (7.0% and 5.0% on 2 x 200 more, their own sd).
    for run_sd in (None, 0.04):
        ps = []
        for seed in range(30000, 30100):
            params, own_sd, _ = known_truth("null", seed, PILOT)
            ps.append(n_effect(simulate_study(PILOT, params, seed, own_sd if run_sd is None else run_sd))[0])
        assert np.mean(np.array(ps) < 0.05) <= 0.12      # P(> 12 of 100 | 5%) ~ 0.002
        assert 0.3 < np.median(ps) < 0.7                 # about uniform
    # Larger n well ahead at every compute the pilot reaches, runs deviating by 0.01: found.
    d = Design("seeds", B_p=(8,), n=NS, c_max=2.0 ** 13, problems=200, seeds=2)
    ahead = lambda B_p, n: {"R0": 0.3, "A": 0.5 + 0.1 * np.log2(n), "B": 1.5, "C_mid": 300.0}  # noqa: E731
    study = simulate_study(d, ahead, 1, 0.01)
    assert n_effect(study)[0] < 0.001
    study.loc[study.index[-1], "avg@4"] = np.nan                 # an evaluation that failed: left out, not poison
    assert n_effect(study)[0] < 0.01                             # (its run's range now ends one evaluation early)
    assert n_effect(simulate(Design("one", B_p=(8,), n=NS, c_max=2.0 ** 13), "rise", 0)) is None


def test_a_pilot_with_too_few_runs_in_a_b_p_is_refused():
    fits = _fits(RISING).iloc[:2]
    with pytest.raises(InputError, match="fewer than 3 usable runs in B_p 8"):
        pilot_from_tables(fits, _fits(RISING, 0), None, split="easy", source="x")


def test_designs_are_read_from_their_text():
    base = Design("pilot", split="easy", B_p=(8,), n=NS, c_max=2.0 ** 13, problems=100)
    assert design_of("pilot", base) is base
    d = design_of("B_p=4,16 n=2-32 C=2^18 val=400 dbl=4 seeds=2", base)
    assert (d.B_p, d.n, d.c_max, d.problems, d.per_doubling, d.seeds) == ((4, 16), (2, 4, 8, 16, 32), 2.0 ** 18,
                                                                          400, 4, 2)
    assert design_of("E17", base).c_max == 2.0 ** 20
    for bad in ("E99", "C=big", "colour=red"):
        with pytest.raises(InputError, match="--designs"):
            design_of(bad, base)


def test_costs_come_from_plans_model():
    d = Design("x", B_p=(16,), n=(2, 4, 8, 16), c_max=2.0 ** 20, problems=400, per_doubling=4)
    local = design_costs(d)
    assert local["cost_unit"] == "CPU-h" and local["jobs"] == 4 and local["cost"] > 0
    gpu = design_costs(d, check_config({}))
    assert gpu["cost_unit"] == "GPU-h" and gpu["jobs"] == 4 and gpu["cost"] > 0
    assert design_costs(design_of("C=2^21", d), check_config({}))["cost"] > gpu["cost"]
