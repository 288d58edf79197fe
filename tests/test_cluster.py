"""The cluster backend on the CPU: verl commands and their recipe, the reward
function on verl-style calls, verl's validation dumps through the project's
scoring (same table as the local backend's), resuming, checkpoint conversion,
the vLLM sampler over a fake engine, the GPU-hour plan and the SLURM resources.

What needs verl itself to resolve configs is in test_cluster_verl.py; the real
SLURM run is in test_cluster_slurm.py.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, VENV_BIN
from isocompute.train.backends.verl import dumps as verl_dumps, reward, run as verl_run
from isocompute.train.backends.verl.dumps import annotate_dumps
from isocompute.train.backends.verl.files import LATEST_CHECKPOINT_FILE, VerlRunFiles
from isocompute.train.backends.verl.overrides import (REWARD_FUNCTION_NAME, hydra_value, reward_function_path,
                                                      verl_command, verl_overrides)
from isocompute.train.backends.verl.pass_rates import PassRateRecorder, prompt_index, step_pass_rates
from isocompute.train.backends.verl.resume import ResumeState, merge_metrics, prepare_run_dir, read_jsonl, resume_state
from isocompute.train.backends.verl.run import run_verl
from isocompute.cluster.checkpoints import actor_checkpoint_dir, convert_checkpoint, merge_command
from isocompute.cluster.plan import cell_costs, evaluations, format_plan, split_summary
from isocompute.cluster.resources import attempt_runtime, cpu_job_resources, gpu_job_resources
from isocompute.config import check_config, load_config
from isocompute.errors import ConfigError, InputError
from isocompute.grid import Cell, grid_cells
from isocompute.sampling import SamplingParams
from isocompute.layout import RunPaths

PAPER = sorted((REPO / "config" / "paper").glob("*.yaml"))


def verl_cfg(**over) -> dict:
    cfg = {"experiment": "t", "splits": {"names": ["easy", "hard", "dual"]}, "train": {"backend": "verl"}}
    for key, value in over.items():
        cfg[key] = {**cfg.get(key, {}), **value} if isinstance(value, dict) else value
    return check_config(cfg)


def overrides_dict(overrides: list[str]) -> dict:
    return dict(o.split("=", 1) for o in overrides)


@pytest.fixture
def run_paths(tmp_path) -> RunPaths:
    return RunPaths(tmp_path / "runs" / "easy" / "bp32_n8", tmp_path / "train.parquet", tmp_path / "val.parquet",
                    "Qwen/Qwen2.5-7B-Instruct")


# --- the reward function ---------------------------------------------------------

def test_reward_function_grades_verl_style_calls():
    call = dict(data_source="math__combined", ground_truth="\\frac{3}{4}",
                extra_info={"index": 7, "problem_id": "math-0000007", "num_turns": 1,
                            "rollout_reward_scores": {}})
    right = reward.compute_score(solution_str="so the answer is $\\boxed{\\dfrac{3}{4}}$", **call)
    wrong = reward.compute_score(solution_str="I get \\boxed{0.7}", **call)
    assert right == {"score": 1.0, "acc": 1.0, "problem_id": "math-0000007"}
    assert wrong == {"score": 0.0, "acc": 0.0, "problem_id": "math-0000007"}
    # Extra keyword arguments of other reward managers and a missing extra_info are fine.
    none = reward.compute_score("math", "", "4", None, reward_router_address=None)
    assert none == {"score": 0.0, "acc": 0.0, "problem_id": ""}


def test_verl_loads_the_reward_function_by_path_and_its_metrics_skip_the_id():
    """What verl 0.9.1 does with it: load by path (reward.custom_reward_function), call it
    per rollout, and aggregate validation metrics with a string-valued problem_id present."""
    from verl.trainer.ppo.metric_utils import process_validation_metrics
    from verl.utils.import_utils import load_extern_object

    fn = load_extern_object(module_path=str(reward_function_path()), object_name=REWARD_FUNCTION_NAME)
    results = [fn(data_source="math", solution_str=f"\\boxed{{{a}}}", ground_truth="2",
                  extra_info={"problem_id": pid}) for pid, a in [("p1", 2), ("p1", 3), ("p2", 2), ("p2", 2)]]
    infos = {"reward": [r["score"] for r in results], **{k: [r[k] for r in results] for k in results[0]}}
    metrics = process_validation_metrics(["math"] * 4, ["u1", "u1", "u2", "u2"], infos)
    assert metrics["math"]["acc"]["mean@2"] == pytest.approx(0.75)
    assert "problem_id" not in metrics["math"]


# --- verl's validation dumps through the project's scoring ---------------------------

def verl_write_generations():
    """verl 0.9.1's own dump writer (trainer_base._write_generations), lifted from its source:
    the module needs verl's GPU extras to import, the writer itself does not."""
    import verl

    src = Path(verl.__file__).parent / "trainer" / "ppo" / "v1" / "trainer_base.py"
    for node in ast.walk(ast.parse(src.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == "_write_generations":
            node.decorator_list = []
            ns = {"os": os, "json": json, "np": np}
            exec(compile(ast.Module(body=[node], type_ignores=[]), str(src), "exec"), ns)
            return ns["_write_generations"]
    raise AssertionError(f"_write_generations not found in {src}")


# Validation samples of a run with 2 problems x 4 samples at steps 0 and 2.
SAMPLES = {
    0: [("p-a", "2+2", "4", ["\\boxed{4}", "\\boxed{5}", "4", "\\boxed{3}"]),
        ("p-b", "3*3", "9", ["\\boxed{8}", "\\boxed{7}", "\\boxed{6}", "no idea"])],
    2: [("p-a", "2+2", "4", ["\\boxed{4}", "\\boxed{4}", "\\boxed{4}", "\\boxed{4}"]),
        ("p-b", "3*3", "9", ["\\boxed{9}", "\\boxed{7}", "\\boxed{6}", "\\boxed{9}"])],
}


def write_verl_run(run_dir: Path) -> None:
    """A verl run folder as verl writes it: dumps with reward extra info, file-logger metrics."""
    write = verl_write_generations()
    for step, problems in SAMPLES.items():
        inputs, outputs, gts, scores, extra = [], [], [], [], {"reward": [], "score": [], "acc": [],
                                                              "problem_id": [], "uid": []}
        for pid, question, truth, outs in problems:
            for i, out in enumerate(outs):
                r = reward.compute_score("math", out, truth, {"problem_id": pid})
                inputs.append(f"user\n{question}\nassistant\n")
                outputs.append(out)
                gts.append(truth)
                scores.append(r["score"])
                extra["reward"].append(r["score"])
                for k in ("score", "acc", "problem_id"):
                    extra[k].append(r[k])
                extra["uid"].append(f"{pid}-uid_0_{i}")
        write(inputs, outputs, gts, scores, extra, str(run_dir / "generations"), step)
    metrics = [{"step": 0, "data": {"val-core/math/acc/mean@4": 0.25}},
               {"step": 1, "data": {"response_length/mean": 10.0}},
               {"step": 2, "data": {"response_length/mean": 20.0, "val-core/math/acc/mean@4": 0.75}}]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))


