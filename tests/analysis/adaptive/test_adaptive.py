"""The adaptive sweep's rule (issue 13): rungs, the pure pruning decision on
hand-built bands, `decide` on a synthetic study with known curves, the offline
replay and `isocompute replay-adaptive`."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.adaptive.draws import Horizon, trained_to_rung
from isocompute.analysis.adaptive.pooled import apply_pooled, pooled_chances
from isocompute.analysis.adaptive.replay import replay
from isocompute.analysis.adaptive.rule import apply_revival, decide, prune
from isocompute.analysis.adaptive.strategies import BANDS
from isocompute.analysis.fits.synthetic import EvalNoise, crossover_params, synthetic_study
from isocompute.cli import main
from isocompute.schedule import compute_schedule_steps
from isocompute.sweep import SweepSettings

C_MAX = 2.0 ** 22


def test_rung_budgets_end_at_c_max():
    assert SweepSettings(eta=2, rungs=4).budgets(1024.0) == [128.0, 256.0, 512.0, 1024.0]
    assert SweepSettings(eta=4, rungs=1).budgets(1024.0) == [1024.0]
    with pytest.raises(ValueError, match="eta"):
        SweepSettings(eta=1.0, rungs=3)
    with pytest.raises(ValueError, match="rungs"):
        SweepSettings(eta=2, rungs=0)
    with pytest.raises(ValueError, match="below one rollout"):
        SweepSettings(eta=2, rungs=12).budgets(1024.0)


def test_sweep_settings_take_the_schema_defaults():
    p = SweepSettings.of({"z": 3.0})
    assert p.z == 3.0 and p.eta == pytest.approx(2 ** 0.5) and p.frontier == "fixed_B_p"
    assert SweepSettings.of(p) is p and SweepSettings.of(None) == SweepSettings()
    with pytest.raises(ValueError, match="'sweep.zz': not a sweep key"):
        SweepSettings.of({"zz": 1})
    assert p.bands == "shared" and p.mature_width == pytest.approx(0.06) and p.epsilon == pytest.approx(0.05) and p.epsilon_of == "rise"
    with pytest.raises(ValueError, match="'sweep.bands': expected one of"):
        SweepSettings.of({"bands": "trend"})
    with pytest.raises(ValueError, match="'sweep.mature_width': expected a value >= 0"):
        SweepSettings.of({"mature_width": -0.1})
    with pytest.raises(ValueError, match="'sweep.eta': expected number, got float inf"):
        SweepSettings(eta=float("inf"))
    assert list(p.rule()) == [k for k in SweepSettings.__dataclass_fields__ if k != "mode"]


def _decisions(rows):
    """Per-run decisions as `prune` writes them: (n, continue, reason, band width at C_max)."""
    return pd.DataFrame([{"B_p": 32, "n": n, "continue": go, "reason": why, "band_width_at_c_max": width,
                          "p_n_star": np.nan} for n, go, why, width in rows])


def test_apply_pooled_judges_only_runs_whose_own_data_pin_their_future():
    decisions = _decisions([
        (8, True, "band reaches the frontier's lower band at C = 1e6", 0.02),    # narrow, never n*: stops
        (16, True, "band reaches the frontier's lower band at C = 1e6", 0.02),   # narrow, n* in 30%: goes on
        (32, True, "band reaches the frontier's lower band at C = 1e6", 0.20),   # too wide to judge: goes on
        (64, True, "too few evaluations to fit", 0.01),
        (128, False, "reached C_max", 0.01),
    ])
    chances = pd.DataFrame({"B_p": 32, "n": [8, 16, 32, 64, 128], "p_n_star": [0.001, 0.3, 0.0, 0.0, 0.0],
                            "model": "trend"})
    out = apply_pooled(decisions, chances, z=2.5, mature_width=0.06).set_index("n")
    assert not out.loc[8, "continue"] and out.loc[8, "reason"].startswith("pooled trend: n* ahead in 0.1%")
    assert out.loc[16, "continue"] and "30.0%" in out.loc[16, "reason"]
    assert out.loc[32, "continue"] and out.loc[32, "reason"].startswith("band reaches")
    assert out.loc[64, "continue"] and not out.loc[128, "continue"]
    assert list(out["p_n_star"]) == [0.001, 0.3, 0.0, 0.0, 0.0]
    # Without a trend in force (no chances) the per-run decisions stand.
    assert apply_pooled(decisions, chances.iloc[:0], z=2.5, mature_width=0.06).equals(decisions)


def test_the_safety_net_resumes_a_stopped_run_only_on_the_trends_word():
    decisions = _decisions([
        (8, True, "within 0 grid step(s) of n* = 8 at C = 1e6", 0.02),   # stopped earlier, prune would go on
        (16, False, "band below the frontier's lower band up to C_max (by 0.01 at least)", 0.02),  # stopped
        (32, True, "band reaches the frontier's lower band at C = 1e6", 0.02),                  # trained
        (64, False, "band below the frontier's lower band up to C_max (by 0.2 at least)", 0.02),   # trained
    ])
    chances = pd.DataFrame({"B_p": 32, "n": [8, 16, 32, 64], "p_n_star": np.nan,
                            "p_revive": [0.001, 0.2, np.nan, np.nan], "model": "trend"})
    stopped = np.array([True, True, False, False])
    out = apply_revival(decisions, chances, stopped=stopped, z=2.5).set_index("n")
    assert not out.loc[8, "continue"] and out.loc[8, "reason"] == "stopped at an earlier rung"
    assert out.loc[16, "continue"] and out.loc[16, "reason"].startswith("revived: its pooled trend curve is n* "
                                                                         "ahead in 20.0%")
    assert out.loc[32, "continue"] and not out.loc[64, "continue"]          # the trained runs' decisions stand
    # Without the trend's word (revive off, no trend in force) a stopped run stays stopped.
    off = apply_revival(decisions, pd.DataFrame(), stopped=stopped, z=2.5).set_index("n")
    assert not off.loc[[8, 16], "continue"].any() and (off.loc[[8, 16], "reason"] == "stopped at an earlier rung").all()
    # The reason says what the rule in force decided: under the shared model, its regret question.
    z, revived = BANDS.get("shared").revival(SweepSettings())
    shared = apply_revival(decisions, chances, stopped=stopped, z=z, revived=revived).set_index("n")
    assert z == SweepSettings().z / 2 and shared.loc[16, "continue"]
    assert shared.loc[16, "reason"].startswith("revived: the shared model has it beat every run going on by more "
                                               "than 0.05 of the rise somewhere ahead in 20.0% of the draws")
    assert "pooled" not in shared.loc[16, "reason"]


def test_band_strategies_are_registered_by_name():
    """sweep.bands names a registered strategy (shared, the default; runs; pooled, legacy); another
    name is refused naming the key and the registered ones."""
    assert list(BANDS) == ["runs", "shared", "pooled"] and SweepSettings().bands == "shared"
    with pytest.raises(ValueError, match="config key 'sweep.bands': band strategy must be one of runs, shared, pooled"):
        BANDS.get("envelope")
    decisions = _decisions([(8, True, "band reaches the frontier's lower band at C = 1e6", 0.02)])
    out, chances = BANDS.get("runs").judge(decisions, pd.DataFrame(), pd.DataFrame(), Horizon(1.0, 2.0, 4),
                                           params=SweepSettings(), settings=None)
    assert out.equals(decisions) and chances.empty          # runs: the per-run verdicts alone


def test_trained_to_the_rung_is_one_step_short_of_it_or_closer():
    """The one guess of which runs were trained to a rung, where the caller does not know: a run whose
    next step passes the rung (its last evaluation may sit below it on a rounded schedule)."""
    reached = np.array([1000.0, 1000.0, 999.0, 1024.0])
    step = np.array([24.0, 25.0, 24.0, 1.0])
    assert trained_to_rung(reached, step, 1024.0).tolist() == [True, True, False, True]   # 999 + 24 falls short


def _bands(curves: dict, reached: float, compute=(100.0, 200.0, 400.0, 800.0), B_p: int = 1, fitted=None):
    """Hand-built bands: curves[n] = (lo, mid, hi) sequences over `compute`."""
    rows = []
    for n, (lo, mid, hi) in curves.items():
        for c, a, m, b in zip(compute, lo, mid, hi):
            rows.append({"B_p": B_p, "n": n, "compute": c, "reward": m, "reward_lo": a, "reward_hi": b,
                         "reached": reached, "fitted": True if fitted is None else fitted.get(n, True),
                         "n_evals": 50})
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
    return synthetic_study((32,), ns, c_max=C_MAX, eval_steps=steps, noise=EvalNoise(sd=0.013, seed=7))


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


def test_pooled_chances_follow_the_trend_and_are_deterministic(crossover_study):
    from isocompute.analysis.fits.fitter import fit_study
    from isocompute.analysis.fits.settings import AnalysisSettings
    from isocompute.analysis.inputs.check import check_evals

    rung = C_MAX / 4
    seen = check_evals(crossover_study, "avg@4")
    seen = seen[seen["compute"] <= rung]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        seen, fits, _ = fit_study(seen, AnalysisSettings())
        ahead = Horizon(rung, C_MAX, 16)
        first, again = (pooled_chances(seen, fits, ahead, metric="avg@4", degree=2),
                        pooled_chances(seen, fits, ahead, metric="avg@4", degree=2))
    assert (fits["model"] == "trend").all()
    pd.testing.assert_frame_equal(first, again)
    p = first.set_index("n")["p_n_star"]
    # The truth's n* ahead of C_max / 4 is 256 then 512; the plateaued small n are never it.
    assert p[8] == 0 and p[16] == 0 and p[512] > 0.5
    assert ((p >= 0) & (p <= 1)).all()


def test_decide_reports_the_models_chance_only_with_model_bands(crossover_study):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pooled = decide(crossover_study, rung_compute=C_MAX / 4, c_max=C_MAX,
                        params={"bands": "pooled"}).set_index("n")
        shared = decide(crossover_study, rung_compute=C_MAX / 4, c_max=C_MAX).set_index("n")
        runs = decide(crossover_study, rung_compute=C_MAX / 4, c_max=C_MAX, params={"bands": "runs"}).set_index("n")
    assert pooled["p_n_star"].notna().all() and runs["p_n_star"].isna().all()
    # shared: a chance to matter for every run the per-run rule lets go on (the model only adds stops)
    assert shared.loc[runs["continue"], "p_n_star"].notna().all()
    assert not (shared["continue"] & ~runs["continue"]).any()
    assert pooled.loc[512, "continue"] and runs.loc[512, "continue"] and shared.loc[512, "continue"]
    assert pooled["continue"].sum() <= runs["continue"].sum()      # the pooled verdict only ever stops more here


# --- the offline replay and its command -------------------------------------------------

SMALL_NS = (8, 32, 128, 512)


@pytest.fixture(scope="module")
def small_study():
    steps = lambda B, M: compute_schedule_steps(B, M, 161, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    return synthetic_study((32,), SMALL_NS, c_max=C_MAX, eval_steps=steps, noise=EvalNoise(sd=0.013, seed=3))


def test_replay_spends_less_and_finds_the_same_frontier(small_study):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = replay(small_study, probes=12)
    runs = res["runs"].set_index("n")
    assert 0 < res["share"] < 0.75
    assert res["share"] == pytest.approx(runs["spent"].sum() / runs["full_compute"].sum())
    assert runs.loc[512, "spent"] == runs.loc[512, "full_compute"]          # n* at C_max trains all the way
    assert runs.loc[8, "stopped_at"] <= C_MAX / 4                          # plateaued early, stopped early
    assert res["agreement"] >= 0.8 and abs(res["reward_diff"]) <= 0.01
    assert len(res["probes"]) == 12 and res["budgets"][-1] == C_MAX


def test_replay_bills_validation_beside_training(small_study):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = replay(small_study, probes=6, eval_rollouts=1200)
    runs, b = res["runs"], res["bill"]
    assert res["validation_counted"]
    assert list(runs["evaluations_full"]) == list(small_study.groupby("n").size())   # step 0 counts too
    assert (runs["evaluations_spent"] <= runs["evaluations_full"]).all()
    assert (runs["evaluations_spent"] < runs["evaluations_full"]).any()              # a stopped run stops validating
    assert b["grid"]["validation"] == 1200 * len(small_study)
    assert b["adaptive"]["validation"] == 1200 * runs["evaluations_spent"].sum()
    assert res["share"] == pytest.approx((runs["spent"].sum() + b["adaptive"]["validation"])
                                         / (runs["full_compute"].sum() + b["grid"]["validation"]))
    assert res["share_training"] == pytest.approx(runs["spent"].sum() / runs["full_compute"].sum())
    # A table that says what an evaluation costs (problems x samples) is billed from its own columns.
    priced = small_study.assign(problems=300, samples=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        again = replay(priced, probes=6)
    assert again["bill"] == b


def test_replay_with_one_rung_is_the_full_grid(small_study):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = replay(small_study, params={"rungs": 1}, probes=6)
    assert res["share"] == 1.0 and res["agreement"] == 1.0 and res["reward_diff"] == 0.0


def test_replay_command_json(tmp_path, small_study, capsys):
    path = tmp_path / "evals.csv"
    small_study.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["replay-adaptive", str(path), "--json", "--probes", "6", "--eta", "2", "--rungs", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"share", "share_training", "share_validation", "bill", "agreement", "reward_diff", "budgets", "runs",
            "params"} <= set(out)
    assert out["budgets"] == [C_MAX / 8, C_MAX / 4, C_MAX / 2, C_MAX] and len(out["runs"]) == len(SMALL_NS)
    assert not out["validation_counted"] and out["bill"]["grid"]["validation"] == 0


def test_replay_command_prints_both_parts_of_the_bill(tmp_path, small_study, capsys):
    path = tmp_path / "evals.csv"
    small_study.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["replay-adaptive", str(path), "--probes", "4", "--eta", "2", "--rungs", "3"]) == 0
        assert "validation NOT counted" in capsys.readouterr().out
        assert main(["replay-adaptive", str(path), "--probes", "4", "--eta", "2", "--rungs", "3",
                     "--eval-rollouts", "1200"]) == 0
    out = capsys.readouterr().out
    assert "whole bill:" in out and "training rollouts" in out and "validation generations" in out


@pytest.mark.parametrize("args, message", [
    (["--eta", "0"], "--eta: expected a value > 1, got 0"),
    (["--eta", "-2"], "--eta: expected a value > 1, got -2"),
    (["--rungs", "0"], "--rungs: expected a value >= 1, got 0"),
    (["--c-max", "0"], "--c-max: expected a finite positive compute"),
    (["--eval-rollouts", "-1"], "--eval-rollouts: expected a finite number >= 0"),
    (["--eta", "inf"], "--eta: expected number, got float inf (numbers must be finite)"),
    (["--c-max", "inf"], "--c-max: expected a finite positive compute, got inf"),
    (["--rungs", "5000"], "--rungs: expected a value <= 64, got 5000"),
    (["--z", "0"], "--z: expected a value > 0, got 0"),
    (["--neighbours", "-1"], "--neighbours: expected a value >= 0, got -1"),
    (["--rungs", "64", "--eta", "2"], "the first rung, C_max / eta^(rungs - 1)"),
])
def test_replay_command_bad_option_is_one_line(tmp_path, small_study, capsys, args, message):
    path = tmp_path / "evals.csv"
    small_study.head(20).to_csv(path, index=False)
    assert main(["replay-adaptive", str(path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_replay_command_without_training_is_one_line(tmp_path, small_study, capsys):
    path = tmp_path / "base_only.csv"
    small_study[small_study["step"] == 0].to_csv(path, index=False)
    assert main(["replay-adaptive", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no evaluation at a positive compute" in err and "\n" not in err


def test_replay_command_on_a_single_run(tmp_path, capsys):
    # One run without problems columns: at the first rung its standard errors, estimated from the
    # residuals of too few points, are unknown; it is not judged then (no band), not an IndexError.
    path = tmp_path / "one_run.csv"
    steps = lambda B, M: np.unique(np.linspace(0, M, 14).astype(int))  # noqa: E731
    one = synthetic_study((16,), (4,), c_max=2 ** 15, eval_steps=steps, noise=EvalNoise(seed=3, problems=50))
    one.drop(columns=["problems", "samples"]).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["replay-adaptive", str(path), "--probes", "4"]) == 0
    out = capsys.readouterr().out
    assert "1 runs" in out and "trained to C_max" in out


def test_replay_command_json_is_strict_json(tmp_path, small_study, capsys):
    # A run with no usable fit leaves the n* agreement and the reward difference undefined:
    # null in the JSON, never NaN (not JSON; strict parsers refuse it).
    path = tmp_path / "two_points.csv"
    small_study[small_study["n"] == 32].head(2).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["replay-adaptive", str(path), "--json", "--probes", "4"]) == 0
    text = capsys.readouterr().out

    def refuse(constant):
        raise AssertionError(f"{constant} in the JSON")

    out = json.loads(text, parse_constant=refuse)
    assert out["agreement"] is None and out["reward_diff"] is None and len(out["runs"]) == 1


def test_replay_command_missing_file_is_one_line(tmp_path, capsys):
    missing = tmp_path / "nope.csv"
    assert main(["replay-adaptive", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(missing) in err and "no such file" in err and "\n" not in err
