"""SLURM resources from the config, the slurm profile, and the full DAG of every
paper config under `snakemake -n --profile slurm`. The real SLURM run is in
test_cluster_slurm.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, VENV_BIN
from isocompute.cluster.resources import attempt_runtime, cpu_job_resources, gpu_job_resources
from isocompute.config import check_config, load_config
from isocompute.grid import grid_cells

PAPER = sorted((REPO / "config" / "paper").glob("*.yaml"))


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
    # The data a user fetches before launching (the pipeline checks that it exists).
    pool = load_config(path)["pool"]
    if pool["source"] == "file":
        (workdir / pool["path"]).parent.mkdir(parents=True, exist_ok=True)
        (workdir / pool["path"]).touch()
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