def write_local_run(run_dir: Path) -> None:
    """The same samples as the local backend dumps them."""
    gens = run_dir / "generations"
    gens.mkdir(parents=True)
    for step, problems in SAMPLES.items():
        lines = []
        for pid, question, truth, outs in problems:
            for i, out in enumerate(outs):
                r = reward.compute_score("math", out, truth, {"problem_id": pid})
                lines.append({"input": f"user\n{question}\nassistant\n", "output": out, "gts": truth,
                              "score": r["score"], "step": step, "problem_id": pid, "sample": i,
                              "n_tokens": len(out.split())})
        (gens / f"{step}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    # 2 problems x 2 rollouts per step: 10 and 20 tokens per rollout on average.
    metrics = [{"step": 0, "data": {"perf/tokens_generated_cumulative": 0}},
               {"step": 1, "data": {"perf/tokens_generated_cumulative": 40}},
               {"step": 2, "data": {"perf/tokens_generated_cumulative": 120}}]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))


def score(run_dir: Path, out: Path) -> pd.DataFrame:
    params = json.dumps({"eval": {"k": 4, "samples": 4}, "seed": 0})
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "score", "--params", params, "--split", "easy",
                           "--bp", "2", "--n", "2", "--run-dir", str(run_dir), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pd.read_parquet(out)


