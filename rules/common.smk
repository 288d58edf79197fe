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
    """The config sections a stage reads, as JSON for its --params. eval.extra_sets is
    training's (train_params_json): scoring takes a set by its wildcard, so adding a set
    re-scores nothing that was scored."""
    keys = ("seed",) + sections
    return json.dumps({k: params_section(k) for k in keys}, sort_keys=True)


def params_section(key):
    if key == "eval":
        return {k: v for k, v in config["eval"].items() if k != "extra_sets"}
    return config[key]


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
RUN_SET_EVALS = str(
    LAYOUT.run_files("{split}", "{B_p}", "{n}", "{rep}").set_evals("{eval_set}")
)
EVAL_SETS = [s["name"] for s in config["eval"]["extra_sets"]]


wildcard_constraints:
    eval_set="|".join(EVAL_SETS) or "none",


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
    """The cell's split files, the grid check, and the base model when the pipeline builds it;
    in an adaptive sweep, also the cell's last rung and the decision that let it finish.

    The grid check is ancient: a re-check after a grid change must not re-run
    the runs that were fine, only keep new ones from starting when it fails.
    """
    if ADAPTIVE:
        return {
            **cell_train_inputs(wildcards),
            **previous_rung_inputs(wildcards, adaptive_sweep.last_rung(config)),
        }
    return cell_train_inputs(wildcards)


def cell_train_inputs(wildcards):
    """What every training job of a cell reads (train_inputs), at any rung."""
    cell_of(wildcards)  # an unknown cell stops here with the reason
    return {
        **split_files(wildcards.split),
        "grid_check": ancient(LAYOUT.grid_check),
        "model": base_model_input(),
        # Ancient too: rewritten when a time limit or retention changes, re-running nothing.
        "options": ancient(LAYOUT.train_options) if uses_train_options() else [],
        "eval_sets": [
            path for _, path in LAYOUT.eval_set_files(config, wildcards.split)
        ],
    }


def uses_train_options():
    return config["train"]["backend"] == "verl"


def train_options_arg(wildcards, input):
    """`--options FILE` of a train rule when it has one."""
    return f"--options {input.options}" if input.options else ""


def grid_train_args(wildcards, input):
    """train_options_arg, and `--eval-set NAME=FILE` for each extra evaluation set of a grid
    run (here, so that a study without any keeps its train jobs' command lines)."""
    args = [train_options_arg(wildcards, input)] if input.options else []
    args += [
        f"--eval-set {name}={path}"
        for name, path in LAYOUT.eval_set_files(config, wildcards.split)
    ]
    return " ".join(args)


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
    # The study's name: verl names the run after it (trainer.experiment_name).
    sections["experiment"] = config["experiment"]
    sections["sampling"] = {k: config["sampling"][k] for k in TRAIN_SAMPLING_KEYS}
    sections["eval"] = {"samples": config["eval"]["samples"]}
    if config["eval"]["extra_sets"] and cfg is config:
        # Grid runs only (variants validate on their own split). Absent when empty: a
        # study without extra sets keeps its runs' params.
        # A path set's `problems` is isocompute plan's, not the run's.
        sections["eval"]["extra_sets"] = [
            {k: v for k, v in spec.items() if k != "problems"}
            for spec in config["eval"]["extra_sets"]
        ]
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


def own_eval_tables():
    return [str(LAYOUT.cell_files(c).evals) for c in CELLS]


def eval_tables():
    return own_eval_tables() + set_eval_tables()


def set_eval_tables(cells=None):
    """Each run's table of each of its extra evaluation sets (none by default)."""
    return [
        str(LAYOUT.cell_files(c).set_evals(name))
        for c in (CELLS if cells is None else cells)
        for name, _ in LAYOUT.eval_set_files(config, c.split)
    ]


def train_targets():
    """Every run's marker and table; none up front in an adaptive sweep, whose runs are
    known rung by rung (the analysis asks for each where it ended)."""
    if ADAPTIVE:
        return []
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


def split_eval_tables(wildcards):
    """Each run's evaluation table; in an adaptive sweep, from where the sweep stopped it."""
    if ADAPTIVE:
        return final_eval_tables(wildcards.split)
    return [str(LAYOUT.cell_files(c).evals) for c in split_cells(wildcards)]


def collected_dirs(wildcards, input):
    """The run (or rung) directory of each table `collect` reads."""
    return [os.path.dirname(path) for path in input]


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
    ] + cross_eval_targets()


def cross_eval_targets():
    """Fig. 14 and the out-of-domain curves, when the study lists extra evaluation sets
    (not in an adaptive sweep, whose stopped runs are not scored on them)."""
    if not config["eval"]["extra_sets"] or ADAPTIVE or not set_eval_tables():
        return []
    return [LAYOUT.cross_eval_figures]


def cross_eval_params_json():
    """What `isocompute cross-eval` reads: eval.k (its metric) and the sets."""
    return json.dumps(
        {
            "seed": config["seed"],
            "eval": {k: config["eval"][k] for k in ("k", "extra_sets")},
        },
        sort_keys=True,
    )


