"""What a study costs before it runs: training runs per split, rollouts, and an
estimate of GPU-hours and wall-clock per run (`isocompute plan CONFIG`).

A pure function of the config. The cost model is deliberately simple and its
constants are config keys (`cluster.throughput`), so a user can calibrate it
from one measured run:

    hours per step   = step_overhead_s / 3600 + B_p * n / (rollouts_per_gpu_hour * gpus)
    run GPU-hours    = gpus * (M_max * hours per step + attempts * job_overhead_s / 3600)
                       + evaluation rollouts / rollouts_per_gpu_hour
    evaluations      = the recipe's validation steps (train.eval_schedule)
    attempts         = the SLURM jobs a run takes at the site's limit (cluster.max_runtime)

It is one case of the unit-cost model every cost estimate of the project uses (`UnitCosts`,
`job_seconds`): seconds per job (start-up and wrap-up), per optimizer step, per training rollout
and per validation sample; here the config's throughput sets them (`UnitCosts.of`: a job's
start-up is job_overhead_s, a validation sample costs a training rollout), and the power analysis
of a study design (`isocompute.design`) sets them from a finished study's run logs. `packed_wall`
packs jobs onto parallel workers.

The adaptive sweep's expected cost is priced by this same model (`isocompute.cluster.adaptive_cost`),
and `isocompute.cluster.plan_report` prints both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from isocompute.data.eval_sets import extra_set_problems
from isocompute.grid import grid_cells, variant_cells
from isocompute.train.recipe import cell_config, cell_recipe


@dataclass(frozen=True)
class UnitCosts:
    """Seconds per unit of work of one training job on what it runs on (its GPUs, or one core)."""

    per_step: float          # optimizer step (generation call, update, logging)
    per_rollout: float       # training rollout
    per_val_sample: float    # validation sample (a problem's sample at an evaluation)
    per_job: float = 0.0     # start-up and wrap-up of a job

    @classmethod
    def of(cls, cfg: dict) -> "UnitCosts":
        """The config's throughput (cluster.throughput, cluster.train.gpus): a step's overhead,
        rollouts_per_gpu_hour x gpus for training rollouts and validation samples alike, and a
        job's start-up and wrap-up (job_overhead_s)."""
        thr = cfg["cluster"]["throughput"]
        per_rollout = 3600.0 / (float(thr["rollouts_per_gpu_hour"]) * cfg["cluster"]["train"]["gpus"])
        return cls(per_step=float(thr["step_overhead_s"]), per_rollout=per_rollout, per_val_sample=per_rollout,
                   per_job=float(thr["job_overhead_s"]))


def job_seconds(steps: int, rollouts: int, evaluations: int, problems: int, samples: int, units: UnitCosts) -> float:
    """Wall seconds of one training job: `steps` steps of `rollouts` training rollouts in all, and
    `evaluations` validations of `problems` problems x `samples` samples."""
    return (units.per_job + units.per_step * steps + units.per_rollout * rollouts
            + units.per_val_sample * evaluations * problems * samples)


def packed_wall(seconds, workers: int) -> float:
    """Wall time of independent jobs on `workers` parallel workers, each job to the least loaded one,
    longest first."""
    load = np.zeros(max(int(workers), 1))
    for s in sorted(seconds, reverse=True):
        load[load.argmin()] += s
    return float(load.max())


def attempts(work_seconds: float, units: UnitCosts, max_runtime_min: int) -> int:
    """SLURM attempts a job of `work_seconds` (its steps and evaluations) takes at the site's
    limit: each attempt resumes from the last checkpoint and spends its start-up (units.per_job)
    again."""
    useful = 60.0 * max_runtime_min - units.per_job
    if useful <= 0:
        raise ValueError(f"a job's start-up ({units.per_job:g} s, cluster.throughput.job_overhead_s) leaves no "
                         f"time in an attempt of {max_runtime_min} min (cluster.max_runtime)")
    return max(1, math.ceil(work_seconds / useful - 1e-9))


def cell_validation(cfg: dict, cell) -> tuple[tuple[int, ...], int, int]:
    """The steps `cell` validates at, the problems of one validation and the samples of each."""
    val_problems = cfg["cluster"]["throughput"]["val_problems"] or cfg["splits"]["val_size"]
    # A variant's runs validate on their own split only; a grid run on the extra sets too.
    problems = val_problems + (0 if cell.variant else extra_set_problems(cfg, cell.split, val_problems))
    return tuple(cell_recipe(cell_config(cfg, cell), cell).eval_steps), problems, cfg["eval"]["samples"]