def test_verl_dumps_score_into_the_same_table_as_the_local_backend(tmp_path, monkeypatch):
    verl_run, local_run = tmp_path / "verl", tmp_path / "local"
    write_verl_run(verl_run)
    raw = read_jsonl(verl_run / "generations" / "0.jsonl")
    assert {"input", "output", "gts", "score", "step", "problem_id", "acc", "uid"} <= set(raw[0])
    # run_verl annotates the dumps after training: sample index and completion tokens
    # (the model's tokenizer there; whitespace words here, as in the local fixture).
    monkeypatch.setattr(verl_dumps, "token_counter", lambda model: (lambda text: len(text.split())))
    assert annotate_dumps(verl_run / "generations", "Qwen/Qwen2.5-7B-Instruct") == 2
    assert annotate_dumps(verl_run / "generations", "Qwen/Qwen2.5-7B-Instruct") == 0  # idempotent
    annotated = read_jsonl(verl_run / "generations" / "2.jsonl")
    assert [r["sample"] for r in annotated] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert {k: annotated[5][k] for k in ("input", "output", "gts", "score", "step")} == \
        {"input": "user\n3*3\nassistant\n", "output": "\\boxed{7}", "gts": "9", "score": 0.0, "step": 2}

    write_local_run(local_run)
    from_verl = score(verl_run, tmp_path / "verl.parquet")
    from_local = score(local_run, tmp_path / "local.parquet")
    pd.testing.assert_frame_equal(from_verl, from_local)
    assert list(from_verl["step"]) == [0, 2]
    assert list(from_verl["avg@4"]) == [pytest.approx(2 / 8), pytest.approx(6 / 8)]
    assert list(from_verl["tokens"]) == [0.0, 120.0]


# --- the verl command ------------------------------------------------------------------

def test_recipe_overrides_follow_the_split_and_the_batch(run_paths):
    cfg = verl_cfg()
    easy = overrides_dict(verl_overrides(cfg, Cell("easy", 32, 8, 640, 163840), run_paths))
    hard = overrides_dict(verl_overrides(cfg, Cell("hard", 256, 64, 4, 65536), run_paths))
    dual = overrides_dict(verl_overrides(cfg, Cell("dual", 64, 16, 10, 10240), run_paths))
    assert easy["algorithm.adv_estimator"] == "grpo"
    assert (easy["data.train_batch_size"], easy["actor_rollout_ref.actor.ppo_mini_batch_size"]) == ("32", "32")
    assert (hard["data.train_batch_size"], hard["actor_rollout_ref.actor.ppo_mini_batch_size"]) == ("256", "256")
    assert (easy["actor_rollout_ref.rollout.n"], hard["actor_rollout_ref.rollout.n"]) == ("8", "64")
    # lr = 1e-6 * sqrt(B / 1024): B = 256 -> 5e-7, B = 16384 -> 4e-6; 10 warm-up steps.
    assert float(easy["actor_rollout_ref.actor.optim.lr"]) == pytest.approx(5e-7)
    assert float(hard["actor_rollout_ref.actor.optim.lr"]) == pytest.approx(4e-6)
    assert easy["actor_rollout_ref.actor.optim.lr_warmup_steps"] == "10"
    # KL + entropy on Easy only.
    assert (easy["actor_rollout_ref.actor.use_kl_loss"], easy["actor_rollout_ref.actor.kl_loss_type"]) == \
        ("true", "low_var_kl")
    assert float(easy["actor_rollout_ref.actor.kl_loss_coef"]) == 1e-3
    assert float(easy["actor_rollout_ref.actor.entropy_coeff"]) == 1e-3
    for other in (hard, dual):
        assert other["actor_rollout_ref.actor.use_kl_loss"] == "false"
        assert float(other["actor_rollout_ref.actor.entropy_coeff"]) == 0.0
    # Sampling: 0.6 / 1.0 for rollouts and validation; 4 validation samples; 8192 tokens; TIS.
    for key in ("actor_rollout_ref.rollout.temperature", "actor_rollout_ref.rollout.val_kwargs.temperature"):
        assert float(easy[key]) == 0.6
    assert float(easy["actor_rollout_ref.rollout.val_kwargs.top_p"]) == 1.0
    assert easy["actor_rollout_ref.rollout.val_kwargs.n"] == "4"
    assert easy["actor_rollout_ref.rollout.val_kwargs.do_sample"] == "true"
    assert easy["data.max_response_length"] == "8192"
    assert (easy["algorithm.rollout_correction.rollout_is"], easy["algorithm.rollout_correction.rollout_is_threshold"]) \
        == ("token", "2.0")
    # Length from the budget, evaluation and checkpoints every K.
    assert (easy["trainer.total_training_steps"], hard["trainer.total_training_steps"]) == ("640", "4")
    assert easy["trainer.test_freq"] == easy["trainer.save_freq"] == "10"
    # The reward function verl 0.9 actually reads (reward.*), not the legacy top-level keys.
    assert easy["reward.custom_reward_function.path"].endswith("isocompute/train/backends/verl/reward.py")
    assert easy["reward.custom_reward_function.name"] == "compute_score"
    assert not any(k.startswith("custom_reward_function.") for k in easy)


