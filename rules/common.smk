# Config checking, paths, wildcard constraints and the named input functions
# every stage uses. No grid or path logic lives inside rules: every path comes
# from isocompute.layout, every grid cell from isocompute.grid.

import json
import os
import sys

from isocompute.config import check_config, read_config_file
from isocompute.data.splits import needs_k_samples
from isocompute.errors import ConfigError
from isocompute.layout import study_layout

try:
    # Snakemake has parsed the config files already (keeping the last of a
    # duplicated key); re-read them strictly so a duplicate stops the run.
    for _path in [*workflow.configfiles, *workflow.overwrite_configfiles]:
        read_config_file(_path)
    check_config(config)
except ConfigError as _err:
    # One line naming the key and what was expected, before any job is scheduled.
    sys.stderr.write(f"isocompute config error: {_err}\n")
    sys.exit(1)

LAYOUT = study_layout(config)
SPLITS = list(config["splits"]["names"])


wildcard_constraints:
    split="|".join(SPLITS) or "none",
    part=r"[0-9]{3}",


def params_json(*sections):
    """The config sections a stage reads, as JSON for its --params."""
    keys = ("seed",) + sections
    return json.dumps({k: config[k] for k in keys}, sort_keys=True)


def base_model_input():
    """The embedded model directory when the pipeline builds it; nothing for a given path."""
    if config["base_model"]["source"] == "embedded":
        return LAYOUT.embedded_model
    return []


def model_arg(wildcards, input):
    """The base model a job reads: its input directory when the pipeline builds it, else base_model.path."""
    return input.model if input.model else config["base_model"]["path"]


def output_stem(wildcards, output):
    """A figure's path without its extension (the stage writes .png, .pdf, .counts.csv beside it)."""
    return os.path.splitext(output.png)[0]


def output_parent(wildcards, output):
    """The folder holding a rule's summary output (the splits stage writes every split below it)."""
    return os.path.dirname(output.summary)


def splits_dir_of(wildcards, input):
    """The folder of the split files (input.splits: .../splits/{split}/{part}.parquet)."""
    return os.path.dirname(os.path.dirname(input.splits[0]))


def split_files(split):
    return LAYOUT.split_files(split)


def all_split_files():
    return [path for split in SPLITS for path in split_files(split).values()]


def data_targets():
    return all_split_files() + [f"{LAYOUT.fig_difficulty_stem}.png"]


def all_targets():
    return (
        data_targets()
        + train_targets()
        + analysis_targets()
        + variant_targets()
        + [LAYOUT.figure_index]
    )


# --- training grid and scoring ---------------------------------------------------

from isocompute.grading import GRADER_VERSION
from isocompute.grid import find_cell, replicate_of
from isocompute.train.backends import check_study
from isocompute.train.backends.verl import overrides as verl_overrides

try:
    # Files, grid, evaluation schedules and the backend's limits, before any job.
    CELLS = check_study(config)
except ConfigError as _err:
    sys.stderr.write(f"isocompute config error: {_err}\n")
    sys.exit(1)


wildcard_constraints:
    B_p=r"[1-9][0-9]*",
    n=r"[1-9][0-9]*",
    rep=r"(_s[1-9][0-9]*)?",


def run_dir(split, B_p, n, rep=""):
    return LAYOUT.run_dir(split, B_p, n, rep)


# A run's files with the cell as wildcards: the train and score rules' outputs.
RUN_MARKER = str(LAYOUT.run_files("{split}", "{B_p}", "{n}", "{rep}").marker)
RUN_EVALS = str(LAYOUT.run_files("{split}", "{B_p}", "{n}", "{rep}").evals)
CELL_NAME = "{split}/bp{B_p}_n{n}{rep}"


def cell_of(wildcards):
    return find_cell(
        CELLS,
        wildcards.split,
        int(wildcards.B_p),
        int(wildcards.n),
        replicate_of(wildcards.rep),
    )


def run_dir_of(wildcards):
    return run_dir(wildcards.split, wildcards.B_p, wildcards.n, wildcards.rep)


def replicate_index(wildcards):
    """The seed replicate of a run (0 for bp{B_p}_n{n}, r for bp{B_p}_n{n}_s{r})."""
    return replicate_of(wildcards.rep)


def max_steps_of(wildcards):
    """M_max = C_max // (B_p * n) of the cell."""
    return cell_of(wildcards).M_max


def train_inputs(wildcards):
    """The cell's split files, the grid check, and the base model when the pipeline builds it.

    The grid check is ancient: a re-check after a grid change must not re-run
    the runs that were fine, only keep new ones from starting when it fails.
    """
    cell_of(wildcards)  # an unknown cell stops here with the reason
    return {
        **split_files(wildcards.split),
        "grid_check": ancient(LAYOUT.grid_check),
        "model": base_model_input(),
        # Ancient too: rewritten when a time limit or retention changes, re-running nothing.
        "options": ancient(LAYOUT.train_options) if uses_train_options() else [],
    }


def uses_train_options():
    return config["train"]["backend"] == "verl"


def train_options_arg(wildcards, input):
    """`--options FILE` of the train rule when it has one."""
    return f"--options {input.options}" if input.options else ""


def grid_split_train_files():
    """The training file of each split the grid trains on, by split name."""
    return {split: LAYOUT.split_file(split, "train") for split in analysis_splits()}


def split_file_args(wildcards, input):
    """split=path pairs for `isocompute check-grid`."""
    return " ".join(f"{split}={input[split]}" for split in analysis_splits())


