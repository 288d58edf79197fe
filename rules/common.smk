# Config checking, paths, wildcard constraints and the named input functions
# every stage uses. No grid or path logic lives inside rules.

import json
import sys

from isocompute.config import ConfigError, check_config

try:
    check_config(config)
except ConfigError as _err:
    # One line naming the key and what was expected, before any job is scheduled.
    sys.stderr.write(f"isocompute config error: {_err}\n")
    sys.exit(1)

EXP = config["experiment"]
RESULTS = f"results/{EXP}"
SPLITS = list(config["splits"]["names"])


wildcard_constraints:
    split="|".join(SPLITS) or "none",


def params_json(*sections):
    """The config sections a stage reads, as JSON for its --params."""
    keys = ("seed",) + sections
    return json.dumps({k: config[k] for k in keys}, sort_keys=True)


def base_model_input():
    """The embedded model directory when the pipeline builds it; nothing for a given path."""
    if config["base_model"]["source"] == "embedded":
        return f"{RESULTS}/model/base"
    return []


def base_model_path():
    if config["base_model"]["source"] == "embedded":
        return f"{RESULTS}/model/base"
    return config["base_model"]["path"]


def split_files(split):
    return {part: f"{RESULTS}/splits/{split}/{part}.parquet" for part in ("train", "val")}


def all_split_files():
    return [path for split in SPLITS for path in split_files(split).values()]


def data_targets():
    return all_split_files() + [f"{RESULTS}/figures/fig2_difficulty.png"]


def all_targets():
    return data_targets() + train_targets() + analysis_targets()


# --- training grid and scoring ---------------------------------------------------

from isocompute.grading import GRADER_VERSION
from isocompute.grid import find_cell, grid_cells

try:
    CELLS = grid_cells(config)
except ConfigError as _err:
    sys.stderr.write(f"isocompute config error: {_err}\n")
    sys.exit(1)


wildcard_constraints:
    B_p=r"[1-9][0-9]*",
    n=r"[1-9][0-9]*",


def run_dir(split, B_p, n):
    """results/{experiment}/runs/{split}/bp{B_p}_n{n}: one training run's directory."""
    return f"{RESULTS}/runs/{split}/bp{B_p}_n{n}"


def cell_of(wildcards):
    return find_cell(CELLS, wildcards.split, int(wildcards.B_p), int(wildcards.n))


def run_dir_of(wildcards):
    return run_dir(wildcards.split, wildcards.B_p, wildcards.n)


def max_steps_of(wildcards):
    """M_max = C_max // (B_p * n) of the cell."""
    return cell_of(wildcards).M_max


def train_inputs(wildcards):
    """The cell's split files, plus the base model when the pipeline builds it."""
    cell_of(wildcards)  # an unknown cell stops here with the reason
    return {**split_files(wildcards.split), "model": base_model_input()}


def train_params_json():
    """What training reads: eval.samples but not eval.k, so a changed k re-scores without re-training."""
    sections = {k: config[k] for k in ("seed", "sampling", "train")}
    sections["eval"] = {"samples": config["eval"]["samples"]}
    if config["train"]["backend"] == "verl":
        # verl's engine and hardware settings shape its runs (and their checkpoints) too.
        sections["cluster"] = {k: config["cluster"][k] for k in ("train", "verl")}
    return json.dumps(sections, sort_keys=True)


def train_uses_gpu():
    t = config["train"]
    return int(t["backend"] == "verl" or t["device"].startswith("cuda"))


def grader_version():
    """Part of the scoring rule's params: a new grader re-scores every run."""
    return GRADER_VERSION


def run_markers():
    return [f"{run_dir(c.split, c.B_p, c.n)}/run.json" for c in CELLS]


def eval_tables():
    return [f"{run_dir(c.split, c.B_p, c.n)}/evals.parquet" for c in CELLS]


def train_targets():
    return run_markers() + eval_tables()


