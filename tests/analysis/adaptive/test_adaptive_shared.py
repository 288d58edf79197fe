"""The adaptive sweep's shared model (`sweep.bands: shared`) and its prior of truths
(`adaptive.strata`): the regret verdict on hand-built draws, the greedy stop that never stops
two tied runs, the insurance run, and the strata the benchmark and `plan` draw from."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.adaptive.draws import Horizon
from isocompute.analysis.adaptive.replay import replay, with_grid_band
from isocompute.analysis.adaptive.shared import (Ensemble, TrendDraws, chance_to_matter, shared_verdicts,
                                                 trend_ensemble)
from isocompute.analysis.adaptive.strata import B_PS, C_MAX, NS, STRATA, draw_truth, lead_doublings
from isocompute.analysis.fits.fitter import fit_study
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
from isocompute.schedule import compute_schedule_steps
from isocompute.sweep import SweepSettings

GRID = np.geomspace(C_MAX / 8, C_MAX, 4)


def _ensemble(levels, *, reached=C_MAX / 8, active=None, spread=0.0, draws=400, seed=0):
    """Runs with flat curves at `levels` (one per run) plus independent Gaussian draw noise `spread`."""
    rng = np.random.default_rng(seed)
    levels = np.asarray(levels, dtype=float)
    curves = levels[None, :, None] + spread * rng.standard_normal((draws, levels.size, 1)) + 0 * GRID
    n = 8.0 * 2 ** np.arange(levels.size)
    active = np.ones(levels.size, dtype=bool) if active is None else np.asarray(active)
    return Ensemble(n=n, reached=np.full(levels.size, reached), active=active, grid=GRID, curves=curves)


def test_a_run_matters_only_when_it_beats_every_rival_by_more_than_epsilon():
    ens = _ensemble([0.60, 0.605, 0.70])
    rivals = np.ones(3, dtype=bool)
    assert chance_to_matter(ens, 2, rivals, 0.01) == 1.0         # the leader, far ahead
    assert chance_to_matter(ens, 0, rivals, 0.01) == 0.0         # behind
    two = _ensemble([0.60, 0.605])
    assert chance_to_matter(two, 1, np.ones(2, dtype=bool), 0.01) == 0.0    # ahead by less than epsilon
    assert chance_to_matter(two, 1, np.ones(2, dtype=bool), 0.001) == 1.0   # by more than a smaller one
    assert chance_to_matter(two, 1, np.array([False, True]), 0.01) == 1.0   # no rival left: it matters
    done = _ensemble([0.9, 0.6], reached=C_MAX)
    assert chance_to_matter(done, 0, np.ones(2, dtype=bool), 0.01) == 0.0   # nothing ahead of it


def test_two_tied_runs_are_never_both_stopped():
    ens = _ensemble([0.70, 0.70, 0.50], spread=0.002)
    stop, p, _ = shared_verdicts(ens, epsilon=0.01, floor=0.006, judged=np.ones(3, dtype=bool), c_max=C_MAX,
                                 insurance=0.0)
    assert stop[2] and stop[:2].sum() == 1                        # one of the tied pair goes on, the laggard stops
    assert np.isfinite(p).all()


@pytest.mark.parametrize("levels", [[0.716, 0.708, 0.700], [0.721, 0.716, 0.708, 0.700]],
                         ids=["three", "four"])
def test_regret_does_not_chain(levels):
    """Each run within epsilon (0.01) of the next, the best first in n: stopping one because the next
    stays within epsilon, then that one because a third does, left the last run alone, 0.016 (three
    runs) or 0.021 (four) below the best. A run stops only if a run that finally goes on stays within
    epsilon of it: the best goes on, every stopped run within epsilon of it."""
    ens = _ensemble(levels, spread=0.0005)
    stop, p, _ = shared_verdicts(ens, epsilon=0.01, floor=0.006, judged=np.ones(len(levels), dtype=bool),
                                 c_max=C_MAX, insurance=0.0)
    going = np.asarray(levels)[~stop]
    assert going.size and not stop[0], (stop, p)                  # the best goes on
    assert max(levels) - going.max() <= 0.01
    assert (np.asarray(levels)[stop] <= going.max() + 0.01).all()
    assert stop.sum() == len(levels) - 1                          # and the rest stop: each is within epsilon of it


def test_ties_stop_the_run_predicted_lower_first_not_the_smaller_n():
    """Two runs the draws cannot tell apart within epsilon: the one predicted lower stops, whichever
    its n (the order of n broke the tie before)."""
    for levels in ([0.700, 0.705], [0.705, 0.700]):
        ens = _ensemble(levels, spread=0.0005)
        stop, _, _ = shared_verdicts(ens, epsilon=0.01, floor=0.006, judged=np.ones(2, dtype=bool), c_max=C_MAX,
                                     insurance=0.0)
        assert stop.tolist() == [levels[0] < levels[1], levels[1] < levels[0]], (levels, stop)


def test_the_insurance_run_trains_to_its_share_of_c_max():
    ens = _ensemble([0.70, 0.70, 0.50], spread=0.002)
    stop, _, _ = shared_verdicts(ens, epsilon=0.01, floor=0.006, judged=np.ones(3, dtype=bool), c_max=C_MAX,
                                 insurance=0.5)
    assert not stop[2]                                            # the largest n, behind, still insured
    late = ens._replace(reached=np.full(3, C_MAX / 2))
    stop, _, _ = shared_verdicts(late, epsilon=0.01, floor=0.006, judged=np.ones(3, dtype=bool), c_max=C_MAX,
                                 insurance=0.5)
    assert stop[2]


def test_unjudged_runs_go_on_and_stopped_runs_get_a_revival_chance():
    ens = _ensemble([0.70, 0.50, 0.80], active=[True, True, False])
    stop, p, revive = shared_verdicts(ens, epsilon=0.01, floor=0.006, judged=np.array([True, False, False]),
                                      c_max=C_MAX, insurance=0.0)
    assert not stop.any()                                         # the laggard is not judged; run 0 leads
    assert np.isnan(p[2]) and np.isnan(revive[:2]).all() and revive[2] == 1.0   # the stopped run would lead


@pytest.fixture(scope="module")
def crossover():
    truth = draw_truth("mid", 1000)
    steps = lambda B, M: compute_schedule_steps(B, M, 41, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    evals = synthetic_study(B_PS, NS, c_max=C_MAX, eval_steps=steps, reward=truth.reward,
                            noise=EvalNoise(sd=0.013, seed=5))
    return truth, evals


def test_the_trend_ensemble_follows_the_truth_and_is_seeded(crossover):
    truth, evals = crossover
    rung = C_MAX / 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        seen, fits, _ = fit_study(evals[evals["compute"] <= rung], AnalysisSettings())
    s = AnalysisSettings()
    how = TrendDraws("avg@4", s.pool_degree, s.pool_alpha, draws=500, inflation=2.0)
    make = lambda: trend_ensemble(seen, fits, 32, Horizon(rung, C_MAX, 4), how, np.random.default_rng(1))  # noqa: E731
    ens, again = make(), make()
    assert ens is not None and np.array_equal(ens.curves, again.curves)
    lo, hi = np.percentile(ens.curves[:, :, -1], [0.5, 99.5], axis=0)
    true = np.array([truth.reward(32, int(n), C_MAX) for n in ens.n]).ravel()
    slack = SweepSettings().epsilon / 2   # under the rule's epsilon: a band this far off would mislead it
    assert ((true >= lo - slack) & (true <= hi + slack)).all(), (true, lo, hi)
    rejected = fits.assign(pool_p=0.0)                            # the F-test rejects the trend: no model
    assert trend_ensemble(seen, rejected, 32, Horizon(rung, C_MAX, 4), how, np.random.default_rng(1)) is None


def test_shared_replay_is_right_by_regret_and_spends_less_than_the_grid(crossover):
    truth, evals = crossover
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = replay(evals, c_max=C_MAX, probes=12, eval_rollouts=1200)
    pr = res["probes"]
    regret = [truth.best(b, NS, c)[()] - truth.reward(b, int(n), c)[()]
              for b, n, c in zip(pr["B_p"], pr["n_star_adaptive"], pr["compute"])]
    assert res["share"] < 0.8 and max(regret) <= 0.01 + 1e-9
    assert 0.9 <= res["right_by_regret"] <= 1 and np.isnan(res["in_band"])
    assert (pr["regret"] >= 0).all()


@pytest.mark.parametrize("stratum", STRATA)
def test_each_stratum_draws_its_shape(stratum):
    truth = draw_truth(stratum, 3)
    assert truth.stratum == stratum and truth == draw_truth(stratum, 3)       # seeded
    lam = min(lead_doublings(truth, b, NS, C_MAX) for b in B_PS)
    at_max = {b: np.array([truth.reward(b, n, C_MAX)[()] for n in NS]) for b in B_PS}
    if stratum in ("early", "mid", "late"):
        assert {"early": lam >= 5, "mid": 2 <= lam < 5, "late": lam < 2}[stratum]
        assert all(np.argmax(r) > 0 for r in at_max.values())             # a larger n overtook the smallest
    if stratum == "null":
        assert all(np.ptp(r) == 0 for r in at_max.values())
    if stratum in ("b_varies", "correlated", "late_rise", "curved", "hard"):     # out of model, crossed
        assert all(np.argmax(r) > 0 for r in at_max.values())
    if stratum == "b_varies":
        assert len({truth.params[(B_PS[0], n)]["B"] for n in NS}) == len(NS)       # B differs with n
    if stratum == "falling":                           # n* at C_max below n* 10 doublings earlier
        early = {b: np.argmax([truth.reward(b, n, C_MAX / 2 ** 10) for n in NS]) for b in B_PS}
        assert all(np.argmax(at_max[b]) < early[b] for b in B_PS)
    if stratum == "late_rise":
        a2 = [truth.second[(B_PS[0], n)][0] for n in NS]
        assert a2[0] == 0 and np.all(np.diff(a2) > 0) and 0.03 <= a2[-1] <= 0.1
    if stratum == "correlated":
        assert 0.01 <= truth.noise["run_sd"] <= 0.02 and 0.01 <= truth.noise["wiggle_sd"] <= 0.02
    if stratum == "hard":
        assert all(0.01 <= p["R0"] <= 0.1 for p in truth.params.values()) and truth.noise == {"binomial": True}
        assert all(truth.rise(b, NS, C_MAX) < 0.12 for b in B_PS)
    if stratum == "unstable":
        assert truth.collapse and len({b for b, _ in truth.collapse}) == 1
        (b, n), (start, drop) = next(iter(truth.collapse.items()))
        params = truth.params[(b, n)]
        from isocompute.analysis.fits.sigmoid import sigmoid_reward
        clean = sigmoid_reward(2 * start, params["R0"], params["A"], params["B"], params["C_mid"])
        assert truth.reward(b, n, 2 * start) == pytest.approx(clean - drop)
        # worth is the best checkpoint so far: above the collapsed reward, and what it was before
        fine = np.geomspace(C_MAX / 2 ** 24, 2 * start, 20_001)
        assert truth.value(b, n, 2 * start) == pytest.approx(truth.reward(b, n, fine).max(), abs=1e-4)
        assert truth.value(b, n, 2 * start) > truth.reward(b, n, 2 * start) + 0.5 * drop
        assert np.array_equal(truth.value(b, n, fine), np.maximum.accumulate(truth.value(b, n, fine)))
    else:                                               # curves that only rise: worth is the reward
        grid = np.geomspace(C_MAX / 2 ** 10, C_MAX, 33)
        assert all(np.array_equal(truth.value(b, n, grid), truth.reward(b, n, grid)) for b in B_PS for n in NS)
    with pytest.raises(ValueError, match="unknown stratum"):
        draw_truth("sideways", 0)


def test_replay_reports_the_grid_band_when_asked(crossover):
    _, evals = crossover
    one = evals[evals["B_p"] == 32]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = with_grid_band(replay(one, c_max=C_MAX, probes=6), one, 20)
    pr = res["probes"]
    assert {"n_star_lo", "n_star_hi", "in_band"} <= set(pr.columns)
    assert (pr["n_star_lo"] <= pr["n_star_hi"]).all() and 0 <= res["in_band"] <= 1
    assert isinstance(pd.Series(pr["in_band"]).iloc[0], (bool, np.bool_))


def test_a_run_trained_to_the_rung_is_a_rival_though_its_last_evaluation_is_below_it(crossover):
    """At 4 evaluations per doubling rounded to whole steps, B_p 32's n = 8 and 512 have their last
    evaluation a quarter doubling below the rung C_max / 2^1.5. Told they trained to the rung (as
    the replay and the pipeline tell it), the model counts them: n = 512 is a rival of n = 128,
    whose chance to matter falls from 1, and n = 8 is judged, not taken for a run stopped earlier."""
    from isocompute.analysis.adaptive.rule import decide

    _, evals = crossover
    rung = C_MAX / 2 ** 1.5
    last = evals[evals["compute"] <= rung * (1 + 1e-9)].groupby(["B_p", "n"])["compute"].max()
    short = [(b, n) for (b, n), c in last.items() if c + b * n <= rung * (1 - 1e-9)]
    assert (32, 8) in short and (32, 512) in short
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        guessed = decide(evals, rung_compute=rung, c_max=C_MAX).set_index(["B_p", "n"])
        told = decide(evals, rung_compute=rung, c_max=C_MAX, trained=list(last.index)).set_index(["B_p", "n"])
    assert guessed.loc[(32, 128), "p_n_star"] == 1.0 and told.loc[(32, 128), "p_n_star"] < 0.5
    for key in [(32, 8), (32, 512)]:
        assert guessed.loc[key, "reason"] == "stopped at an earlier rung"
        assert told.loc[key, "reason"] != "stopped at an earlier rung"


def test_the_straight_trend_takes_the_draws_the_data_do_not_need_a_curvature_for():
    """`lower_degree_weight`: the BIC posterior of the trend one degree lower. Equal fits: the
    curvature's two parameters are not worth their 2 ln N, the straight trend weighs N / (N + 1);
    a curvature that lowers the SSE by far more than 2 ln N takes (almost) all the weight; the
    weight falls as the gain grows; no lower fit, no weight."""
    from isocompute.analysis.adaptive.shared import lower_degree_weight

    trend = {"sse": 100.0, "n_points": 200}
    weight = lambda gain: lower_degree_weight(trend, {"sse": 100.0 + gain}, 2)  # noqa: E731
    assert weight(0.0) == pytest.approx(200 / 201)
    assert weight(60.0) < 1e-5
    assert weight(0.0) > weight(10.0) > weight(2 * np.log(200)) > weight(20.0)
    assert weight(2 * np.log(200)) == pytest.approx(0.5)
    assert lower_degree_weight(trend, None, 2) == 0.0
    badly = {"sse": 400.0, "n_points": 200}            # reduced chi-square 400 / 193: a gain counts that much less
    assert lower_degree_weight(badly, {"sse": 400.0 + 2 * np.log(200) * 400 / 193}, 2) == pytest.approx(0.5)


def test_a_runs_evaluations_share_errors_when_the_truth_says_so():
    from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study

    steps = lambda B, M: np.unique(np.geomspace(1, M, 60).astype(int))  # noqa: E731
    flat = lambda B_p, n, c: np.full(np.shape(c), 0.5)                    # noqa: E731
    ns = tuple(2 ** k for k in range(3, 10))

    def residuals(noise):
        e = synthetic_study((16, 32, 64, 128), ns, c_max=2.0 ** 22, eval_steps=steps, reward=flat, noise=noise)
        e = e[e["compute"] > 0]
        return [g["avg@4"].to_numpy() - 0.5 for _, g in e.groupby(["B_p", "n"])]

    plain = residuals(EvalNoise(sd=0.01, seed=1))
    shared = residuals(EvalNoise(sd=0.01, seed=1, run_sd=0.02, wiggle_sd=0.015, wiggle_doublings=2.0))
    lag1 = lambda rs: np.mean([np.corrcoef(r[:-1] - r.mean(), r[1:] - r.mean())[0, 1] for r in rs])  # noqa: E731
    assert abs(lag1(plain)) < 0.1 and lag1(shared) > 0.4               # the wiggle correlates neighbours
    assert np.std([r.mean() for r in plain]) < 0.005 < np.std([r.mean() for r in shared])   # the run's offset
    hard = residuals(EvalNoise(sd=0.02, seed=1, binomial_like=True))   # sd x sqrt(r (1 - r)) / 0.5: 0.02 at r = 0.5
    assert np.std(np.concatenate(hard)) == pytest.approx(0.02, rel=0.1)


def test_epsilon_is_a_share_of_the_rise_or_a_reward():
    from isocompute.sweep import SweepSettings

    assert SweepSettings().epsilon_of == "rise" and SweepSettings().regret(0.2) == pytest.approx(0.05 * 0.2)
    assert SweepSettings(epsilon=0.01, epsilon_of="reward").regret(0.002) == 0.01
    assert SweepSettings().regret(-0.1) == 0.0 and np.isnan(SweepSettings().regret(float("nan")))
    truth = draw_truth("hard", 0)                     # a Hard-like split: its regret scales with its rise
    assert SweepSettings().regret(truth.rise(16, NS, C_MAX)) < 0.004


def test_decision_calibration_counts_a_stop_the_truth_needed():
    from isocompute.analysis.adaptive.scoring import decision_calibration
    from isocompute.sweep import SweepSettings

    truth = draw_truth("early", 0)
    at = {n: float(truth.value(16, n, C_MAX)) for n in NS}
    best, worst = max(at, key=at.get), min(at, key=at.get)
    decision = pd.DataFrame({"B_p": [16, 16], "n": [best, worst], "continue": [False, False],
                             "reason": ["shared model: ...", "shared model: ..."]})
    log = [{"rung": C_MAX / 4, "next": C_MAX / 2, "decision": decision, "going": {(16, worst)} | {(32, best)}}]
    bad, stops = decision_calibration(truth, log, SweepSettings())
    assert (bad, stops) == (1, 2)                     # stopping the best against the worst was needed; not the worst
    decision["reason"] = ["band cannot reach the frontier", "shared model: ..."]
    assert decision_calibration(truth, log, SweepSettings()) == (0, 1)   # only the model's stops are judged


def test_the_truth_bootstrap_keeps_a_truths_noise_seeds_together():
    from isocompute.analysis.adaptive.intervals import truth_bootstrap

    # 10 truths x 2 noise seeds; truth 0 wrong at every probe of both seeds, the others never
    g = pd.DataFrame({"truth": np.repeat(np.arange(10), 2), "wrong": np.r_[[10, 10], np.zeros(18)],
                      "probes": 10})
    (lo, hi), = truth_bootstrap(g, ["wrong"], ["probes"], resamples=4000)
    assert lo == 0 and 0.25 <= hi <= 0.35            # a truth is one draw: up to ~3 of 10 resampled


def test_the_relative_bar_is_read_with_its_error_rate():
    """`intervals.gap_bar`: a stratum whose sweep is wrong exactly where the grid is never fails; one whose
    paired differences are noisy fails the '+1 point' bar in a share of resampled holdouts though its true
    gap is 0; a stratum consistently 5 points worse has a small p against 'at most 1 point'."""
    from isocompute.analysis.adaptive.intervals import gap_bar

    rng = np.random.default_rng(1)
    truth = np.repeat(np.arange(50), 2)
    same = pd.DataFrame({"stratum": "same", "truth": truth, "noise_seed": np.tile([0, 1], 50),
                         "wrong_acting": 2, "grid_wrong_acting": 2, "acting_probes": 20})
    noisy = same.assign(stratum="noisy", wrong_acting=rng.integers(0, 5, 100), grid_wrong_acting=rng.integers(0, 5, 100))
    worse = same.assign(stratum="worse", wrong_acting=3)                   # +1 of 20 probes: +5 points
    table, fails = gap_bar(pd.concat([same, noisy]), true_gaps=(0.0,))
    assert table.set_index("stratum").loc["same", "gap"] == 0 and 0.05 < fails[0.0] < 0.6
    assert gap_bar(same, true_gaps=(0.0,))[1][0.0] == 0.0
    assert gap_bar(worse)[0]["p_over"].iloc[0] < 0.01


def test_the_sweep_is_judged_against_the_grid_on_the_same_probes():
    """`scoring.summary`'s over_grid: the sweep's wrong rate less the grid's, paired by study; where
    the sweep is wrong exactly where the grid is, the difference is 0 with no spread, however much
    either rate varies between truths."""
    from isocompute.analysis.adaptive.scoring import summary

    rng = np.random.default_rng(0)
    wrong = rng.integers(0, 5, 20)
    base = {"stratum": "mid", "truth": np.repeat(np.arange(10), 2), "bill": 0.5, "oracle": 0.15, "probes": 20,
            "acting_probes": 10, "wrong": wrong, "wrong_acting": wrong, "cmax_probes": 1, "wrong_cmax": 0,
            "grid_wrong_cmax": 0, "wrong_now": wrong, "wrong_now_full": wrong, "model_stops": 3, "bad_stops": 0,
            "outside_band": np.nan, "same_n_star": 1.0, "revivals": 0, "sweep_only": 0,
            "sweep_only_before_stops": 0, "sweep_only_full_pick": 0, "grid_only": 0}
    same = summary(pd.DataFrame({**base, "grid_wrong_acting": wrong}), resamples=500).iloc[0]
    assert same["over_grid"] == 0 and same["over_grid_lo"] == 0 and same["over_grid_hi"] == 0
    assert same["wrong_hi"] > same["wrong_lo"]
    one_more = summary(pd.DataFrame({**base, "grid_wrong_acting": np.maximum(wrong - 1, 0)}), resamples=500).iloc[0]
    assert 0 < one_more["over_grid_lo"] <= one_more["over_grid"] <= one_more["over_grid_hi"] <= 0.1


def test_the_probes_where_only_the_sweep_is_wrong_are_split_by_the_first_stop():
    """judge's sweep_only (wrong where the grid is right) less grid_only is the paired difference;
    sweep_only_before_stops counts those at compute below the B_p's first stop, where no decision
    of the sweep's was yet taken and only the stopped runs' shorter data (their fits) differ from
    the grid's. Hard truth 1019: the sweep names n = 256 or 512 at 2^17-2^19 on B_p 16, where the
    grid's fits of the full runs name the right n = 128, which the sweep stopped at 2^20."""
    from isocompute.analysis.adaptive.scoring import first_stops, judge

    row = judge(("hard", 1019, 0, {}, 0, False))
    assert row["sweep_only"] - row["grid_only"] == row["wrong_acting"] - row["grid_wrong_acting"]
    assert row["sweep_only"] >= row["sweep_only_before_stops"] >= 1
    assert row["sweep_only"] >= row["sweep_only_full_pick"] >= 1
    decision = pd.DataFrame({"B_p": [16, 16, 32], "n": [8, 16, 8], "continue": [True, False, True]})
    later = decision.assign(**{"continue": [False, False, False]})
    assert first_stops([{"rung": 2.0 ** 20, "decision": decision},
                        {"rung": 2.0 ** 21, "decision": later}]) == {16: 2.0 ** 20, 32: 2.0 ** 21}


