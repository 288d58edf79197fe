"""What each job is given: the config sections a rule passes to its stage as `--params`.

The params are the rerun contract (a changed value re-runs exactly the jobs that read
it) and, since a job's config is exactly its params (`config.job_config`), also all a
job may read: what a stage needs from elsewhere in the config (the split's compute
range, the experiment's name) is derived here and passed explicitly. One definition
for the Snakefile (rules/common.smk), `isocompute verl-command` and the tests; the
train and score command lines are built here too.
"""

from __future__ import annotations

import json

from isocompute.data.splits import needs_k_samples
from isocompute.train.backends.verl import overrides as verl_overrides
from isocompute.train.recipe import cell_config, study_compute_range


def as_json(sections: dict) -> str:
    """A job's params as the JSON string a rule passes (sorted keys: a stable rerun contract)."""
    return json.dumps(sections, sort_keys=True)


def section(cfg: dict, key: str):
    """A config section as stages read it. eval.extra_sets is training's (train_params):
    scoring takes a set by its wildcard, so adding a set re-scores nothing that was scored."""
    if key == "eval":
        return {k: v for k, v in cfg["eval"].items() if k != "extra_sets"}
    return cfg[key]


def stage_params(cfg: dict, *sections: str) -> dict:
    """The seed and the named config sections: the params of a stage that reads whole sections."""
    return {k: section(cfg, k) for k in ("seed", *sections)}


# --- data stages ----------------------------------------------------------------------

# cluster.vllm keys that only a CPU engine reads: a GPU study's params leave them out (and
# keep the params its difficulty stage ran with before they existed); the sampler takes a
# params without `device` for cuda (cluster.vllm_sampler.engine_device).
VLLM_CPU_KEYS = ("device", "kv_cache_gib")


def sampler_params(cfg: dict, *sections: str) -> dict:
    """stage_params, plus the vLLM engine settings when sampling runs on vLLM."""
    params = stage_params(cfg, *sections)
    if cfg["sampling"]["backend"] == "vllm":
        vllm = cfg["cluster"]["vllm"]
        on_cpu = vllm["device"] == "cpu"
        params["cluster"] = {"vllm": {k: v for k, v in vllm.items() if on_cpu or k not in VLLM_CPU_KEYS}}
    return params


def difficulty_params(cfg: dict) -> dict:
    """The sampler's params, plus the mixtures when one has a component over K samples
    (then every problem gets K samples, else only the unsolved ones)."""
    params = sampler_params(cfg, "sampling", "difficulty")
    if needs_k_samples(cfg):
        params["splits"] = {k: cfg["splits"][k] for k in ("names", "mixtures")}
    return params


# --- training ----------------------------------------------------------------------------

# The sampling keys a training run reads (the rest, the difficulty sampler's backend and
# chunk size, must not resubmit finished runs).
TRAIN_SAMPLING_KEYS = ("temperature", "top_p", "max_new_tokens", "batch_size")


def train_params(cfg: dict, cell) -> dict:
    """What a training job of `cell` reads: its recipe (a variant's with the variant's train
    overrides), the sampling keys, eval.samples (not eval.k: a changed k re-scores without
    re-training), the extra evaluation sets of a grid run, the grader's timeout tolerance
    (grading.max_timeout_share), the compute range of the split's
    shared evaluation schedule, the experiment's name (verl's loggers), and on verl the
    engine settings its runs are made of."""
    run_cfg = cell_config(cfg, cell)
    lo, c_max = study_compute_range(cfg, cell)
    sets = [] if cell.variant else [{k: v for k, v in spec.items() if k != "problems"}  # `problems`: plan's
                                    for spec in cfg["eval"]["extra_sets"]]
    params = {
        "seed": cfg["seed"],
        "experiment": cfg["experiment"],
        "train": run_cfg["train"],
        "sampling": {k: cfg["sampling"][k] for k in TRAIN_SAMPLING_KEYS},
        "eval": {"samples": cfg["eval"]["samples"], "extra_sets": sets},
        # The share of timed-out rewards a step may have (a check, not in the run identity).
        "grading": cfg["grading"],
        "schedule": {"min_compute": lo, "C_max": c_max},
    }
    if cfg["train"]["backend"] == "verl":
        # verl's GPUs and engine settings shape its runs (and their checkpoints) too; time
        # limits, memory, CPUs and checkpoint retention do not (train_options).
        params["cluster"] = verl_overrides.training_engine(cfg)
    return params


def train_options(cfg: dict) -> dict:
    """The keys a train job reads that are not its params: the experiment trackers (config
    `tracking`: they log what a run computes and change none of it) and a verl job's cluster
    keys (CPUs, checkpoint retention). The params of the train_options rule, whose file the
    train jobs read as an ancient input, so a changed value re-runs no finished run."""
    options = {"tracking": cfg["tracking"]}
    if cfg["train"]["backend"] == "verl":
        options["cluster"] = verl_overrides.run_options(cfg)
    return options