# --- cluster: resources and software environments of the jobs -------------------
# Resources come from the config's `cluster` section (isocompute.cluster.resources):
# GPUs, CPUs per GPU, memory and an attempt-scaled runtime. Partition and account
# are the SLURM profile's (slurm/config.yaml). `conda:` environments are used with
# --software-deployment-method conda (the SLURM profile turns it on).

from isocompute.cluster import resources as cluster_resources

GPU_ENV = "../envs/verl.yaml"
ANALYSIS_ENV = "../envs/analysis.yaml"


# Cheap rules run where Snakemake runs, not as cluster jobs (the pool also
# needs the internet for a hub dataset, which compute nodes often lack);
# scoring and the analysis fits are small CPU jobs.
localrules:
    all,
    pool,
    fig_difficulty,
    collect,
    figures,


def train_resources():
    """A verl run: cluster.train's GPUs; the local backend on CUDA: one of them; else a CPU job."""
    if config["train"]["backend"] == "verl":
        return cluster_resources.gpu_job_resources(config, "train")
    if train_uses_gpu():
        return cluster_resources.gpu_job_resources(config, "train", gpus=1)
    return cluster_resources.cpu_job_resources(config)


def sampling_resources():
    """Difficulty sampling: a vLLM GPU job (cluster.sample), or a CPU job with the local sampler."""
    if cluster_resources.sampling_uses_gpu(config):
        return cluster_resources.gpu_job_resources(config, "sample")
    return cluster_resources.cpu_job_resources(config)


def cpu_resources():
    return cluster_resources.cpu_job_resources(config)


def sampling_threads():
    """Every core of a local run; cluster.cpu.threads for a cluster job, where Snakemake has no
    --cores and the job itself (remote mode) would otherwise see all of its node's cores."""
    from snakemake.exceptions import WorkflowError

    if workflow.remote_exec:
        return config["cluster"]["cpu"]["threads"]
    try:
        return workflow.cores
    except WorkflowError:
        return config["cluster"]["cpu"]["threads"]


def sampler_params_json(*sections):
    """params_json, plus the vLLM engine settings when sampling runs on vLLM."""
    params = json.loads(params_json(*sections))
    if cluster_resources.sampling_uses_gpu(config):
        params["cluster"] = {"vllm": config["cluster"]["vllm"]}
    return json.dumps(params, sort_keys=True)


# --- analysis: per split, over the split's scored runs ---------------------------


def analysis_splits():
    """Splits with a training grid."""
    return sorted({c.split for c in CELLS})


def split_run_dirs(wildcards):
    return [run_dir(c.split, c.B_p, c.n) for c in CELLS if c.split == wildcards.split]


def split_eval_tables(wildcards):
    return [f"{d}/evals.parquet" for d in split_run_dirs(wildcards)]


def analysis_dir(split):
    return f"{RESULTS}/analysis/{split}"


def analysis_flags():
    """`isocompute analyze` options from config['analysis'] (rule params, so a change
    re-runs only the analysis and figure jobs)."""
    a = config["analysis"]
    metric = a["metric"] or f"avg@{config['eval']['k']}"
    flags = [f"--metric {metric}", f"--bin-width {a['bin_width']}", f"--grid-points {a['grid_points']}",
             f"--window {a['window']}", f"--bootstrap {a['bootstrap']}", f"--seed {config['seed']}",
             f"--ci {a['ci']}", f"--extrapolate-fraction {a['extrapolate_fraction']}"]
    if a["ema_alpha"] is not None:
        flags.append(f"--ema {a['ema_alpha']}")
    if a["min_compute"] is not None:
        flags.append(f"--min-compute {a['min_compute']}")
    if a["observed_range"]:
        flags.append("--observed-range")
    return " ".join(flags)


def analysis_targets():
    return [f"{analysis_dir(s)}/{leaf}" for s in analysis_splits() for leaf in ("tables", "figures")]