def test_io_overrides_put_every_output_in_the_run_folder(run_paths):
    cfg = verl_cfg(cluster={"verl": {"extra_overrides": ["actor_rollout_ref.rollout.max_num_seqs=512"]}})
    cell = Cell("easy", 32, 8, 640, 163840)
    cmd = verl_command(cfg, cell, run_paths, python="python")
    run = Path(run_paths.run_dir).resolve()
    o = overrides_dict(cmd.argv[3:])
    assert cmd.argv[:3] == ["python", "-m", "verl.trainer.main_ppo"]
    assert o["trainer.validation_data_dir"] == str(run / "generations")
    assert o["trainer.default_local_dir"] == str(run / "checkpoints")
    assert o["trainer.resume_mode"] == "auto" and o["trainer.val_before_train"] == "true"
    assert o["trainer.logger"] == "[console,file]"
    # The name in verl's loggers comes from the config, wherever the run folder is.
    assert o["trainer.experiment_name"] == "t-easy-bp32_n8"
    assert cmd.env == {"VERL_FILE_LOGGER_PATH": str(run / "verl" / "metrics.session.jsonl")}
    assert o["data.train_files"] == str(Path(run_paths.train_file).resolve())
    assert o["actor_rollout_ref.model.path"] == "Qwen/Qwen2.5-7B-Instruct"  # a hub name stays a hub name
    assert o["trainer.n_gpus_per_node"] == "8" and o["ray_kwargs.ray_init.num_cpus"] == "64"
    assert cmd.argv[-1] == "actor_rollout_ref.rollout.max_num_seqs=512"
    shell = cmd.shell()
    assert shell.startswith("VERL_FILE_LOGGER_PATH=") and " -m verl.trainer.main_ppo " in shell


def test_hydra_values_are_quoted_where_hydra_needs_it():
    assert hydra_value(True) == "true" and hydra_value(None) == "null"
    assert hydra_value(5e-07) == "5e-07" and hydra_value(["console", "file"]) == "[console,file]"
    assert hydra_value("/data/run 1/x,y") == "'/data/run 1/x,y'"
    assert hydra_value("it's") == "'it\\'s'"
    assert hydra_value("123") == "'123'" and hydra_value("null") == "'null'"
    assert hydra_value("/abs/path_to/file-1.parquet") == "/abs/path_to/file-1.parquet"


def test_options_verl_cannot_honour_stop_with_the_key(run_paths):
    cell = Cell("easy", 32, 8, 10, 2560)
    with pytest.raises(ConfigError, match="train.zero_variance_filter"):
        verl_overrides(verl_cfg(train={"zero_variance_filter": True}), cell, run_paths)
    with pytest.raises(ConfigError, match="train.decoupled_baseline"):
        verl_overrides(verl_cfg(train={"decoupled_baseline": {"enabled": True}}), cell, run_paths)
    with pytest.raises(ConfigError, match="cluster.verl.max_token_len_per_gpu"):
        verl_overrides(verl_cfg(cluster={"verl": {"max_token_len_per_gpu": 4096}}), cell, run_paths)
    with pytest.raises(ConfigError, match="extra_overrides"):
        check_config({"cluster": {"verl": {"extra_overrides": ["not an override"]}}})


