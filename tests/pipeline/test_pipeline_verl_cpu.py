"""End to end: verl 0.9.1's own V1 trainer (`python -m verl.trainer.main_ppo`) trains a
cell of a tiny study on the CPU through the real Snakemake rules (train.backend verl,
train.device cpu: the CPU platform of train/backends/verl/cpu/), then score, collect and
analyze. One Easy cell, 5 steps, KL + entropy on (verl builds the reference model), the
compute-matched evaluation schedule (verl validates at steps 0, 1, 2 and 5 only), one
extra evaluation set (the Hard split's validation problems), and an adaptive sweep of
two rungs: the cell trains to rung 0 (step 3, verl's session ended by
trainer.total_training_steps and checkpointed there without validating: not a step of
the schedule), the rule decides (one run with fewer than sweep.min_evals evaluations
goes on), and the last rung resumes verl's own checkpoint (resume_mode auto) to
M_max = 5 without training steps 1-3 again.

What it would catch: main_ppo's missing dependencies (transfer_queue), TransferQueue's
Ray CPUs (a wait forever: the run is bounded by a timeout), trainer.device turned back
into cuda, the run named after another experiment than the study's, a train job that
reads eval.k (eval.samples = 2 < the schema's k = 4) or the schedule of another
C_max (C_max = 20 is no power of two: a schedule to 16 or 32 validates at step 4 too),
a rung that retrains from step 0 or never reaches M_max, training steps whose timed-out
rewards nobody counts, and any part of the CPU platform that verl stops loading.

Cost (2 contended cores): see the closing note of issue 21; the data stages are the
tiny study's (seconds), the two verl sessions most of it.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml

from isocompute.config import check_config
from isocompute.grid import grid_cells
from isocompute.sweep import rung_stop_steps
from isocompute.train.recipe import cell_recipe
from support import TINY_CONFIG, make_study_dir, run_snakemake, seed_study, write_config

pytestmark = [pytest.mark.slow, pytest.mark.engine]  # tests/conftest.py: the engine tests

VERL_CPU = {
    **TINY_CONFIG,
    "experiment": "tinyverl",
    # B = 4 rollouts a step, M_max = 5 steps; rung 0 at 20 / (5/3) = 12 rollouts = step 3.
    # One compute point per doubling from 4 to 20: 4, 8, 16 (-> step 4) and 20 would be
    # every step; 3 points from 4 to 20 (4, 8.9, 20) are steps 1, 2 and 5.
    "grid": {"easy": {"B_p": [2], "n": [2], "B_max": 4, "C_max": 20}},
    "train": {"backend": "verl", "device": "cpu", "max_response_length": 16, "lr_base": 1e-3, "B_ref": 8,
              "warmup_steps": 1, "probe_problems": 0, "eval_schedule": "compute", "eval_points_per_octave": 1},
    "eval": {"k": 2, "samples": 2, "extra_sets": [{"name": "hard", "split": "hard"}]},
    "sweep": {"mode": "adaptive", "rungs": 2, "eta": 5 / 3},
    # verl's own TensorBoard logger, through the tracking section (verl.utils.tracking).
    "tracking": {"backends": ["tensorboard"]},
    # One logical GPU; TransferQueue with 1 storage unit: 3 + 1 + 1 + 1 = 6 of the 8 Ray CPUs.
    "cluster": {"train": {"gpus": 1, "cpus_per_gpu": 8},
                "verl": {"storage_units": 1, "max_prompt_length": 64, "max_token_len_per_gpu": 512}},
}
RUN = "results/tinyverl/runs/easy/bp2_n2"
TABLES = "results/tinyverl/analysis/easy/tables"
SET_EVALS = f"{RUN}/eval_sets/hard.parquet"
DECISIONS = "results/tinyverl/sweep/easy/rung0/decisions.csv"
RUNG_STOP, M_MAX, VAL_PROBLEMS, SAMPLES = 3, 5, 4, 2
TIMEOUT_S = 900  # a run that waits forever (TransferQueue short of Ray CPUs) fails instead
# verl's console logger: one "step:N - key:value - ..." line per logged step (the TaskRunner's print).
STEP_LINE = re.compile(r"\bstep:(\d+) - (.*)$")


def checked():
    return check_config(json.loads(json.dumps(VERL_CPU)))


def planned_steps() -> list[int]:
    cfg = checked()
    (cell,) = grid_cells(cfg)
    return list(cell_recipe(cfg, cell).eval_steps)


@pytest.fixture(scope="module")
def verl_study(tmp_path_factory, tiny_stages):
    work = seed_study(make_study_dir(tmp_path_factory.mktemp("verl_cpu")), tiny_stages, "tinyverl")
    cfg = write_config(work, VERL_CPU)
    run_snakemake(work, TABLES, "--cores", "2", "--configfile", str(cfg), timeout=TIMEOUT_S)
    score_set(work)
    return work


def score_set(work) -> None:
    """The score_eval_set rule's command for the finished run. An adaptive sweep scores no
    extra set (its stopped runs have none), and asking Snakemake for the table by name fails
    building the DAG (the train rule's params read input.options, which the sweep's input
    function does not give there), so the test runs the rule's command itself."""
    import subprocess
    import sys

    from isocompute import jobs

    cfg = checked()
    (cell,) = grid_cells(cfg)
    argv = [sys.executable, "-c", "import sys; from isocompute.cli import main; sys.exit(main())", "score",
            "--params", jobs.as_json(jobs.score_params(cfg)),
            *jobs.score_args(cell, eval_set="hard").split(), "--run-dir", RUN, "--out", SET_EVALS]
    subprocess.run(argv, cwd=work, check=True, timeout=120)


