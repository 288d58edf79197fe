# The training grid and scoring: the cells (isocompute.grid, checked with the study by
# isocompute.train.backends.check_study before any job), the named input, params and
# resource functions of rules/train.smk and rules/evaluate.smk. Each job's params and
# command line come from isocompute.jobs, the one definition of what a job is given.

from isocompute.grading import GRADER_VERSION
from isocompute.grid import find_cell, replicate_of
from isocompute.train.backends import check_study

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


# A run's files with the cell as wildcards: the train and score rules' outputs.
RUN_FILES = LAYOUT.run_files("{split}", "{B_p}", "{n}", "{rep}")
RUN_MARKER = str(RUN_FILES.marker)
RUN_EVALS = str(RUN_FILES.evals)
RUN_SET_EVALS = str(RUN_FILES.set_evals("{eval_set}"))
CELL_NAME = f"{{split}}/{LAYOUT.run_name('{B_p}', '{n}', '{rep}')}"
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
    return LAYOUT.run_dir(wildcards.split, wildcards.B_p, wildcards.n, wildcards.rep)


def train_priority(wildcards):
    """Longest runs first (jobs.train_priority), so the last cores idle least at the end."""
    return jobs.train_priority(cell_of(wildcards))


def train_inputs(wildcards):
    """The cell's split files, the grid check, and the base model when the pipeline builds it;
    in an adaptive sweep, also the cell's last rung and the decision that let it finish.
    """
    if ADAPTIVE:
        return {
            **cell_train_inputs(wildcards),
            **previous_rung_inputs(wildcards, adaptive_sweep.last_rung(config)),
        }
    return cell_train_inputs(wildcards)


def cell_train_inputs(wildcards):
    """What every training job of a cell reads (train_inputs), at any rung.

    The grid check is ancient: a re-check after a grid change must not re-run
    the runs that were fine, only keep new ones from starting when it fails.
    """
    cell_of(wildcards)  # an unknown cell stops here with the reason
    return {
        **split_files(wildcards.split),
        "grid_check": ancient(LAYOUT.grid_check),
        "model": base_model_input(),
        # Ancient too: rewritten when tracking, retention or CPUs change, re-running nothing.
        "options": ancient(LAYOUT.train_options) if uses_train_options() else [],
        "eval_sets": [
            path for _, path in LAYOUT.eval_set_files(config, wildcards.split)
        ],
    }


def uses_train_options():
    return jobs.uses_train_options(config)


def options_of(input):
    """The train options file a job reads (verl's, or a tracked local run's), or None: an
    empty named input may be absent from Snakemake's InputFiles."""
    return input.get("options") or None


def train_params_of(wildcards):
    """A grid run's params (isocompute.jobs.train_params): its rerun contract and all it reads."""
    return jobs.as_json(jobs.train_params(config, cell_of(wildcards)))


def train_args_of(wildcards, input):
    """A grid run's `isocompute train` arguments: the cell, its options file, its extra sets."""
    return jobs.train_args(
        cell_of(wildcards),
        options=options_of(input),
        eval_sets=LAYOUT.eval_set_files(config, wildcards.split),
    )


def score_args_of(wildcards):
    return jobs.score_args(cell_of(wildcards))


def score_set_args_of(wildcards):
    return jobs.score_args(cell_of(wildcards), eval_set=wildcards.eval_set)


def grid_split_train_files():
    """The training file of each split the grid trains on, by split name."""
    return {split: LAYOUT.split_file(split, "train") for split in analysis_splits()}


def split_file_args(wildcards, input):
    """split=path pairs for `isocompute check-grid`."""
    return " ".join(f"{split}={input[split]}" for split in analysis_splits())


def grid_check_params_json():
    return jobs.as_json(jobs.grid_check_params(config))


def train_options_json():
    return jobs.as_json(jobs.train_options(config))


def score_params_json():
    return jobs.as_json(jobs.score_params(config))


def train_uses_gpu():
    t = config["train"]
    return int(t["backend"] == "verl" or t["device"].startswith("cuda"))


def grader_version():
    """Part of the scoring rule's params: a new grader re-scores every run."""
    return GRADER_VERSION


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
    return [str(LAYOUT.cell_files(c).marker) for c in CELLS] + eval_tables()


def train_resources():
    """A verl run: cluster.train's GPUs; the local backend on CUDA: one of them; else a CPU job."""
    if config["train"]["backend"] == "verl":
        return cluster_resources.gpu_job_resources(config, "train")
    if train_uses_gpu():
        return cluster_resources.gpu_job_resources(config, "train", gpus=1)
    return cluster_resources.cpu_job_resources(config)


def train_threads():
    """All CPUs of a GPU training job (GPUs x cpus_per_gpu: the SLURM job step runs on
    `threads` CPUs when GPUs come through --gres); threads_per_job for a CPU run."""
    if config["train"]["backend"] == "verl":
        return cluster_resources.gpu_job_threads(config, "train")
    if train_uses_gpu():
        return cluster_resources.gpu_job_threads(config, "train", gpus=1)
    return config["threads_per_job"]