# The sampling keys a training run reads (the rest, the difficulty sampler's backend and
# chunk size, must not resubmit finished runs).
TRAIN_SAMPLING_KEYS = ("temperature", "top_p", "max_new_tokens", "batch_size")


def train_params_json(cfg=None):
    """What training reads: eval.samples but not eval.k, so a changed k re-scores without re-training.
    `cfg`: the config the runs train with (a recipe variant's; default the study's)."""
    cfg = cfg or config
    sections = {k: cfg[k] for k in ("seed", "train")}
    sections["sampling"] = {k: config["sampling"][k] for k in TRAIN_SAMPLING_KEYS}
    sections["eval"] = {"samples": config["eval"]["samples"]}
    if config["train"]["backend"] == "verl":
        # verl's GPUs and engine settings shape its runs (and their checkpoints) too;
        # time limits, memory, CPUs and checkpoint retention do not (train_options_json).
        sections["cluster"] = verl_overrides.training_engine(config)
    return json.dumps(sections, sort_keys=True)


def train_options_json():
    """The cluster keys a verl train job reads that are not its params (CPUs, checkpoint
    retention): the params of the train_options rule, whose file the train jobs read."""
    return json.dumps({"cluster": verl_overrides.run_options(config)}, sort_keys=True)


def train_uses_gpu():
    t = config["train"]
    return int(t["backend"] == "verl" or t["device"].startswith("cuda"))


def grader_version():
    """Part of the scoring rule's params: a new grader re-scores every run."""
    return GRADER_VERSION


def run_markers():
    return [str(LAYOUT.cell_files(c).marker) for c in CELLS]


def eval_tables():
    return [str(LAYOUT.cell_files(c).evals) for c in CELLS]


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

# The figure index is the repository's page, wherever the study's results are.
FIGURE_INDEX_DOC = os.path.join(workflow.basedir, "docs", "figures.md")


# Cheap rules run where Snakemake runs, not as cluster jobs (the pool also
# needs the internet for a hub dataset, which compute nodes often lack);
# scoring and the analysis fits are small CPU jobs.
localrules:
    all,
    pool,
    train_options,
    fig_difficulty,
    check_grid,
    collect,
    figures,
    figure_index,


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


def merge_resources():
    return cluster_resources.merge_job_resources(config)


def merged_model_dir(split, B_p, n, rep=""):
    return LAYOUT.merged_model(split, B_p, n, rep)


def train_threads():
    """All CPUs of a GPU training job (GPUs x cpus_per_gpu: the SLURM job step runs on
    `threads` CPUs when GPUs come through --gres); threads_per_job for a CPU run."""
    if config["train"]["backend"] == "verl":
        return cluster_resources.gpu_job_threads(config, "train")
    if train_uses_gpu():
        return cluster_resources.gpu_job_threads(config, "train", gpus=1)
    return config["threads_per_job"]


def sampling_threads():
    """All CPUs of a vLLM sampling job; else every core of a local run, and cluster.cpu.threads
    for a cluster job, where Snakemake has no --cores and the job itself (remote mode) would
    otherwise see all of its node's cores.
    """
    from snakemake.exceptions import WorkflowError

    if cluster_resources.sampling_uses_gpu(config):
        return cluster_resources.gpu_job_threads(config, "sample")
    if workflow.remote_exec:
        return config["cluster"]["cpu"]["threads"]
    try:
        return workflow.cores
    except WorkflowError:
        return config["cluster"]["cpu"]["threads"]


def difficulty_jobs():
    return int(config["cluster"]["sample"]["jobs"])


def difficulty_part_files():
    """The counts of every difficulty_chunk job, in part (= pool) order."""
    return [LAYOUT.difficulty_part(part) for part in range(difficulty_jobs())]


def sampler_params_json(*sections):
    """params_json, plus the vLLM engine settings when sampling runs on vLLM."""
    params = json.loads(params_json(*sections))
    if cluster_resources.sampling_uses_gpu(config):
        params["cluster"] = {"vllm": config["cluster"]["vllm"]}
    return json.dumps(params, sort_keys=True)


def difficulty_params_json():
    """The sampler's params, plus the mixtures when one has a component over K
    samples (then every problem gets K samples, else only the unsolved ones)."""
    params = json.loads(sampler_params_json("sampling", "difficulty"))
    if needs_k_samples(config):
        params["splits"] = {k: config["splits"][k] for k in ("names", "mixtures")}
    return json.dumps(params, sort_keys=True)


# --- analysis: per split, over the split's scored runs ---------------------------


def analysis_splits():
    """Splits with a training grid."""
    return sorted({c.split for c in CELLS})


def split_cells(wildcards):
    return [c for c in CELLS if c.split == wildcards.split]


def split_run_dirs(wildcards):
    return [str(LAYOUT.cell_files(c).run_dir) for c in split_cells(wildcards)]


def split_eval_tables(wildcards):
    return [str(LAYOUT.cell_files(c).evals) for c in split_cells(wildcards)]


def analysis_params_json():
    """What `isocompute analyze` reads: the analysis section, and eval.k for its default metric
    (rule params, so a change re-runs only the analysis and figure jobs)."""
    return json.dumps(
        {
            "seed": config["seed"],
            "analysis": config["analysis"],
            "eval": {"k": config["eval"]["k"]},
        },
        sort_keys=True,
    )


def analysis_targets():
    return [
        path
        for s in analysis_splits()
        for path in (LAYOUT.analysis_tables(s), LAYOUT.analysis_figures(s))
    ]
