"""The verl command of a grid cell on the CPU: the recipe as verl overrides,
where verl reads and writes, Hydra quoting, options verl cannot honour, and
`isocompute verl-command`. That verl itself resolves these commands is checked
in test_cluster_verl.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from isocompute.config import check_config
from isocompute.errors import ConfigError
from isocompute.grid import Cell
from isocompute.layout import RunPaths
from isocompute.train.backends.verl.limits import check_study_cells, check_supported
from isocompute.train.backends.verl.overrides import hydra_value, verl_command, verl_overrides
from isocompute.train.recipe import cell_recipe
from support import REPO, VENV_BIN
from support.verl import overrides_dict, verl_cfg

PAPER_MAIN = REPO / "config" / "paper" / "qwen25_7b.yaml"


@pytest.fixture
def run_paths(tmp_path) -> RunPaths:
    return RunPaths(tmp_path / "runs" / "easy" / "bp32_n8", tmp_path / "train.parquet", tmp_path / "val.parquet",
                    "Qwen/Qwen2.5-7B-Instruct")


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
    # The compute-matched schedule: verl asks every step, the scheduled trainer answers at the recipe's steps.
    assert easy["trainer.test_freq"] == easy["trainer.save_freq"] == "1"
    assert easy["trainer.v1.trainer_mode"] == "isocompute_scheduled"
    steps = cell_recipe(cfg, Cell("easy", 32, 8, 640, 163840)).eval_steps
    assert easy["+trainer.isocompute_eval_steps"] == "[" + ",".join(map(str, steps)) + "]"
    assert steps[0] == 0 and steps[-1] == 640
    # The paper's periodic schedule is verl's own test_freq/save_freq.
    periodic = overrides_dict(verl_overrides(verl_cfg(train={"eval_schedule": "steps"}),
                                             Cell("easy", 32, 8, 640, 163840), run_paths))
    assert periodic["trainer.test_freq"] == periodic["trainer.save_freq"] == "10"
    assert not any("isocompute_eval_steps" in k for k in periodic)
    # Both run the project's trainer mode: it counts each step's timed-out rewards (verl.timeouts).
    for overrides in (easy, periodic):
        assert overrides["trainer.v1.trainer_mode"] == "isocompute_scheduled"
        assert overrides["+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook"] == \
            "isocompute.train.backends.verl.scheduled.register"
    # The reward function verl 0.9 actually reads (reward.*), not the legacy top-level keys.
    assert easy["reward.custom_reward_function.path"].endswith("isocompute/train/backends/verl/reward.py")
    assert easy["reward.custom_reward_function.name"] == "compute_score"
    assert not any(k.startswith("custom_reward_function.") for k in easy)


def test_a_rung_stops_verl_early_and_keeps_the_full_runs_recipe(run_paths):
    """An adaptive sweep's rung: trainer.total_training_steps is the rung's step and nothing else
    of the recipe moves (learning rate and warm-up, which do not read the total, epochs, seeds,
    validation steps), in both schedules; the stop step is checkpointed by the scheduled mode."""
    cell = Cell("easy", 32, 8, 640, 163840)
    for train in ({}, {"eval_schedule": "steps"}):
        cfg = verl_cfg(train=train)
        full = overrides_dict(verl_overrides(cfg, cell, run_paths))
        rung = overrides_dict(verl_overrides(cfg, cell, run_paths, stop_at_step=77))
        assert rung["trainer.total_training_steps"] == "77" and rung["+trainer.isocompute_stop_step"] == "77"
        # The recipe's schedule as verl's flat cosine counted from 1 (overrides.lr_schedule_overrides).
        assert (full["actor_rollout_ref.actor.optim.lr_scheduler_type"], full["actor_rollout_ref.actor.optim.min_lr_ratio"],
                full["actor_rollout_ref.actor.optim.zero_indexed_step"]) == ("cosine", "1.0", "false")
        steps = "[" + ",".join(map(str, cell_recipe(cfg, cell).eval_steps)) + "]"
        assert rung["+trainer.isocompute_eval_steps"] == steps and rung["trainer.v1.trainer_mode"] == \
            "isocompute_scheduled"
        changed = {k for k in full.keys() | rung.keys() if full.get(k) != rung.get(k)}
        scheduled_keys = {"trainer.test_freq", "trainer.save_freq", "trainer.v1.trainer_mode",
                          "+trainer.isocompute_eval_steps",
                          "+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook"}
        assert changed - scheduled_keys == {"trainer.total_training_steps", "+trainer.isocompute_stop_step"}
        assert not train or changed & scheduled_keys  # the periodic schedule switches to the scheduled mode
        # The last rung is the full run's command.
        assert overrides_dict(verl_overrides(cfg, cell, run_paths, stop_at_step=640)) == full
    # An extra override that makes the learning rate read the session's length is refused, before
    # any job (a study check: train jobs are given no sweep section).
    cosine = verl_cfg(sweep={"mode": "adaptive"},
                      cluster={"verl": {"extra_overrides": ["actor_rollout_ref.actor.optim.lr_scheduler_type=cosine"]}})
    with pytest.raises(ConfigError, match="extra_overrides.*lr_scheduler_type is not allowed with sweep.mode"):
        check_study_cells(cosine, [cell])


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


def test_verl_topology_is_the_train_jobs(run_paths):
    """verl runs on the one node the train job asks for, with the GPUs and CPUs the job gets
    (cluster.train.gpus, or the count of a literal cluster.gres)."""
    cell = Cell("easy", 32, 8, 10, 2560)
    plain = overrides_dict(verl_overrides(verl_cfg(cluster={"train": {"gpus": 4, "cpus_per_gpu": 6}}), cell,
                                          run_paths))
    assert (plain["trainer.nnodes"], plain["trainer.n_gpus_per_node"]) == ("1", "4")
    assert plain["ray_kwargs.ray_init.num_cpus"] == "24"
    gres = overrides_dict(verl_overrides(verl_cfg(cluster={"gres": "gpu:h200:2"}), cell, run_paths))
    assert (gres["trainer.nnodes"], gres["trainer.n_gpus_per_node"]) == ("1", "2")
    assert gres["ray_kwargs.ray_init.num_cpus"] == "16"
    with pytest.raises(ConfigError, match="cluster.gres"):
        check_config({"cluster": {"gres": "h200:8"}})


def test_the_train_jobs_options_reach_verl_but_not_its_identity(run_paths):
    """CPUs and checkpoint retention come to the job outside its params (--options) and reach
    verl's command; they are not part of the run identity, the GPUs and engine settings are."""

    from isocompute.cli.common import config_from_params
    from isocompute.train.backends.verl.run import run_identity

    from isocompute import jobs

    full = verl_cfg(cluster={"train": {"cpus_per_gpu": 5, "runtime": 60}, "verl": {"max_checkpoints": 2}})
    cell = Cell("easy", 32, 8, 10, 2560)
    cfg = config_from_params(jobs.as_json(jobs.train_params(full, cell)), jobs.as_json(jobs.train_options(full)))
    o = overrides_dict(verl_overrides(cfg, cell, run_paths))
    assert o["trainer.max_actor_ckpt_to_keep"] == "2" and o["ray_kwargs.ray_init.num_cpus"] == "40"
    for f in (run_paths.train_file, run_paths.val_file):
        Path(f).write_text("rows")
    identity = run_identity(cfg, cell, run_paths)
    assert identity == run_identity(verl_cfg(), cell, run_paths)
    assert identity != run_identity(verl_cfg(cluster={"train": {"gpus": 4}}), cell, run_paths)


