# The adaptive sweep (sweep.mode: adaptive, rules/sweep.smk): rung by rung, the cells a
# rung trains are those every earlier decision let go on; each decision is a checkpoint,
# so the DAG grows as the decisions are made. The DAG logic is isocompute.sweep's pure
# functions over `going` (the runs a decision let go on); here only the files.

from isocompute import sweep as adaptive_sweep

ADAPTIVE = adaptive_sweep.is_adaptive(config)


wildcard_constraints:
    rung=r"[0-9]+",


# A run's files at a rung, with the cell and the rung as wildcards.
RUNG_FILES = LAYOUT.rung_files("{split}", "{B_p}", "{n}", "{rep}", "{rung}")
RUNG_MARKER = str(RUNG_FILES.marker)
RUNG_EVALS = str(RUNG_FILES.evals)


def split_c_max(split):
    return float(config["grid"][split]["C_max"])


def rung_compute_of(wildcards):
    return adaptive_sweep.rung_computes(config, split_c_max(wildcards.split))[
        int(wildcards.rung)
    ]


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


def rung_train_args_of(wildcards, input):
    """A rung's `isocompute train` arguments: the grid run's, stopped at the rung's step."""
    return jobs.train_args(
        cell_of(wildcards),
        options=options_of(input),
        eval_sets=LAYOUT.eval_set_files(config, wildcards.split),
        rung=wildcards.rung,
        stop_at_step=rung_stop_step(wildcards),
    )


def rung_score_args_of(wildcards):
    return jobs.score_args(cell_of(wildcards), max_step=rung_stop_step(wildcards))


def decisions_file(split, rung):
    """The decisions of `split` at `rung`, once made (a checkpoint: asking for it before waits for it).

    A cluster job's own Snakemake (--mode remote) holds that job alone, so a checkpoint
    would look unmade there and replace the job's inputs (snakemake/snakemake#55); the
    main Snakemake submitted the job only once the decision was made, so it reads it.
    """
    if workflow.remote_exec:
        return LAYOUT.sweep_decisions(split, rung)
    return checkpoints.adaptive_rung.get(split=split, rung=rung).output.decisions


def going_on(split, rung):
    """The runs the decision of `split` at `rung` let go on."""
    return adaptive_sweep.continuing_runs(decisions_file(split, rung))


def rung_evals(cell, rung):
    return str(LAYOUT.cell_rung_files(cell, rung).evals)


def previous_rung_inputs(wildcards, rung):
    """A cell's marker of the last rung it was trained to below `rung` (`rung` - 1, or for a run
    the safety net resumed, the rung it stopped at) and the decision that let it go on (nothing
    at rung 0)."""
    if rung == 0:
        return {}
    cell = cell_of(wildcards)
    if cell.name not in going_on(cell.split, rung - 1):
        raise ValueError(
            f"{cell.split}/{cell.name} was stopped at rung {rung - 1}: it has no rung {rung}"
        )
    last = dict(
        (c.name, r)
        for c, r in adaptive_sweep.last_rungs(CELLS, cell.split, rung - 1, going_on)
    )
    return {
        "previous_rung": str(LAYOUT.cell_rung_files(cell, last[cell.name]).marker),
        "decision": decisions_file(cell.split, rung - 1),
    }


def rung_train_inputs(wildcards):
    return {
        **cell_train_inputs(wildcards),
        **previous_rung_inputs(wildcards, int(wildcards.rung)),
    }


def rung_decision_inputs(wildcards):
    """The evaluations the decision at a rung reads: the runs trained to it, and those stopped before."""
    split, rung = wildcards.split, int(wildcards.rung)
    at = adaptive_sweep.cells_at_rung(CELLS, split, rung, going_on)
    stopped = adaptive_sweep.stopped_before(CELLS, split, rung, going_on)
    return {
        "trained": [rung_evals(c, rung) for c in at],
        "stopped": [rung_evals(c, r) for c, r in stopped],
    }


def final_eval_tables(split):
    """Each run's evaluation table where the sweep ended it: at the rung that stopped it, or the full run's."""
    ended = adaptive_sweep.where_runs_ended(config, CELLS, split, going_on)
    return [
        str(LAYOUT.cell_files(c).evals) if r is None else rung_evals(c, r)
        for c, r in ended
    ]


def decide_params_json():
    return jobs.as_json(jobs.decide_params(config))