def test_the_config_is_discriminating():
    """What the test relies on to catch a wrong schedule or a wrong rung, checked without verl."""
    cfg = checked()
    (cell,) = grid_cells(cfg)
    assert (cell.M_max, rung_stop_steps(cfg, cell)) == (M_MAX, [RUNG_STOP, M_MAX])
    assert planned_steps() == [0, 1, 2, 5] and RUNG_STOP not in planned_steps()
    # A job whose schedule ended at another C_max than the study's 20 (a power of two near it,
    # or the schema default's) would validate this run at other steps.
    for c_max in (16, 32, 8192):
        other = {**cfg, "schedule": {"min_compute": 4, "C_max": c_max}}
        assert list(cell_recipe(other, cell).eval_steps) != planned_steps(), c_max
    default = check_config({})
    assert cfg["eval"]["samples"] < default["eval"]["k"]  # a job reading eval.k's default fails


def verl_log_steps(run) -> dict[int, int]:
    """Training step -> how many times verl's console logged its update, over all sessions
    of the run (run_verl appends every session to the same log)."""
    counts: dict[int, int] = {}
    for line in (run / "verl" / "main_ppo.log").read_text(errors="replace").splitlines():
        m = STEP_LINE.search(line)
        if m and "actor/grad_norm:" in m.group(2):
            counts[int(m.group(1))] = counts.get(int(m.group(1)), 0) + 1
    return counts


def test_verl_trains_the_cell_on_the_cpu(verl_study):
    run = verl_study / RUN
    marker = json.loads((run / "run.json").read_text())
    assert (marker["backend"], marker["steps"], marker["M_max"]) == ("verl", M_MAX, M_MAX)
    assert marker["versions"]["verl"] == "0.9.1"
    # verl's own resolved config (the last session's): the CPU platform's settings and the study's experiment.
    hydra = yaml.safe_load((run / "verl" / "hydra" / ".hydra" / "config.yaml").read_text())
    assert hydra["trainer"]["experiment_name"] == "tinyverl-easy-bp2_n2"
    assert (hydra["trainer"]["device"], hydra["actor_rollout_ref"]["rollout"]["name"]) == ("cpu", "hf_cpu")
    assert hydra["actor_rollout_ref"]["actor"]["use_kl_loss"] and hydra["actor_rollout_ref"]["actor"]["entropy_coeff"] > 0
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = {m["step"]: m["data"] for m in metrics}
    for step in range(1, M_MAX + 1):
        data = steps[step]
        assert data["actor/grad_norm"] > 0, (step, data["actor/grad_norm"])  # a real update
        assert "actor/kl_loss" in data and "actor/entropy" in data  # the reference model ran
        # The rollout server's tempered log-probs are the actor's (same weights, synced each step).
        assert abs(data["training/rollout_probs_diff_mean"]) < 1e-2, data["training/rollout_probs_diff_mean"]
        # Each training step's timed-out rewards, counted by the project's trainer mode from the
        # reward function's timed_out (the local backend's keys): none on honest answers.
        assert (data["grading/timeouts"], data["grading/timeout_share"]) == (0, 0.0), step
    assert "grading/timeouts" not in steps[0]  # step 0 only validates
    assert (run / "checkpoints" / "latest_checkpointed_iteration.txt").read_text().strip() == str(M_MAX)
    assert hydra["trainer"]["logger"] == ["console", "file", "tensorboard"]