def segment_seconds(cfg: dict, cell, start: int, stop: int, units: UnitCosts | None = None,
                    validation=None) -> dict:
    """One job of `cell` that trains from step `start` (its checkpoint; 0: from the base model) to
    step `stop` and validates at the recipe's steps in between (step 0 too when it starts there):
    {"seconds": its wall seconds, start-ups of all its attempts included; "eval_seconds": the part
    its evaluations take; "attempts"; "evaluations"}. `validation`: `cell_validation(cfg, cell)`, when
    the caller has it."""
    units = UnitCosts.of(cfg) if units is None else units
    steps, problems, samples = validation or cell_validation(cfg, cell)
    n_eval = sum(1 for s in steps if start < s <= stop or s == start == 0)
    work = job_seconds(stop - start, cell.B_p * cell.n * (stop - start), n_eval, problems, samples,
                       replace(units, per_job=0.0))
    tries = attempts(work, units, cfg["cluster"]["max_runtime"])
    return {"seconds": work + tries * units.per_job, "attempts": tries, "evaluations": n_eval,
            "eval_seconds": job_seconds(0, 0, n_eval, problems, samples, replace(units, per_job=0.0))}


def cell_costs(cfg: dict) -> pd.DataFrame:
    """One row per training run (the grid's, then each recipe variant's): split, B_p, n, M_max,
    rollouts, eval rollouts, GPU-hours (eval_gpu_hours: the part its evaluations take), wall hours
    (the start-up of each of its SLURM attempts included), attempts, and `group`: the split, or
    '<variant>/<split>' for a variant's run."""
    gpus = cfg["cluster"]["train"]["gpus"]
    units = UnitCosts.of(cfg)
    rows = []
    for cell in grid_cells(cfg) + variant_cells(cfg):
        B = cell.B_p * cell.n
        validation = cell_validation(cfg, cell)
        job = segment_seconds(cfg, cell, 0, cell.M_max, units, validation)
        wall_h = job["seconds"] / 3600.0
        rows.append({
            "split": cell.split, "B_p": cell.B_p, "n": cell.n, "M_max": cell.M_max,
            "rollouts": B * cell.M_max, "evaluations": job["evaluations"],
            "eval_rollouts": len(validation[0]) * validation[1] * validation[2],
            "wall_hours": wall_h, "gpu_hours": gpus * wall_h, "eval_gpu_hours": gpus * job["eval_seconds"] / 3600.0,
            "attempts": job["attempts"], "group": f"{cell.variant}/{cell.split}" if cell.variant else cell.split,
        })
    return pd.DataFrame(rows, columns=["split", "B_p", "n", "M_max", "rollouts", "evaluations", "eval_rollouts",
                                       "wall_hours", "gpu_hours", "eval_gpu_hours", "attempts", "group"])


def difficulty_gpu_hours(cfg: dict) -> float | None:
    """GPU-hours of the avg@16 sampling of the pool (at the training rate: an upper bound for generation), or
    None when the pool's size is not known before it is loaded."""
    pool = cfg["pool"]
    if pool["source"] == "embedded":
        size = pool["n_problems"]
    else:
        size = pool["max_problems"]
    if size is None:
        return None
    return size * cfg["difficulty"]["samples"] / float(cfg["cluster"]["throughput"]["rollouts_per_gpu_hour"])


def split_summary(costs: pd.DataFrame) -> pd.DataFrame:
    """Per split (and per variant and split, for recipe variants' runs) of `cell_costs`: runs,
    training and evaluation rollouts, GPU-hours, the longest run and the SLURM attempts it needs
    at the site's wall-clock limit (each attempt resumes from a checkpoint)."""
    if costs.empty:
        return pd.DataFrame(columns=["runs", "rollouts", "eval_rollouts", "gpu_hours", "longest_run_hours",
                                     "attempts_of_longest"])
    g = costs.groupby("group" if "group" in costs else "split", sort=False)
    out = pd.DataFrame({
        "runs": g.size(), "rollouts": g["rollouts"].sum(), "eval_rollouts": g["eval_rollouts"].sum(),
        "gpu_hours": g["gpu_hours"].sum(), "longest_run_hours": g["wall_hours"].max(),
    })
    out["attempts_of_longest"] = costs.loc[g["wall_hours"].idxmax().to_numpy(), "attempts"].to_numpy()
    total = pd.DataFrame({"runs": [out["runs"].sum()], "rollouts": [out["rollouts"].sum()],
                          "eval_rollouts": [out["eval_rollouts"].sum()], "gpu_hours": [out["gpu_hours"].sum()],
                          "longest_run_hours": [out["longest_run_hours"].max()],
                          "attempts_of_longest": [out["attempts_of_longest"].max()]}, index=["total"])
    return pd.concat([out, total])