def test_verl_command_cli_prints_the_rules_command(tmp_path):
    """`isocompute verl-command` from the repository root names the files the train rule passes."""
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "verl-command", str(PAPER_MAIN), "--split", "hard",
                           "--bp", "1024", "--n", "16"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip()
    assert "\n" not in line
    res = tmp_path / "results" / "paper_qwen25_7b"
    assert f"VERL_FILE_LOGGER_PATH={res}/runs/hard/bp1024_n16/verl/metrics.session.jsonl" in line
    assert f"data.train_files={res}/splits/hard/train.parquet" in line
    assert "trainer.total_training_steps=256" in line and "actor_rollout_ref.actor.use_kl_loss=false" in line
    bad = subprocess.run([str(VENV_BIN / "isocompute"), "verl-command", str(PAPER_MAIN), "--split", "hard",
                          "--bp", "1024", "--n", "64"], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "no grid cell hard/bp1024_n64" in bad.stderr


PAPER_MAIN = REPO / "config" / "paper" / "qwen25_7b.yaml"


# --- resuming -----------------------------------------------------------------------

def fake_checkpoint(run: Path, step: int) -> None:
    (run / "checkpoints" / f"global_step_{step}" / "actor").mkdir(parents=True, exist_ok=True)
    (run / "checkpoints" / LATEST_CHECKPOINT_FILE).write_text(str(step))


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
    # Another recipe in the same folder starts over.
    assert prepare_run_dir(files, {"recipe": 2}) == ResumeState(None, True)
    assert not files.generations.exists() and not files.metrics.exists()
    # So does a checkpoint beyond a lowered budget; one within it resumes.
    fake_checkpoint(files.run_dir, 10)
    dump(files.run_dir, 10)
    assert prepare_run_dir(files, {"recipe": 2}, max_steps=20).step == 10
    assert prepare_run_dir(files, {"recipe": 2}, max_steps=5) == ResumeState(None, True)


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
    cfg = verl_cfg(train={"eval_interval": 2})
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
    summary = run_verl(cfg, cell, paths)
    assert summary["steps"] == 3 and summary["resumed_from"] is None and summary["dumps_annotated"] == 3
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
    monkeypatch.setattr(verl_run.subprocess, "Popen", fake_popen(lambda argv, env: 1))
    with pytest.raises(RuntimeError, match="verl exited with status 1"):
        run_verl(cfg, cell, paths)
    with pytest.raises(InputError, match="fewer than B_p = 64"):
        run_verl(cfg, Cell("easy", 64, 8, 3, 1536), paths)


def test_training_pass_rates_come_from_verls_rollout_dumps(tmp_path):
    """verl's per-step rollout dumps -> the local backend's train_pass_rates.jsonl records,
    problems named by rendering the split's prompts the way verl renders and dumps them."""
    from isocompute.data.pool import Family, embedded_pool
    from isocompute.model.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    pool = embedded_pool([Family("a", 2, (1, 1), "+", 0.5)], 3, 0, "Put it in \\boxed{}.")
    pool.to_parquet(tmp_path / "train.parquet")
    index = prompt_index(tmp_path / "train.parquet", str(tmp_path / "tok"))
    assert sorted(index.values()) == ["arith-000000", "arith-000001", "arith-000002"]

    # Two prompts x 3 rollouts at step 5, as verl's trainer dumps them: the input is the
    # left-padded prompt decoded without special tokens, the uid '{prompt}_{session}_{output}'.
    write = verl_write_generations()
    inputs, scores, uids = [], [], []
    for p, (messages, hits) in enumerate([(pool["prompt"][1], 2), (pool["prompt"][2], 0)]):
        ids = tok.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True, tokenize=True)
        ids = [tok.pad_token_id] * 7 + list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        for i in range(3):
            inputs.append(tok.decode(ids, skip_special_tokens=True))
            scores.append(1.0 if i < hits else 0.0)
            uids.append(f"uid{p}_0_{i}")
    files = VerlRunFiles(tmp_path / "run")
    write(inputs, ["out"] * 6, ["4"] * 6, scores, {"uid": uids}, str(files.rollouts), 5)
    write(inputs[:3], ["out"] * 3, ["4"] * 3, [1.0] * 3, {"uid": uids[:3]}, str(files.rollouts), 6)
    recorder = PassRateRecorder(files, index.get)
    assert recorder.collect() == 1 and not (files.rollouts / "5.jsonl").exists()  # step 6 may be unfinished
    assert read_jsonl(files.pass_rates) == [
        {"step": 5, "problem_id": "arith-000001", "pass_rate": pytest.approx(2 / 3)},
        {"step": 5, "problem_id": "arith-000002", "pass_rate": 0.0}]
    assert recorder.collect(final=True) == 1 and read_jsonl(files.pass_rates)[-1]["step"] == 6
    # A prompt the index does not know is still counted, under a digest of its text.
    rec = step_pass_rates([{"step": 1, "input": "??", "score": 1.0, "uid": "u_0_0"}], {}.get)
    assert rec[0]["problem_id"].startswith("input-") and rec[0]["pass_rate"] == 1.0


# --- checkpoint conversion -------------------------------------------------------------