def test_train_options_are_checked_and_written(tmp_path):
    import json

    from isocompute.cli import main

    options = {"cluster": {"train": {"cpus_per_gpu": 4}, "verl": {"max_checkpoints": 2}}}
    assert main(["train-options", "--params", json.dumps(options), "--out", str(tmp_path / "o.json")]) == 0
    assert json.loads((tmp_path / "o.json").read_text()) == options
    bad = {"cluster": {"verl": {"max_checkpoint": 2}}}
    assert main(["train-options", "--params", json.dumps(bad), "--out", str(tmp_path / "b.json")]) == 2


def test_ray_cpus_for_verls_workers_and_transfer_queue_are_checked_by_key():
    """verl holds 3 Ray CPUs per GPU for its workers, TransferQueue 1 for its controller and 1
    per storage unit, and 1 must stay free to start the rest: with fewer, tq.init waits forever.
    The cluster defaults (8 GPUs x 8 CPUs, 8 units) fit; one GPU with 8 CPUs does not."""
    from isocompute.train.backends.verl.limits import ray_cpus_needed

    assert ray_cpus_needed(verl_cfg()) == 34 and verl_cfg()["cluster"]["verl"]["storage_units"] == 8
    assert verl_cfg()["cluster"]["train"]["cpus_per_gpu"] * 8 >= 34
    one_gpu = {"train": {"gpus": 1}}
    with pytest.raises(ConfigError, match=r"config key 'cluster.train.cpus_per_gpu': verl needs 13 Ray CPUs .*"
                                          r"Set cluster.train.cpus_per_gpu to at least 13, or "
                                          r"cluster.verl.storage_units to at most 3"):
        check_supported(verl_cfg(cluster=one_gpu))
    check_supported(verl_cfg(cluster={**one_gpu, "verl": {"storage_units": 3}}))
    check_supported(verl_cfg(cluster={"train": {"gpus": 1, "cpus_per_gpu": 13}}))


