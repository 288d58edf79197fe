# Config checking, paths, wildcard constraints and the named functions of the data and
# analysis stages. No grid, path or params logic lives inside rules: every path comes
# from isocompute.layout, every grid cell from isocompute.grid, every job's params and
# command line from isocompute.jobs (rules/common_train.smk: training and scoring;
# rules/common_sweep.smk: the adaptive sweep's rungs).

import os
import sys

from isocompute import jobs
from isocompute.analysis.outputs import figure_index as figure_order
from isocompute.config import check_config, read_config_file
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
    """The config sections a stage reads (isocompute.jobs.stage_params), as its --params."""
    return jobs.as_json(jobs.stage_params(config, *sections))


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
    if config["compare"] and not CELLS and not VARIANT_CELLS:
        return []  # a config that only compares finished experiments builds no data
    return all_split_files() + [f"{LAYOUT.fig_difficulty_stem}.png"]


def all_targets():
    return (
        data_targets()
        + train_targets()
        + analysis_targets()
        + variant_targets()
        + compare_targets()
        + [LAYOUT.figure_index]
        + headline_targets()
    )


# --- cluster: resources and software environments of the jobs -------------------
# Resources come from the config's `cluster` section (isocompute.cluster.resources):
# GPUs, CPUs per GPU, memory and an attempt-scaled runtime. Partition and account
# are the SLURM profile's (slurm/config.yaml). `conda:` environments are used with
# --software-deployment-method conda, the `container:` image (cluster.container, one
# image of the whole pinned stack: envs/verl.def) with --sdm apptainer; null is no
# container. Neither is in any job's params (docs/cluster.md, Running in a container).

from isocompute.cluster import resources as cluster_resources

GPU_ENV = "../envs/verl.yaml"
ANALYSIS_ENV = "../envs/analysis.yaml"
CONTAINER = config["cluster"]["container"]

# The figure index is the repository's page, wherever the study's results are.
FIGURE_INDEX_DOC = os.path.join(workflow.basedir, "docs", "figures.md")


# Cheap rules run where Snakemake runs, not as cluster jobs (the pool also
# needs the internet for a hub dataset, which compute nodes often lack);
# scoring and the analysis fits are small CPU jobs; an adaptive sweep's decision
# at a rung fits the split's runs (seconds) where the DAG is re-evaluated.
localrules:
    all,
    pool,
    train_options,
    fig_difficulty,
    check_grid,
    collect,
    figures,
    adaptive_rung,
    figure_index,
    headline,


def sampling_resources():
    """Difficulty sampling: a vLLM GPU job (cluster.sample), or a CPU job with the local sampler."""
    if cluster_resources.sampling_uses_gpu(config):
        return cluster_resources.gpu_job_resources(config, "sample")
    return cluster_resources.cpu_job_resources(config)


def cpu_resources():
    return cluster_resources.cpu_job_resources(config)


def merge_resources():
    return cluster_resources.merge_job_resources(config)


def sampling_threads():
    """All CPUs of a vLLM sampling job; else a local run's cores shared among its
    cluster.sample.jobs difficulty_chunk jobs (each at least one), which then run side by
    side; and cluster.cpu.threads for a cluster job, where Snakemake has no --cores and the
    job itself (remote mode) would otherwise see all of its node's cores.
    """
    from snakemake.exceptions import WorkflowError

    if cluster_resources.sampling_uses_gpu(config):
        return cluster_resources.gpu_job_threads(config, "sample")
    if workflow.remote_exec:
        return config["cluster"]["cpu"]["threads"]
    try:
        return max(1, workflow.cores // difficulty_jobs())
    except WorkflowError:
        return config["cluster"]["cpu"]["threads"]


def difficulty_jobs():
    return int(config["cluster"]["sample"]["jobs"])


def difficulty_part_files():
    """The counts of every difficulty_chunk job, in part (= pool) order."""
    return [LAYOUT.difficulty_part(part) for part in range(difficulty_jobs())]


def difficulty_params_json():
    return jobs.as_json(jobs.difficulty_params(config))


# --- analysis: per split, over the split's scored runs ---------------------------


def analysis_splits():
    """Splits with a training grid."""
    return sorted({c.split for c in CELLS})


def split_cells(wildcards):
    return [c for c in CELLS if c.split == wildcards.split]


def split_eval_tables(wildcards):
    """Each run's evaluation table; in an adaptive sweep, from where the sweep stopped it."""
    if ADAPTIVE:
        return final_eval_tables(wildcards.split)
    return [str(LAYOUT.cell_files(c).evals) for c in split_cells(wildcards)]


def collected_dirs(wildcards, input):
    """The run (or rung) directory of each table `collect` reads."""
    return [os.path.dirname(path) for path in input]


def analysis_params_json():
    return jobs.as_json(jobs.analysis_params(config))


def analysis_targets():
    return [
        path
        for s in analysis_splits()
        for path in (LAYOUT.analysis_tables(s), LAYOUT.analysis_figures(s))
    ] + cross_eval_targets()


def headline_targets():
    """The report's headline, when the study analyses a split."""
    return [LAYOUT.headline] if analysis_splits() else []


def headline_tables():
    """Every analysed split's tables folder, in split order (the headline's input)."""
    return [LAYOUT.analysis_tables(s) for s in analysis_splits()]


def headline_tables_args(wildcards, input):
    """SPLIT=TABLES for each analysed split, as `isocompute headline` takes them."""
    return " ".join(f"{s}={path}" for s, path in zip(analysis_splits(), input))


def figure_labels(wildcards):
    """The report's columns of an analysis figure: its paper order first, then its name."""
    return figure_order.figure_labels(wildcards.name)


def cross_eval_targets():
    """Fig. 14 and the out-of-domain curves, when the study lists extra evaluation sets
    (not in an adaptive sweep, whose stopped runs are not scored on them)."""
    if not config["eval"]["extra_sets"] or ADAPTIVE or not set_eval_tables():
        return []
    return [LAYOUT.cross_eval_figures]


def cross_eval_params_json():
    return jobs.as_json(jobs.cross_eval_params(config))