def test_merge_command_is_what_verls_merger_parses(tmp_path, monkeypatch):
    run = tmp_path / "run"
    fake_checkpoint(run, 20)
    actor = actor_checkpoint_dir(run)
    assert actor == run / "checkpoints" / "global_step_20" / "actor"
    argv = merge_command(actor, tmp_path / "hf", python="python")
    assert argv[:6] == ["python", "-m", "verl.model_merger", "merge", "--backend", "fsdp"]
    from verl.model_merger.base_model_merger import parse_args

    monkeypatch.setattr(sys, "argv", ["verl.model_merger", *argv[3:]])
    args = parse_args()
    assert (args.operation, args.backend, args.local_dir, args.target_dir) == \
        ("merge", "fsdp", str(actor.resolve()), str((tmp_path / "hf").resolve()))
    from verl.model_merger.base_model_merger import generate_config_from_args

    assert generate_config_from_args(args).hf_model_config_path == str(actor.resolve() / "huggingface")
    with pytest.raises(InputError, match="global_step_7"):
        actor_checkpoint_dir(run, 7)
    with pytest.raises(InputError, match="no complete verl checkpoint"):
        actor_checkpoint_dir(tmp_path / "empty")


def test_convert_checkpoint_publishes_a_complete_directory(tmp_path):
    run = tmp_path / "run"
    fake_checkpoint(run, 4)

    def merger(argv):
        target = Path(argv[argv.index("--target_dir") + 1])
        target.mkdir(parents=True)
        (target / "config.json").write_text("{}")
        return subprocess.CompletedProcess(argv, 0)

    out = convert_checkpoint(run, tmp_path / "hf" / "final", runner=merger)
    assert (out / "config.json").is_file() and not (tmp_path / "hf" / ".final.tmp").exists()
    with pytest.raises(RuntimeError, match="no config.json"):
        convert_checkpoint(run, tmp_path / "hf" / "bad", runner=lambda argv: subprocess.CompletedProcess(argv, 0))


def test_verl_merge_cli_prints_the_command(tmp_path):
    fake_checkpoint(tmp_path / "run", 8)
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "verl-merge", "--run-dir", str(tmp_path / "run"),
                           "--out", str(tmp_path / "hf"), "--print-only"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "-m verl.model_merger merge --backend fsdp --local_dir" in proc.stdout
    assert "global_step_8/actor" in proc.stdout


# --- the vLLM sampler -----------------------------------------------------------------

class FakeTokenizer:
    eos_token_id, pad_token_id = 2, 0

    def batch_decode(self, seqs, skip_special_tokens=True):
        return [" ".join(str(t) for t in s if not (skip_special_tokens and t == 2)) for s in seqs]


def fake_vllm(calls: dict) -> types.ModuleType:
    """A stand-in `vllm` module recording how the sampler drives it."""
    mod = types.ModuleType("vllm")

    class SamplingParams:
        def __init__(self, **kw):
            self.kw = kw

    class LLM:
        def __init__(self, **kw):
            calls["engine"] = kw

        def generate(self, prompts, params, use_tqdm=True):
            calls.setdefault("generate", []).append((prompts, params, use_tqdm))
            out = []
            for prompt, p in zip(prompts, params):
                comps = [types.SimpleNamespace(token_ids=[prompt["prompt_token_ids"][0], 100 + i, 2])
                         for i in range(p.kw["n"])]
                out.append(types.SimpleNamespace(outputs=comps))
            return out

    mod.SamplingParams, mod.LLM = SamplingParams, LLM
    return mod


def test_vllm_sampler_maps_config_and_params_onto_the_engine(monkeypatch):
    from isocompute.cluster.vllm_sampler import VLLMSampler, prompt_seed

    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm(calls))
    cfg = check_config({"seed": 3, "sampling": {"backend": "vllm", "batch_size": 8},
                        "cluster": {"vllm": {"tensor_parallel_size": 2, "max_model_len": 4096}}})
    sampler = VLLMSampler("/models/m", cfg, tokenizer=FakeTokenizer())
    assert calls["engine"] == {"model": "/models/m", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9,
                               "dtype": "bfloat16", "enforce_eager": False, "seed": 3, "max_model_len": 4096}

    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    bar = Bar()
    prompts = [[10 + i, 99] for i in range(5)]
    out = sampler.sample(prompts, 4, SamplingParams(0.6, 1.0, 32), seed=7, progress=bar)
    # batch_size 8 sequences / n 4 = 2 prompts per engine call: 3 calls for 5 prompts.
    assert len(calls["generate"]) == 3 and all(c[2] is False for c in calls["generate"])
    assert calls["generate"][0][0] == [{"prompt_token_ids": [10, 99]}, {"prompt_token_ids": [11, 99]}]
    kws = [p.kw for c in calls["generate"] for p in c[1]]
    assert kws[0] == {"n": 4, "temperature": 0.6, "top_p": 1.0, "max_tokens": 32, "top_k": -1, "min_p": 0.0,
                      "repetition_penalty": 1.0, "skip_special_tokens": True, "seed": prompt_seed(7, 0)}
    assert len({k["seed"] for k in kws}) == 5 and kws[4]["seed"] == prompt_seed(7, 4)
    assert [len(g) for g in out] == [4] * 5 and out[3][1] == [13, 101, 2]  # EOS kept
    assert bar.n == 5
    assert sampler.decode(out[3]) == ["13 100", "13 101", "13 102", "13 103"]


