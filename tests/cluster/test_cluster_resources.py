"""SLURM resources from the config, the slurm profile, and the full DAG of every
paper config under `snakemake -n --profile slurm`. The real SLURM run is in
test_cluster_slurm.py.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from isocompute.cluster.resources import attempt_runtime, cpu_job_resources, gpu_job_resources
from isocompute.config import check_config, load_config
from isocompute.grid import grid_cells
from support import REPO, VENV_BIN

PAPER = sorted((REPO / "config" / "paper").glob("*.yaml"))
# Configs that only draw finished studies side by side (compare, no grid or variants) train
# nothing: tests/analysis/outputs/test_compare.py covers them.
TRAINING = [p for p in PAPER if not (yaml.safe_load(p.read_text()).get("compare")
                                     and not yaml.safe_load(p.read_text()).get("grid"))]


def test_gpu_and_cpu_resources_come_from_the_config():
    cfg = check_config({"cluster": {"gpu_model": "h200", "max_runtime": 2000,
                                    "train": {"gpus": 4, "runtime": 900, "mem_mb": 1000, "cpus_per_gpu": 6}}})
    res = gpu_job_resources(cfg, "train")
    assert {k: v for k, v in res.items() if k != "runtime"} == \
        {"gpu": 4, "gpu_model": "h200", "nodes": 1, "cpus_per_gpu": 6, "mem_mb": 1000}
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


def dry_run(path: Path, workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """`snakemake -n --profile slurm` of a paper config (or of a config file inside `workdir`)."""
    for name in ("Snakefile", "rules", "config", "workflow", "envs", "slurm", "docs"):
        src = REPO / name
        target = workdir / name
        if not target.exists():
            os.symlink(src, target)
    # The data a user fetches before launching (the pipeline checks that it exists).
    cfg = load_config(path)
    pool = cfg["pool"]
    if pool["source"] == "file":
        (workdir / pool["path"]).parent.mkdir(parents=True, exist_ok=True)
        (workdir / pool["path"]).touch()
    for s in cfg["eval"].get("extra_sets", []):   # an out-of-domain set given by path (checked: verl's columns)
        if "path" in s:
            (workdir / s["path"]).parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame({"data_source": [s["name"]], "prompt": [[{"role": "user", "content": "q"}]],
                          "reward_model": [{"style": "rule", "ground_truth": "1"}]}).to_parquet(workdir / s["path"])
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    config = path.relative_to(workdir) if path.is_relative_to(workdir) else Path("config/paper") / path.name
    argv = [str(VENV_BIN / "snakemake"), "-n", *args, "--profile", "slurm", "--configfile", str(config)]
    return subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True)


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


@pytest.mark.parametrize("path", TRAINING, ids=[p.stem for p in TRAINING])
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
        assert '"cluster": {"gres": ' in job["shell"] and '"backend": "verl"' in job["shell"]
    # avg@16 in cluster.sample.jobs parallel GPU jobs of whole chunks, merged by a CPU job.
    chunks = [j for j in jobs if j["rule"] == "difficulty_chunk"]
    assert len(chunks) == cfg["cluster"]["sample"]["jobs"] == 16
    assert sorted(j["wildcards"]["part"] for j in chunks) == [f"{p:03d}" for p in range(16)]
    for diff in chunks:
        assert diff["resources"]["gpu"] == "1" and '"vllm": {' in diff["shell"] and " --parts 16 " in diff["shell"]
    merge = next(j for j in jobs if j["rule"] == "difficulty")
    assert "gpu" not in merge["resources"] and "isocompute difficulty-merge" in merge["shell"]
    assert not any(j["rule"] == "base_model" for j in jobs)  # a hub model is not built


# --- the sbatch call and the job step the SLURM plugin builds from our resources -----

class _Resources(dict):
    """The slice of snakemake's job.resources the plugin reads: .get() and attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class _Job:
    def __init__(self, resources: dict, threads: int):
        self.resources, self.threads = _Resources(resources), threads


def plugin_job(job: dict) -> _Job:
    """A dry run's job as the plugin sees it: integer resources as ints, threads from the command."""
    res = {k: int(v) if v.isdigit() else v for k, v in job["resources"].items() if "<TBD>" not in v}
    threads = int(job["shell"].split(" --threads ", 1)[1].split()[0])
    return _Job(res, threads)