def test_cpu_runs_take_the_cpu_platform(run_paths):
    """train.device cpu with backend verl: verl's plugin hook loads the CPU platform, one logical
    GPU, FSDP2, the HF rollout server, TransferQueue's storage units as configured."""
    from isocompute.train.backends.verl.cpu import PLUGIN_MODULE, ROLLOUT_NAME
    from isocompute.train.backends.verl.overrides import verl_command

    cell = Cell("easy", 2, 2, 4, 16)
    cfg = verl_cfg(train={"device": "cpu"}, cluster={"verl": {"storage_units": 1}})
    command = verl_command(cfg, cell, run_paths)
    o = overrides_dict(command.argv[3:])
    assert command.env["VERL_USE_EXTERNAL_MODULES"] == PLUGIN_MODULE and command.env["VERL_PLATFORM"] == "cpu"
    assert (o["trainer.device"], o["trainer.n_gpus_per_node"], o["+ray_kwargs.ray_init.num_gpus"]) == ("cpu", "1", "1")
    assert o["actor_rollout_ref.rollout.name"] == ROLLOUT_NAME and o["actor_rollout_ref.actor.strategy"] == "fsdp2"
    assert o["+actor_rollout_ref.model.override_config.attn_implementation"] == "sdpa"
    assert o["transfer_queue.backend.SimpleStorage.num_data_storage_units"] == "1"
    assert o["ray_kwargs.ray_init.num_cpus"] == "8"
    gpu = verl_command(verl_cfg(), cell, run_paths)
    assert "VERL_PLATFORM" not in gpu.env and overrides_dict(gpu.argv[3:])["trainer.device"] == "cuda"


def test_cpu_runs_can_take_verls_own_vllm_rollout(run_paths):
    """cluster.verl.cpu_rollout vllm: verl's vLLM rollout, without sleep mode, float32 like the
    actor, its KV cache from cluster.vllm.kv_cache_gib (a run option, not the run's identity);
    a GPU run's params and options do not carry the choice."""
    from isocompute import jobs
    from isocompute.train.backends.verl.overrides import verl_command

    cell = Cell("easy", 2, 2, 4, 16)
    cfg = verl_cfg(train={"device": "cpu"}, base_model={"hidden_size": 64, "num_heads": 2},
                   cluster={"verl": {"storage_units": 1, "cpu_rollout": "vllm"}, "vllm": {"kv_cache_gib": 3}})
    command = verl_command(cfg, cell, run_paths)
    o = overrides_dict(command.argv[3:])
    rollout = "actor_rollout_ref.rollout."
    assert {k: o[rollout + k] for k in ("name", "free_cache_engine", "dtype", "enforce_eager")} \
        == {"name": "vllm", "free_cache_engine": "false", "dtype": "float32", "enforce_eager": "true"}
    assert o["+" + rollout + "enable_sleep_mode"] == "false"
    assert command.env["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert jobs.train_params(cfg, cell)["cluster"]["verl"]["cpu_rollout"] == "vllm"
    assert jobs.train_options(cfg)["cluster"]["vllm"] == {"kv_cache_gib": 3}
    hf = verl_command(verl_cfg(train={"device": "cpu"}, cluster={"verl": {"storage_units": 1}}), cell, run_paths)
    assert overrides_dict(hf.argv[3:])[rollout + "name"] == "hf_cpu" and "VLLM_CPU_KVCACHE_SPACE" not in hf.env
    gpu = verl_cfg()
    assert "cpu_rollout" not in jobs.train_params(gpu, cell)["cluster"]["verl"]
    assert "vllm" not in jobs.train_options(gpu)["cluster"]


@pytest.mark.parametrize("warmup", [0, 1, 3, 10])
def test_verls_own_scheduler_runs_the_recipes_learning_rate_at_every_update(run_paths, warmup):
    """verl 0.9.1's FSDP engine builds its scheduler from the command's optim keys
    (FSDPEngine._build_lr_scheduler, total_training_steps injected from the trainer's), runs update
    k at the rate it holds, then steps it and logs the new rate as actor/lr. Every update's rate
    must be the recipe's (train.recipe.warmup_lr: update 1 at lr / warmup_steps, not 0), in a full
    run and in a rung's session, and the logged rate the next update's."""
    import types

    import torch
    from verl.workers.config.optimizer import FSDPOptimizerConfig
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngine

    cell = Cell("easy", 32, 8, 24, 6144)
    cfg = verl_cfg(train={"warmup_steps": warmup})
    recipe = cell_recipe(cfg, cell)
    for stop in (None, 5):
        over = overrides_dict(verl_overrides(cfg, cell, run_paths, stop_at_step=stop))
        prefix = "actor_rollout_ref.actor.optim."
        optim = {k.removeprefix(prefix): hydra_scalar(v) for k, v in over.items() if k.startswith(prefix)}
        config = FSDPOptimizerConfig(**optim, total_training_steps=int(over["trainer.total_training_steps"]))
        optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=config.lr)
        scheduler = FSDPEngine._build_lr_scheduler(types.SimpleNamespace(optimizer_config=config, rank=1), optimizer)
        used, logged = [], []
        for _ in range(cell.M_max if stop is None else stop):
            used.append(optimizer.param_groups[0]["lr"])
            scheduler.step()
            logged.append(scheduler.get_last_lr()[0])
        want = [recipe.lr_at(k) for k in range(1, len(used) + 2)]
        assert used == pytest.approx(want[:-1], rel=1e-12, abs=0), (stop, used, want)
        assert logged == pytest.approx(want[1:], rel=1e-12, abs=0), (stop, logged, want)
        assert used[0] > 0


def hydra_scalar(text: str):
    """A Hydra override's scalar value as Hydra reads it (bool, int, float or string)."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