def test_vllm_sampler_without_vllm_says_what_to_do(monkeypatch):
    from isocompute.cluster.vllm_sampler import VLLMSampler

    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(InputError, match="sampling.backend.*vllm.*envs/verl.yaml"):
        VLLMSampler("m", check_config({"sampling": {"backend": "vllm"}}), tokenizer=FakeTokenizer())


def test_make_sampler_builds_the_vllm_sampler(monkeypatch):
    from isocompute import stages
    from isocompute.cluster.vllm_sampler import VLLMSampler

    monkeypatch.setitem(sys.modules, "vllm", fake_vllm({}))
    import transformers

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", staticmethod(lambda p: FakeTokenizer()))
    sampler = stages.make_sampler(check_config({"sampling": {"backend": "vllm"}}), "/models/m")
    assert isinstance(sampler, VLLMSampler) and isinstance(sampler.tokenizer, FakeTokenizer)


# --- the plan ---------------------------------------------------------------------------

def test_plan_counts_runs_rollouts_and_gpu_hours():
    cfg = load_config(PAPER_MAIN)
    costs = cell_costs(cfg)
    assert costs.groupby("split").size().to_dict() == {"easy": 39, "hard": 27}
    assert (costs["rollouts"] <= 4194304).all() and (costs["rollouts"] > 4194304 - 65536).all()
    summary = split_summary(costs, cfg["cluster"]["max_runtime"])
    assert summary.loc["total", "runs"] == 66
    # The cost model by hand for one cell: easy bp1024_n64, B = 65536, M = 64, 8 GPUs.
    row = costs[(costs.B_p == 1024) & (costs.n == 64)].iloc[0]
    step_h = 60 / 3600 + 65536 / (6000 * 8)
    evals = evaluations(64, 10)
    assert evals == 8  # steps 0, 10, ..., 60 and 64
    assert row["gpu_hours"] == pytest.approx(8 * (64 * step_h + evals * 300 * 4 / (6000 * 8)))
    text = format_plan(cfg)
    assert "66 training runs" in text and "6,000 rollouts per GPU-hour" in text


@pytest.mark.parametrize("path", PAPER, ids=[p.stem for p in PAPER])
def test_paper_configs_check_and_plan(path):
    cfg = load_config(path)
    assert cfg["train"]["backend"] == "verl" and cfg["sampling"]["backend"] == "vllm"
    assert cfg["base_model"]["source"] == "path" and cfg["pool"]["data_source"] == "math"
    assert cfg["train"]["lr_base"] == 1e-6 and cfg["train"]["B_ref"] == 1024
    assert cfg["eval"] == {"k": 4, "samples": 4} and cfg["splits"]["val_size"] == 300
    for split, spec in cfg["grid"].items():
        assert spec["B_max"] == (65536 if split == "easy" else 16384)
    assert grid_cells(cfg)
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "plan", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0 and "GPU-hours" in proc.stdout, proc.stderr


def test_docs_state_each_paper_configs_plan():
    """docs/cluster.md quotes `isocompute plan` for every paper config; keep them in step."""
    doc = (REPO / "docs" / "cluster.md").read_text()
    for path in PAPER:
        cfg = load_config(path)
        total = split_summary(cell_costs(cfg), cfg["cluster"]["max_runtime"]).loc["total"]
        assert f"`config/paper/{path.name}`" in doc
        assert f"{int(total['runs'])} runs" in doc and f"{total['gpu_hours']:,.0f}" in doc, path.name


# --- SLURM resources and the profile ---------------------------------------------------------