# --- adaptive sweep (sweep.mode: adaptive, rules/sweep.smk) --------------------------
# Rung by rung: the cells a rung trains are those every earlier decision let go on;
# each decision is a checkpoint, so the DAG grows as the decisions are made.

from isocompute import sweep as adaptive_sweep

ADAPTIVE = adaptive_sweep.is_adaptive(config)


wildcard_constraints:
    rung=r"[0-9]+",


# A run's files at a rung, with the cell and the rung as wildcards.
RUNG_MARKER = str(
    LAYOUT.rung_files("{split}", "{B_p}", "{n}", "{rep}", "{rung}").marker
)
RUNG_EVALS = str(LAYOUT.rung_files("{split}", "{B_p}", "{n}", "{rep}", "{rung}").evals)


def split_c_max(split):
    return float(config["grid"][split]["C_max"])


def rung_compute(split, rung):
    return adaptive_sweep.rung_computes(config, split_c_max(split))[int(rung)]


def rung_compute_of(wildcards):
    return rung_compute(wildcards.split, wildcards.rung)


def c_max_of(wildcards):
    return split_c_max(wildcards.split)


def rung_stop_step(wildcards):
    """The step the cell stops at at rung {rung} (below the last rung, which is the train rule)."""
    rung = int(wildcards.rung)
    if rung >= adaptive_sweep.last_rung(config):
        raise ValueError(
            f"rung {rung}: the rungs below the last are 0..{adaptive_sweep.last_rung(config) - 1}; "
            "the last rung is the full run (run.json)"
        )
    return adaptive_sweep.rung_stop_steps(config, cell_of(wildcards))[rung]


def decisions_file(split, rung):
    """The decisions of `split` at `rung`, once made (a checkpoint: asking for it before waits for it).

    A cluster job's own Snakemake (--mode remote) holds that job alone, so a checkpoint
    would look unmade there and replace the job's inputs (snakemake/snakemake#55); the
    main Snakemake submitted the job only once the decision was made, so it reads it.
    """
    if workflow.remote_exec:
        return LAYOUT.sweep_decisions(split, rung)
    return checkpoints.adaptive_rung.get(split=split, rung=rung).output.decisions


def cells_at_rung(split, rung):
    """The cells of `split` trained to `rung`: all at rung 0, then those each decision let go on."""
    cells = [c for c in CELLS if c.split == split]
    for r in range(rung):
        going = adaptive_sweep.continuing_runs(decisions_file(split, r))
        cells = [c for c in cells if c.name in going]
    return cells


def stopped_at(split, rung):
    """The cells of `split` the decision at `rung` stopped."""
    going = {c.name for c in cells_at_rung(split, rung + 1)}
    return [c for c in cells_at_rung(split, rung) if c.name not in going]


def rung_evals(cell, rung):
    return str(LAYOUT.cell_rung_files(cell, rung).evals)


def previous_rung_inputs(wildcards, rung):
    """A cell's marker of rung `rung` - 1 and the decision that let it go on (nothing at rung 0)."""
    if rung == 0:
        return {}
    cell = cell_of(wildcards)
    decisions = decisions_file(cell.split, rung - 1)
    if cell.name not in adaptive_sweep.continuing_runs(decisions):
        raise ValueError(
            f"{cell.split}/{cell.name} was stopped at rung {rung - 1} ({decisions}): it has no rung {rung}"
        )
    return {
        "previous_rung": str(LAYOUT.cell_rung_files(cell, rung - 1).marker),
        "decision": decisions,
    }


def rung_train_inputs(wildcards):
    return {
        **cell_train_inputs(wildcards),
        **previous_rung_inputs(wildcards, int(wildcards.rung)),
    }


def rung_decision_inputs(wildcards):
    """The evaluations the decision at a rung reads: the runs trained to it, and those stopped before."""
    split, rung = wildcards.split, int(wildcards.rung)
    return {
        "trained": [rung_evals(c, rung) for c in cells_at_rung(split, rung)],
        "stopped": [
            rung_evals(c, r) for r in range(rung) for c in stopped_at(split, r)
        ],
    }


def final_eval_tables(split):
    """Each run's evaluation table where the sweep ended it: at the rung that stopped it, or the full run's."""
    tables = [
        rung_evals(c, r)
        for r in adaptive_sweep.decision_rungs(config)
        for c in stopped_at(split, r)
    ]
    last = cells_at_rung(split, adaptive_sweep.last_rung(config))
    return tables + [str(LAYOUT.cell_files(c).evals) for c in last]


def decide_params_json():
    """What the decision reads: the sweep's rule keys, and the metric the analysis fits."""
    return json.dumps(
        {
            "seed": config["seed"],
            "sweep": config["sweep"],
            "analysis": {"metric": config["analysis"]["metric"]},
            "eval": {"k": config["eval"]["k"]},
        },
        sort_keys=True,
    )