def uses_train_options(cfg: dict) -> bool:
    """Whether the train jobs read the options file: always on verl; on the local backend only
    with a tracker on, so that its default jobs (and every study trained before tracking
    existed) keep their inputs and arguments."""
    return cfg["train"]["backend"] == "verl" or bool(cfg["tracking"]["backends"])


def grid_check_params(cfg: dict) -> dict:
    return stage_params(cfg, "grid", "splits")


def variant_check_params(cfg: dict) -> dict:
    """What the variants' size check reads: their cells (C_max may come from the grid), not
    their recipes or labels."""
    params = grid_check_params(cfg)
    params["variants"] = {k: {"cells": v["cells"]} for k, v in cfg["variants"].items()}
    return params


# The train and score command lines of every rule that trains or scores a run (grid,
# adaptive rung, variant): the cell's own arguments come from train_args / score_args.
TRAIN_SHELL = (
    "isocompute train --params {params.cfg:q} {params.args} --train-file {input.train} --val-file {input.val}"
    " --model {params.model} --run-dir {params.run_dir} --threads {threads} > {log} 2>&1"
)
SCORE_SHELL = (
    "isocompute score --params {params.cfg:q} {params.args} --run-dir {params.run_dir} --out {output}"
    " > {log} 2>&1"
)


def train_priority(cell) -> int:
    """The train rule's priority of a cell: its step count M_max. A CPU run's time is mostly
    per step (about 0.07 s a step against 1 ms a rollout on the embedded model), so the
    highest priority goes to the longest runs and, on a few cores, the jobs that start
    last are short ones and the cores finish together (longest-processing-time first)."""
    return int(cell.M_max)


def cell_args(cell) -> list[str]:
    """The arguments naming a cell to `isocompute train` and `isocompute score`."""
    return ["--split", cell.split, "--bp", str(cell.B_p), "--n", str(cell.n), "--replicate", str(cell.replicate)]


def train_args(cell, *, options=None, eval_sets=(), rung=None, stop_at_step=None) -> str:
    """`isocompute train`'s arguments for `cell` beyond its files: M_max, the rung it stops at
    (an adaptive sweep's), the options file (verl) and the extra evaluation sets (name, file)."""
    args = [*cell_args(cell), "--max-steps", str(cell.M_max)]
    if cell.variant:
        args += ["--variant", cell.variant]
    if rung is not None:
        args += ["--rung", str(rung), "--stop-at-step", str(stop_at_step)]
    if options:
        args += ["--options", str(options)]
    for name, path in eval_sets:
        args += ["--eval-set", f"{name}={path}"]
    return " ".join(args)


def score_args(cell, *, eval_set=None, max_step=None) -> str:
    """`isocompute score`'s arguments for `cell`: an extra evaluation set, or a rung's last step."""
    args = cell_args(cell)
    if eval_set is not None:
        args += ["--eval-set", eval_set]
    if max_step is not None:
        args += ["--max-step", str(max_step)]
    return " ".join(args)


# --- analysis ----------------------------------------------------------------------------

def score_params(cfg: dict) -> dict:
    """What `isocompute score` reads: eval (its k) and grading (the timeout share it fails above)."""
    return stage_params(cfg, "eval", "grading")


def analysis_params(cfg: dict) -> dict:
    """What `isocompute analyze` reads: the analysis section, eval.k for its default metric and
    grading.max_timeout_share, above which it refuses an evaluation (rule params, so a change
    re-runs only the analysis and figure jobs)."""
    return {"seed": cfg["seed"], "analysis": cfg["analysis"], "eval": {"k": cfg["eval"]["k"]},
            "grading": cfg["grading"]}


def cross_eval_params(cfg: dict) -> dict:
    """What `isocompute cross-eval` reads: eval.k (its metric) and the sets."""
    return {"seed": cfg["seed"], "eval": {k: cfg["eval"][k] for k in ("k", "extra_sets")}}


def decide_params(cfg: dict) -> dict:
    """What an adaptive decision reads: the sweep's rule keys, and the analysis settings its fits
    use (the study's, as the analysis would fit them; eval.k for the default metric)."""
    return {"seed": cfg["seed"], "sweep": cfg["sweep"], "analysis": cfg["analysis"], "eval": {"k": cfg["eval"]["k"]}}


def variant_figure_params(cfg: dict) -> dict:
    """What the variants' figures read: which variant each figure draws, their labels, eval.k."""
    return stage_params(cfg, "grid", "splits", "variants", "eval")
