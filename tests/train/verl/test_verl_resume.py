"""Resuming a verl run and the session around verl's process: merged metrics,
logs cut back to the last checkpoint, a run folder of another recipe started
over, and run_verl around a stand-in for verl that writes what verl writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from isocompute.errors import InputError
from isocompute.grading import TooManyTimeouts
from isocompute.grid import Cell
from isocompute.layout import RunPaths
from isocompute.train.backends import train_run
from isocompute.train.backends.verl import dumps as verl_dumps, run as verl_run
from isocompute.train.backends.verl.files import VerlRunFiles
from isocompute.train.backends.verl.resume import ResumeState, merge_metrics, prepare_run_dir, resume_state
from isocompute.train.backends.verl.run import run_verl
from isocompute.train.run_logs import read_jsonl
from support.verl import fake_checkpoint, overrides_dict, verl_cfg


def dump(run: Path, step: int, complete: bool = True) -> None:
    (run / "generations").mkdir(parents=True, exist_ok=True)
    text = json.dumps({"input": "q", "output": "a", "gts": "1", "score": 0.0, "step": step}) + "\n"
    (run / "generations" / f"{step}.jsonl").write_text(text if complete else text[:20])


def test_merge_metrics_keeps_one_record_per_step():
    previous = [{"step": 0, "data": {"val": 0.1}}, {"step": 10, "data": {"loss": 1.0, "val": 0.3}},
                {"step": 11, "data": {"loss": 0.9}}]
    session = [{"step": 10, "data": {"val": 0.35}}, {"step": 11, "data": {"loss": 0.8}},
               {"step": 12, "data": {"loss": 0.7}}]
    merged = merge_metrics(previous, session, resume_step=10)
    assert [r["step"] for r in merged] == [0, 10, 11, 12]
    assert merged[1]["data"] == {"loss": 1.0, "val": 0.3}   # the step that was already evaluated keeps its record
    assert merged[2]["data"] == {"loss": 0.8}                # redone steps come from the new session
    assert [r["step"] for r in merge_metrics(previous, session, None)] == [10, 11, 12]


def test_prepare_run_dir_resumes_from_the_last_checkpoint(tmp_path):
    files = VerlRunFiles(tmp_path / "run")
    ident = {"recipe": 1}
    assert prepare_run_dir(files, ident) == ResumeState(None, True)
    # A session killed after checkpoint 10, during step 13: its log and late dumps are left behind.
    fake_checkpoint(files.run_dir, 10)
    for step in (0, 10, 13):
        dump(files.run_dir, step, complete=step != 13)
    files.session_metrics.write_text("".join(json.dumps({"step": s, "data": {"x": s}}) + "\n" for s in (0, 10, 11, 12))
                                     + '{"step": 13, "da')
    files.pass_rates.write_text("".join(json.dumps({"step": s, "problem_id": "p", "pass_rate": 0.5}) + "\n"
                                        for s in (9, 10, 11)))
    files.rollouts.mkdir(parents=True)
    for s in (9, 10, 12):
        (files.rollouts / f"{s}.jsonl").write_text("{}\n")
    state = prepare_run_dir(files, ident)
    assert state == ResumeState(10, False)                       # step 10 was evaluated: no re-validation
    assert [r["step"] for r in read_jsonl(files.metrics)] == [0, 10]
    assert [r["step"] for r in read_jsonl(files.pass_rates)] == [9, 10]
    # Unread rollout dumps up to the checkpoint stay for the recorder, later or unfinished ones go.
    assert sorted(p.name for p in files.rollouts.iterdir()) == ["9.jsonl"]
    assert sorted(p.name for p in files.generations.iterdir()) == ["0.jsonl", "10.jsonl"]
    assert not files.session_metrics.exists()
    # A lost dump at the resume step makes the session validate first.
    (files.generations / "10.jsonl").unlink()
    assert resume_state(files) == ResumeState(10, True)
    # A checkpoint that is not a validation step (a rung's stop step) resumes without validating.
    assert resume_state(files, eval_steps=[0, 8, 16]) == ResumeState(10, False)
    assert resume_state(files, eval_steps=[0, 10]) == ResumeState(10, True)
    # Another recipe in the same folder starts over.
    assert prepare_run_dir(files, {"recipe": 2}) == ResumeState(None, True)
    assert not files.generations.exists() and not files.metrics.exists()
    # So does a checkpoint beyond a lowered budget; one within it resumes.
    fake_checkpoint(files.run_dir, 10)
    dump(files.run_dir, 10)
    assert prepare_run_dir(files, {"recipe": 2}, max_steps=20).step == 10
    assert prepare_run_dir(files, {"recipe": 2}, max_steps=5) == ResumeState(None, True)


def test_checkpoints_of_earlier_sessions_and_unfinished_saves_are_pruned(tmp_path):
    """verl rotates checkpoints (max_actor_ckpt_to_keep) only among those its own session saved:
    a run resumed over many SLURM attempts would keep one ~90 GB checkpoint per attempt, and a
    save killed half-way stays on disk. Before a session, only the last `keep` complete ones stay."""
    files = VerlRunFiles(tmp_path / "run")
    for step in (10, 20, 30):        # three sessions, each ended after its last save
        fake_checkpoint(files.run_dir, step)
    (files.checkpoints / "global_step_5").mkdir()          # what verl's rotation leaves (data.pt)
    (files.checkpoints / "global_step_40" / "actor").mkdir(parents=True)   # killed mid-save
    assert prepare_run_dir(files, {"recipe": 1}, keep=2).step == 30
    assert sorted(p.name for p in files.checkpoints.glob("global_step_*")) == ["global_step_20", "global_step_30"]
    assert prepare_run_dir(files, {"recipe": 1}, keep=1).step == 30
    assert sorted(p.name for p in files.checkpoints.glob("global_step_*")) == ["global_step_30"]
    assert (files.checkpoints / "isocompute_identity.json").is_file()


def fake_popen(work):
    """A stand-in for verl's process: `work(argv, env)` does what verl would, then it exits 0."""
    class FakePopen:
        def __init__(self, argv, env=None, **kw):
            self.returncode = work(argv, env)

        def wait(self, timeout=None):
            return self.returncode

    return FakePopen