def test_gpu_and_cpu_resources_come_from_the_config():
    cfg = check_config({"cluster": {"gpu_model": "h200", "max_runtime": 2000,
                                    "train": {"gpus": 4, "runtime": 900, "mem_mb": 1000, "cpus_per_gpu": 6}}})
    res = gpu_job_resources(cfg, "train")
    assert {k: v for k, v in res.items() if k != "runtime"} == \
        {"gpu": 4, "gpu_model": "h200", "cpus_per_gpu": 6, "mem_mb": 1000}
    assert [res["runtime"](None, a) for a in (1, 2, 3)] == [900, 1800, 2000]
    gres = gpu_job_resources(check_config({"cluster": {"gres": "gpu:a100:8"}}), "sample")
    assert gres["gres"] == "gpu:a100:8" and "gpu" not in gres and "gpu_model" not in gres
    cpu = cpu_job_resources(cfg)
    assert set(cpu) == {"mem_mb", "runtime"}
    for r in (res, gres, cpu):
        assert "cpus_per_task" not in r
    assert attempt_runtime(30, 45)(None, 2) == 45


def test_the_slurm_profile_resolves_from_the_repo_root(monkeypatch):
    """A bare `--profile slurm` is looked up in the working directory first (snakemake 9.27)."""
    from snakemake.cli import get_profile_dir

    monkeypatch.chdir(REPO)
    directory, config_file = get_profile_dir("slurm")
    assert Path(directory).resolve() == REPO / "slurm" and Path(config_file).name == "config.yaml"
    profile = yaml.safe_load((REPO / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["retries"] >= 1
    assert {"slurm_account", "slurm_partition"} <= set(profile["default-resources"])
    # cpus_per_task in default resources would silently override every GPU job's cpus_per_gpu.
    assert "cpus_per_task" not in profile["default-resources"]


def dry_run(path: Path, workdir: Path) -> subprocess.CompletedProcess:
    for name in ("Snakefile", "rules", "config", "workflow", "envs", "slurm"):
        src = REPO / name
        target = workdir / name
        if not target.exists():
            (os.symlink if src.is_dir() else os.symlink)(src, target)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(VENV_BIN / "snakemake"), "-n", "--profile", "slurm", "--configfile",
                           f"config/paper/{path.name}"], cwd=workdir, env=env, capture_output=True, text=True)


def jobs_of(output: str) -> list[dict]:
    """(rule, wildcards, resources, shell) of each job of a dry run's printout."""
    jobs, cur = [], None
    for line in output.splitlines():
        if line.startswith(("rule ", "localrule ")):
            cur = {"rule": line.split()[1].rstrip(":"), "resources": {}, "wildcards": {}}
            jobs.append(cur)
        elif cur is not None and line.strip().startswith("resources:"):
            cur["resources"] = dict(kv.split("=", 1) for kv in line.split(":", 1)[1].strip().split(", "))
        elif cur is not None and line.strip().startswith("wildcards:"):
            cur["wildcards"] = dict(kv.split("=", 1) for kv in line.split(":", 1)[1].strip().split(", "))
        elif cur is not None and line.startswith("Shell command:"):
            cur["shell"] = line.split(":", 1)[1]
    return jobs


@pytest.mark.parametrize("path", PAPER, ids=[p.stem for p in PAPER])
def test_dry_run_with_the_slurm_profile_builds_the_full_dag(path, tmp_path):
    proc = dry_run(path, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cfg = load_config(path)
    jobs = jobs_of(proc.stdout)
    trains = [j for j in jobs if j["rule"] == "train"]
    expected = pd.Series([c.split for c in grid_cells(cfg)]).value_counts().to_dict()
    assert pd.Series([j["wildcards"]["split"] for j in trains]).value_counts().to_dict() == expected
    assert sum(j["rule"] == "score" for j in jobs) == len(trains)
    for job in trains:
        r = job["resources"]
        assert (r["gpu"], r["gpu_model"], r["cpus_per_gpu"]) == ("8", "h200", "8")
        assert int(r["runtime"]) == cfg["cluster"]["train"]["runtime"] and int(r["mem_mb"]) == 512000
        assert "cpus_per_task" not in r
        # verl's own settings travel with the rule's params.
        assert '"cluster": {"train":' in job["shell"] and '"backend": "verl"' in job["shell"]
    diff = next(j for j in jobs if j["rule"] == "difficulty")
    assert diff["resources"]["gpu"] == "1" and '"vllm": {' in diff["shell"]
    assert not any(j["rule"] == "base_model" for j in jobs)  # a hub model is not built