def slurm_calls(job: _Job, *, slurm_gpus: str | None) -> tuple[str, str]:
    """The plugin's sbatch call for the job (as its run_job builds it), and the job step's srun
    options inside the allocation (SLURM_GPUS is set only when the job asked with --gpus, not --gres)."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string
    from snakemake_executor_plugin_slurm_jobstep import get_cpu_setting, get_gpu_setting, get_node_setting

    params = {"run_uuid": "u", "slurm_logfile": "log", "comment_str": "c", "account": "", "partition": "",
              "workdir": "."}
    sbatch = get_submit_command(job, params) + set_gres_string(job)
    step = " ".join([get_cpu_setting(job, slurm_gpus), get_gpu_setting(job), get_node_setting(job)])
    return sbatch, step


@pytest.mark.parametrize("gres", [None, "gpu:h200:8"], ids=["gpus", "gres"])
def test_gpu_jobs_ask_for_one_node_and_run_their_step_on_all_their_cpus(gres, tmp_path):
    """A verl run is one node (verl is told nnodes=1): sbatch gets --nodes=1, and the job
    step gets every CPU of the job, also where GPUs come through --gres (the plugin's step
    then asks for --cpus-per-task=threads, not --cpus-per-gpu)."""
    path = tmp_path / "main.yaml"
    cfg = yaml.safe_load((REPO / "config" / "paper" / "qwen25_7b.yaml").read_text())
    if gres:  # one literal request for every GPU job: here both ask for 8
        cfg["cluster"]["gres"] = gres
        cfg["cluster"]["sample"]["gpus"] = 8
    path.write_text(yaml.safe_dump(cfg))
    # A dry run caps threads at --cores (1 by default); the submitting run has no cap.
    proc = dry_run(path, tmp_path, "--cores", "1024")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = jobs_of(proc.stdout)
    for rule, gpus in (("train", 8), ("difficulty_chunk", 8 if gres else 1)):
        job = plugin_job(next(j for j in jobs if j["rule"] == rule))
        sbatch, step = slurm_calls(job, slurm_gpus=None if gres else f"h200:{gpus}")
        assert " --nodes=1" in sbatch and "--cpus-per-gpu=8" in sbatch, sbatch
        assert (f"--gres={gres}" if gres else f"--gpus=h200:{gpus}") in sbatch, sbatch
        assert "--nodes=1" in step
        if gres:
            assert f"--cpus-per-task={8 * gpus}" in step, step
        else:
            assert "--cpus-per-gpu=8" in step and f"--gpus={gpus}" in step, step


def train_params(tmp_path: Path, name: str, rule: str = "train", sampling: dict | None = None, **cluster) -> dict:
    """The --params of the first `rule` job of the main paper config with `cluster` (and `sampling`) keys changed."""
    cfg = yaml.safe_load((REPO / "config" / "paper" / "qwen25_7b.yaml").read_text())
    cfg["sampling"] = {**cfg.get("sampling", {}), **(sampling or {})}
    for key, value in cluster.items():
        cfg["cluster"][key] = {**cfg["cluster"].get(key, {}), **value} if isinstance(value, dict) else value
    workdir = tmp_path / name
    workdir.mkdir()
    (workdir / "study.yaml").write_text(yaml.safe_dump(cfg))
    proc = dry_run(workdir / "study.yaml", workdir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shell = next(j for j in jobs_of(proc.stdout) if j["rule"] == rule)["shell"]
    assert rule != "train" or " --options results/paper_qwen25_7b/runs/options.json " in shell
    return json.loads(shlex.split(shell.split("--params", 1)[1])[0])


def test_time_memory_cpus_and_retention_are_not_the_train_rules_params(tmp_path):
    """The train rule's params are its rerun contract: a longer time limit, more memory or CPUs,
    or another checkpoint retention must not resubmit finished runs; GPUs and verl's engine
    settings shape the run and stay in."""
    base = train_params(tmp_path, "base")
    same = train_params(tmp_path, "resources", max_runtime=4000,
                        train={"runtime": 600, "mem_mb": 256000, "cpus_per_gpu": 5},
                        verl={"max_checkpoints": 2, "max_dropped_prompt_share": 0.5, "storage_units": 4})
    assert same == base
    assert base["cluster"]["train"] == {"gpus": 8}
    # They reach the jobs through the train_options rule's file, an ancient input of theirs.
    options = train_params(tmp_path, "options", "train_options", train={"cpus_per_gpu": 5},
                           verl={"max_checkpoints": 2})
    assert options == {"cluster": {"train": {"cpus_per_gpu": 5},
                                   "verl": {"max_checkpoints": 2, "max_dropped_prompt_share": 0.01,
                                            "storage_units": 8}},
                       "tracking": {"backends": [], "project": None, "dir": None, "wandb_mode": "offline"}}
    assert train_params(tmp_path, "gpus", train={"gpus": 4}) != base
    # The difficulty sampler's chunking is not training's either; the rollout temperature is.
    assert train_params(tmp_path, "chunks", sampling={"chunk_size": 77}) == base
    assert train_params(tmp_path, "temperature", sampling={"temperature": 0.9}) != base
    assert train_params(tmp_path, "engine", verl={"gpu_memory_utilization": 0.5}) != base


def test_the_checkpoint_merge_is_a_cluster_job(tmp_path):
    """Converting a finished run to a Hugging Face model holds the whole model in memory: a rule
    submitted as a SLURM job with cluster.merge's memory, not a command on the login node."""
    proc = dry_run(REPO / "config" / "paper" / "qwen25_7b.yaml", tmp_path,
                   "results/paper_qwen25_7b/models/easy/bp32_n512")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = jobs_of(proc.stdout)
    merge = next(j for j in jobs if j["rule"] == "merge_checkpoint")
    assert "localrule merge_checkpoint" not in proc.stdout
    assert merge["wildcards"] == {"split": "easy", "B_p": "32", "n": "512", "rep": ""}
    assert int(merge["resources"]["mem_mb"]) == 256000 and "gpu" not in merge["resources"]
    assert "isocompute verl-merge --run-dir results/paper_qwen25_7b/runs/easy/bp32_n512" in merge["shell"]
    assert "--out results/paper_qwen25_7b/models/easy/bp32_n512" in merge["shell"]
    assert any(j["rule"] == "train" and j["wildcards"].get("n") == "512" for j in jobs)