def test_run_verl_runs_the_command_and_checks_the_run(tmp_path, monkeypatch):
    """run_verl around a stand-in for verl that writes what verl writes."""
    run = tmp_path / "run"
    train = tmp_path / "train.parquet"
    pd.DataFrame({"x": range(40)}).to_parquet(train)
    paths = RunPaths(run, train, train, str(tmp_path / "model"))
    cfg = verl_cfg(train={"eval_schedule": "steps", "eval_interval": 2})  # the fake verl validates every 2
    cell = Cell("easy", 32, 8, 3, 768)

    def verl(argv, env):
        o = overrides_dict(argv[3:])
        assert o["trainer.validation_data_dir"] == str(run.resolve() / "generations")
        rollouts = Path(o["trainer.rollout_data_dir"])
        rollouts.mkdir(parents=True, exist_ok=True)
        for step in (0, 2, 3):
            dump(run, step)
        for step in (1, 2, 3):
            (rollouts / f"{step}.jsonl").write_text(json.dumps(
                {"input": "q", "output": "a", "gts": "1", "score": float(step > 1), "step": step, "uid": "u_0_0"}) + "\n")
        fake_checkpoint(run, 3)
        Path(env["VERL_FILE_LOGGER_PATH"]).write_text(
            "".join(json.dumps({"step": s, "data": {"s": s}}) + "\n" for s in range(4)))
        return 0

    monkeypatch.setattr(verl_run.subprocess, "Popen", fake_popen(verl))
    monkeypatch.setattr(verl_dumps, "token_counter", lambda model: (lambda text: len(text)))
    monkeypatch.setattr(verl_run, "problem_lookup", lambda train_file, model: {"q": "p-q"}.get)
    counted = {"train": {"prompts": 40, "dropped": 1, "share": 0.025, "longest": 2000},
               "val": {"prompts": 40, "dropped": 0, "share": 0.0, "longest": 900}}
    monkeypatch.setattr(verl_run, "dropped_prompts", lambda files, model, length, share: counted)
    summary = run_verl(cfg, cell, paths)
    assert summary["steps"] == 3 and summary["resumed_from"] is None and summary["dumps_annotated"] == 3
    assert summary["dropped_prompts"] == counted and summary["train_problems"] == 39
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [0, 1, 2, 3]
    assert read_jsonl(run / "generations" / "2.jsonl")[0]["n_tokens"] == 1
    assert read_jsonl(run / "train_pass_rates.jsonl") == [
        {"step": s, "problem_id": "p-q", "pass_rate": float(s > 1)} for s in (1, 2, 3)]
    assert not list((run / "verl" / "rollouts").glob("*.jsonl"))
    assert (run / "verl" / "command.sh").read_text().strip() == summary["verl_command"]

    # A verl that stops early is an error, not a finished run.
    def short(argv, env):
        fake_checkpoint(run, 2)
        return 0

    monkeypatch.setattr(verl_run.subprocess, "Popen", fake_popen(short))
    (run / "checkpoints" / "global_step_3").rename(run / "checkpoints" / "old")
    fake_checkpoint(run, 2)
    with pytest.raises(RuntimeError, match="without reaching M_max = 3"):
        run_verl(cfg, cell, paths)
    # A rung of an adaptive sweep: verl stops at step 1 (no validation step), checkpointed;
    # asked again, or for an earlier step, nothing runs.
    def to_rung(argv, env):
        o = overrides_dict(argv[3:])
        assert o["trainer.total_training_steps"] == "1" and o["+trainer.isocompute_stop_step"] == "1"
        assert o["trainer.val_before_train"] == "false"  # step 0 was evaluated
        fake_checkpoint(rung_run, 1)
        return 0

    rung_run = tmp_path / "rung"
    rung_paths = RunPaths(rung_run, train, train, str(tmp_path / "model"))
    monkeypatch.setattr(verl_run.subprocess, "Popen", fake_popen(to_rung))
    dump(rung_run, 0)
    fake_checkpoint(rung_run, 0)
    rung_run.joinpath("metrics.jsonl").write_text(json.dumps({"step": 0, "data": {"s": 0}}) + "\n")
    assert run_verl(cfg, cell, rung_paths, stop_at_step=1)["steps"] == 1
    monkeypatch.setattr(verl_run.subprocess, "Popen", fake_popen(lambda argv, env: 1 / 0))
    assert run_verl(cfg, cell, rung_paths, stop_at_step=1)["resumed_from"] == 1
    with pytest.raises(InputError, match=r"--stop-at-step: expected a step in \[1, M_max = 3\], got 4"):
        train_run(cfg, cell, rung_paths, stop_at_step=4)     # checked before any backend
    monkeypatch.setattr(verl_run.subprocess, "Popen", fake_popen(lambda argv, env: 1))
    with pytest.raises(RuntimeError, match="verl exited with status 1"):
        run_verl(cfg, cell, paths)
    with pytest.raises(InputError, match="39 training problems verl keeps .* fewer than B_p = 40"):
        run_verl(cfg, Cell("easy", 40, 8, 3, 960), paths)