def test_verls_tensorboard_logger_gets_the_metrics_of_both_sessions(verl_study):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = verl_study / RUN
    board = EventAccumulator(str(verl_study / "results/tinyverl/tracking/tensorboard/tinyverl/tinyverl-easy-bp2_n2"))
    board.Reload()
    metrics = {m["step"]: m["data"] for m in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())}
    grad_norms = {e.step: e.value for e in board.Scalars("actor/grad_norm")}
    assert sorted(grad_norms) == list(range(1, M_MAX + 1))  # the rung's session, then the last rung's
    assert grad_norms == pytest.approx({s: metrics[s]["actor/grad_norm"] for s in grad_norms}, rel=1e-5)
    logged = {e.step for tag in board.Tags()["scalars"] for e in board.Scalars(tag)}
    assert logged == set(metrics) == set(range(M_MAX + 1))  # step 0: the base model's validation


def test_the_rung_stops_at_its_step_and_the_last_rung_resumes_verls_checkpoint(verl_study):
    run = verl_study / RUN
    rung = json.loads((run / "rungs" / "0" / "rung.json").read_text())
    assert (rung["rung"], rung["stop_at_step"], rung["steps"], rung["resumed_from"]) == (0, RUNG_STOP, RUNG_STOP, None)
    assert f"trainer.total_training_steps={RUNG_STOP} " in rung["verl_command"] + " "
    decision = pd.read_csv(verl_study / DECISIONS)
    # One run with 2 evaluations at positive compute (< sweep.min_evals) goes on.
    assert decision[["run", "rung_compute", "continue"]].values.tolist() == [["bp2_n2", 12.0, True]]
    final = json.loads((run / "run.json").read_text())
    assert final["resumed_from"] == RUNG_STOP
    assert f"trainer.total_training_steps={M_MAX} " in final["verl_command"] + " "
    assert "trainer.resume_mode=auto" in final["verl_command"]
    # Resumed from the checkpoint (not a step-0 re-validation) and never a step trained twice:
    # verl's own log holds each update once over both sessions, the second from step 3.
    assert "trainer.val_before_train=false" in final["verl_command"]
    assert verl_log_steps(run) == {s: 1 for s in range(1, M_MAX + 1)}, verl_log_steps(run)
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(M_MAX + 1))
    # The rung's checkpoint step is not a validation step: checkpointed, not validated.
    assert not (run / "generations" / f"{RUNG_STOP}.jsonl").exists()
    rung_evals = pd.read_parquet(run / "rungs" / "0" / "evals.parquet")
    assert rung_evals["step"].tolist() == [s for s in planned_steps() if s <= RUNG_STOP]


def test_validation_dumps_and_evals_at_the_planned_steps(verl_study):
    run = verl_study / RUN
    planned = planned_steps()
    for folder in (run / "generations", run / "generations" / "hard"):
        assert sorted(int(p.stem) for p in folder.glob("*.jsonl")) == planned, folder
        for step in planned:
            rows = [json.loads(line) for line in (folder / f"{step}.jsonl").read_text().splitlines()]
            assert len(rows) == VAL_PROBLEMS * SAMPLES  # val_size problems x eval.samples
            assert all({"input", "output", "score", "sample", "n_tokens"} <= set(r) for r in rows)
    # The own split's dumps hold none of the set's samples, and the set's none of the split's.
    own = {json.loads(line)["input"] for line in (run / "generations" / "0.jsonl").read_text().splitlines()}
    hard = {json.loads(line)["input"] for line in (run / "generations" / "hard" / "0.jsonl").read_text().splitlines()}
    assert own and hard and not own & hard
    evals = pd.read_parquet(run / "evals.parquet")
    assert evals["step"].tolist() == planned and (evals["compute"] == 4 * evals["step"]).all()
    assert evals["avg@2"].between(0, 1).all()
    sets = pd.read_parquet(verl_study / SET_EVALS)
    assert sets["step"].tolist() == planned and (sets["eval_set"] == "hard").all()
    collected = pd.read_parquet(verl_study / "results/tinyverl/analysis/easy/evals.parquet")
    assert collected["step"].tolist() == planned
    assert (verl_study / TABLES / "records.csv").is_file()