def test_the_runs_spread_is_what_their_evaluations_noise_does_not_explain():
    from isocompute.analysis.adaptive.draws import run_spread
    from isocompute.analysis.adaptive.rule import rule_settings
    from isocompute.analysis.adaptive.scoring import study
    from isocompute.analysis.fits.noise import cell_arrays
    from isocompute.analysis.fits.pooled import fit_trend
    from isocompute.sweep import SweepSettings

    s = rule_settings(None, SweepSettings(), C_MAX)

    def spread(stratum, seed):
        evals = study(draw_truth(stratum, seed), seed, 0)
        seen, fits, _ = fit_study(evals[evals["compute"] <= C_MAX / 4], s)
        g = fits[(fits["B_p"] == 16) & (fits["status"] == "ok")].sort_values("n")
        cells = dict(iter(seen.groupby(["B_p", "n"], sort=False)))
        points = [{"n": float(n), **cell_arrays(cells[(16, n)], s.metric)} for n in g["n"]]
        return run_spread(fit_trend(points, float(g["R0"].iloc[0]), g[["n", "A", "B", "C_mid"]], degree=2), 2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert spread("null", 1000) < 0.003                 # independent errors, runs on the trend: none
        truth = draw_truth("correlated", 1003)               # run-level deviations of sd ~0.015
        assert 0.4 * truth.noise["run_sd"] < spread("correlated", 1003) < 3 * truth.noise["run_sd"]
    assert run_spread({"jac": np.eye(3), "sse": 3.0}, 2) == 0.0          # no residuals by run: none


def test_the_slope_in_b_takes_the_draws_where_b_differs_with_n_and_few_where_it_does_not():
    """`model_weights` (sweep.b_slope): without the slope fit, the lower trend's weight is
    `lower_degree_weight`'s; a slope that lowers the SSE by far more than ln N takes the draws,
    one that lowers it by nothing weighs about 1 / sqrt(N) of the trend's; the weights sum to at
    most 1."""
    from isocompute.analysis.adaptive.shared import lower_degree_weight, model_weights

    trend, lower = {"sse": 100.0, "n_points": 200}, {"sse": 160.0}
    assert model_weights(trend, 2, lower, None) == (lower_degree_weight(trend, lower, 2), 0.0)
    w_lower, w_slope = model_weights(trend, 2, lower, {"sse": 100.0})
    assert w_slope == pytest.approx(1 / (1 + np.sqrt(200)), rel=1e-3) and w_lower < 1e-5
    w_lower, w_slope = model_weights(trend, 2, lower, {"sse": 60.0})
    assert w_slope > 0.999 and w_lower + w_slope <= 1.0


def test_a_trend_with_b_varying_in_n_is_fitted_drawn_and_followed_by_the_ensemble():
    """A b_varies truth (B x 2^(beta log2 n / n0)): the slope fit recovers beta, its draws give the
    runs their own B, and with sweep.b_slope the ensemble's median curves at C_max sit nearer the
    truth than the constant-B trend's where the data end two doublings short of it."""
    from isocompute.analysis.adaptive.draws import draw_trend_curves
    from isocompute.analysis.fits.noise import cell_arrays
    from isocompute.analysis.fits.pooled import fit_trend, trend_params

    truth = draw_truth("b_varies", 1003)
    beta = np.log2(truth.params[(16, 512)]["B"] / truth.params[(16, 8)]["B"]) / np.log2(512 / 8)
    steps = lambda B, M: compute_schedule_steps(B, M, 41, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    evals = synthetic_study(B_PS, NS, c_max=C_MAX, eval_steps=steps, reward=truth.reward,
                            noise=EvalNoise(sd=0.005, seed=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        seen, fits, _ = fit_study(evals, AnalysisSettings())
    group = fits[fits["B_p"] == 16].sort_values("n")
    cells = dict(iter(seen.groupby(["B_p", "n"], sort=False)))
    points = [{"n": float(n), **cell_arrays(cells[(16, n)], "avg@4")} for n in group["n"]]
    init = group[["n", "A", "B", "C_mid"]]
    R0 = float(group["R0"].iloc[0])
    slope = fit_trend(points, R0, init, degree=2, b_slope=True)
    flat = fit_trend(points, R0, init, degree=2)
    assert slope["b_slope"] and not flat["b_slope"] and slope["sse"] < flat["sse"]
    assert slope["theta"][1] == pytest.approx(beta, abs=0.05)
    B = trend_params(slope, group["n"], 2)["B"]
    assert np.all(np.diff(B) * np.sign(beta) > 0)
    curves, (_, _, B_drawn) = draw_trend_curves(slope, group["n"].to_numpy(float), R0, GRID, np.random.default_rng(0),
                                                draws=50)
    assert curves.shape == (50, 7, GRID.size) and B_drawn.shape == (50, 7, 1)
    with pytest.raises(ValueError, match="b_slope needs degree >= 1"):
        fit_trend(points, R0, init, degree=0, b_slope=True)

    rung = C_MAX / 4            # the study's noise (sd 0.013): the F-test keeps the one-B trend on B_p 32
    evals = synthetic_study(B_PS, NS, c_max=C_MAX, eval_steps=steps, reward=truth.reward,
                            noise=EvalNoise(sd=0.013, seed=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        seen, fits, _ = fit_study(evals[evals["compute"] <= rung], AnalysisSettings())
    s = AnalysisSettings()
    true = np.array([truth.reward(32, int(n), C_MAX) for n in NS]).ravel()
    miss = {}
    for on in (False, True):
        how = TrendDraws("avg@4", s.pool_degree, s.pool_alpha, draws=400, inflation=1.0, b_slope=on)
        ens = trend_ensemble(seen, fits, 32, Horizon(rung, C_MAX, 4), how, np.random.default_rng(1))
        miss[on] = np.abs(np.median(ens.curves[:, :, -1], axis=0) - true).max()
    assert miss[True] < 0.7 * miss[False], miss        # 0.008 against 0.015