def scored_step(timeouts: int, rollouts: int) -> dict:
    """The grading metrics the project's trainer mode logs for a step whose first `timeouts` rollouts
    the reward function could not grade in time (math-verify forced to time out)."""
    from isocompute.grading import Verdict
    from isocompute.train.backends.verl import reward
    from isocompute.train.backends.verl.timeouts import step_timeouts

    def judged(completion, truth, timeout_s):
        return (Verdict.TIMED_OUT, "timeout") if completion == "tower" else (Verdict.WRONG, "numeric")

    real, reward.judge = reward.judge, judged
    try:
        infos = [reward.compute_score("math", "tower" if i < timeouts else "\\boxed{1}", "2", {"problem_id": "p"})
                 for i in range(rollouts)]
    finally:
        reward.judge = real
    return step_timeouts([{"reward_extra_info": info} for info in infos], [False] * rollouts)


class RunningVerl:
    """verl's session: logs one training step (and its checkpoint and dump where verl makes them)
    each time run_verl polls it, until it has logged `steps` or is stopped."""

    def __init__(self, run: Path, steps: dict, checkpoints=(), dumps=()):
        self.run, self.steps, self.checkpoints, self.dumps = run, dict(steps), set(checkpoints), set(dumps)
        self.stopped = []

    def __call__(self, argv, env=None, **kw):
        self.logger, self.returncode = Path(env["VERL_FILE_LOGGER_PATH"]), None
        return self

    def wait(self, timeout=None):
        if self.returncode is None and not self.steps:
            self.returncode = 0
        if self.returncode is not None:
            return self.returncode
        step = min(self.steps)
        if step in self.dumps:
            dump(self.run, step)
        if step in self.checkpoints:
            fake_checkpoint(self.run, step)
        with open(self.logger, "a") as fh:
            fh.write(json.dumps({"step": step, "data": self.steps.pop(step)}) + "\n")
        raise verl_run.subprocess.TimeoutExpired("verl", timeout)

    def terminate(self):
        self.stopped.append("SIGTERM")
        self.returncode = -15


def test_a_training_step_above_the_timeout_share_stops_verl_and_fails_by_name(tmp_path, monkeypatch):
    """A step's timed-out rewards (in verl's step metrics, under the local backend's keys) above
    grading.max_timeout_share stop verl and fail the job naming the run, the step and the key;
    the counts stay in metrics.jsonl. A checkpoint holding that step is refused on the next
    attempt (not resumed as if it were sound) until the share is raised."""
    from isocompute import jobs

    run = tmp_path / "run"
    train = tmp_path / "train.parquet"
    pd.DataFrame({"x": range(40)}).to_parquet(train)
    paths = RunPaths(run, train, train, str(tmp_path / "model"))
    cfg = verl_cfg(train={"eval_schedule": "steps", "eval_interval": 2},
                   cluster={"verl": {"train_pass_rates": False}})
    cell = Cell("easy", 32, 8, 4, 1024)
    assert jobs.train_params(cfg, cell)["grading"] == {"max_timeout_share": 0.01}  # the train job reads it
    rollouts = cell.B_p * cell.n
    # 2 of 256 (0.0078) is within the default share of 0.01, 3 of 256 (0.0117) is not.
    steps = {0: {"val": 0.1}, 1: scored_step(2, rollouts), 2: scored_step(3, rollouts), 3: scored_step(0, rollouts),
             4: scored_step(0, rollouts)}
    verl = RunningVerl(run, steps, checkpoints=(0, 2, 4), dumps=(0, 2, 4))
    monkeypatch.setattr(verl_run.subprocess, "Popen", verl)
    monkeypatch.setattr(verl_dumps, "token_counter", lambda model: None)
    monkeypatch.setattr(verl_run, "dropped_prompts", lambda files, model, length, share: {
        part: {"prompts": 40, "dropped": 0, "share": 0.0, "longest": 10} for part in ("train", "val")})
    with pytest.raises(TooManyTimeouts, match=r"^train easy bp32_n8 step 2: 3 of 256 graded pairs timed out "
                                              r"\(share 0\.01172 > grading\.max_timeout_share = 0\.01\)"):
        run_verl(cfg, cell, paths)
    assert verl.stopped == ["SIGTERM"] and 3 in verl.steps  # stopped at the step, not run to M_max
    metrics = {r["step"]: r["data"] for r in read_jsonl(run / "metrics.jsonl")}
    assert [(s, d.get("grading/timeouts")) for s, d in metrics.items()] == [(0, None), (1, 2), (2, 3)]
    assert metrics[1]["grading/timeout_share"] == pytest.approx(2 / 256)
    # The step's checkpoint (step 2 is a save step) holds the lowered rewards: refused, by name.
    with pytest.raises(TooManyTimeouts, match=r"step 2: .*grading\.max_timeout_share = 0\.01\).*; the "
                                              r"last checkpoint holds that step: raise the share to keep it, or remove"):
        run_verl(cfg, cell, paths)
    # A raised share keeps the run: it resumes from step 2 to M_max.
    tolerant = verl_cfg(train={"eval_schedule": "steps", "eval_interval": 2},
                        cluster={"verl": {"train_pass_rates": False}}, grading={"max_timeout_share": 0.05})
    assert run_verl(tolerant, cell, paths)["resumed_from"] == 2
    assert [r["data"].get("grading/timeouts") for r in read_jsonl(run / "metrics.jsonl")] == [None, 2, 3, 0, 0]


def test_backends_are_one_registry_and_unknown_is_a_config_error():
    from isocompute.errors import ConfigError
    from isocompute.train.backends import BACKENDS, get_backend

    assert get_backend("verl") is run_verl and "verl" in BACKENDS
    with pytest.raises(ConfigError, match=r"config key 'train.backend': backend must be one of .*verl.*; got 'nope'"):
        get_backend("nope")
