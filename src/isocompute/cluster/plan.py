"""What a study costs before it runs: training runs per split, rollouts, and an
estimate of GPU-hours and wall-clock per run (`isocompute plan CONFIG`).

A pure function of the config. The cost model is deliberately simple and its
constants are config keys (`cluster.throughput`), so a user can calibrate it
from one measured run:

    hours per step   = step_overhead_s / 3600 + B_p * n / (rollouts_per_gpu_hour * gpus)
    run GPU-hours    = gpus * M_max * hours per step  +  evaluation rollouts / rollouts_per_gpu_hour
    evaluations      = the recipe's validation steps (train.eval_schedule)
"""

from __future__ import annotations

import math

import pandas as pd

from isocompute.grid import grid_cells, variant_cells
from isocompute.train.recipe import cell_config, cell_recipe


def cell_costs(cfg: dict) -> pd.DataFrame:
    """One row per training run (the grid's, then each recipe variant's): split, B_p, n, M_max,
    rollouts, eval rollouts, GPU-hours, wall hours, and `group`: the split, or
    '<variant>/<split>' for a variant's run."""
    thr = cfg["cluster"]["throughput"]
    gpus = cfg["cluster"]["train"]["gpus"]
    rate = float(thr["rollouts_per_gpu_hour"])
    val_problems = thr["val_problems"] or cfg["splits"]["val_size"]
    rows = []
    for cell in grid_cells(cfg) + variant_cells(cfg):
        B = cell.B_p * cell.n
        step_h = thr["step_overhead_s"] / 3600.0 + B / (rate * gpus)
        n_eval = len(cell_recipe(cell_config(cfg, cell), cell).eval_steps)
        eval_rollouts = n_eval * val_problems * cfg["eval"]["samples"]
        wall_h = cell.M_max * step_h + eval_rollouts / (rate * gpus)
        rows.append({
            "split": cell.split, "B_p": cell.B_p, "n": cell.n, "M_max": cell.M_max,
            "rollouts": B * cell.M_max, "evaluations": n_eval, "eval_rollouts": eval_rollouts,
            "wall_hours": wall_h, "gpu_hours": gpus * wall_h,
            "group": f"{cell.variant}/{cell.split}" if cell.variant else cell.split,
        })
    return pd.DataFrame(rows, columns=["split", "B_p", "n", "M_max", "rollouts", "evaluations", "eval_rollouts",
                                       "wall_hours", "gpu_hours", "group"])


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


def split_summary(costs: pd.DataFrame, max_runtime_min: int) -> pd.DataFrame:
    """Per split (and per variant and split, for recipe variants' runs): runs, training and
    evaluation rollouts, GPU-hours, the longest run and the SLURM attempts it needs at the
    site's wall-clock limit (each attempt resumes from a checkpoint)."""
    if costs.empty:
        return pd.DataFrame(columns=["runs", "rollouts", "eval_rollouts", "gpu_hours", "longest_run_hours",
                                     "attempts_of_longest"])
    g = costs.groupby("group" if "group" in costs else "split", sort=False)
    out = pd.DataFrame({
        "runs": g.size(), "rollouts": g["rollouts"].sum(), "eval_rollouts": g["eval_rollouts"].sum(),
        "gpu_hours": g["gpu_hours"].sum(), "longest_run_hours": g["wall_hours"].max(),
    })
    out["attempts_of_longest"] = [math.ceil(h * 60 / max_runtime_min) for h in out["longest_run_hours"]]
    total = pd.DataFrame({"runs": [out["runs"].sum()], "rollouts": [out["rollouts"].sum()],
                          "eval_rollouts": [out["eval_rollouts"].sum()], "gpu_hours": [out["gpu_hours"].sum()],
                          "longest_run_hours": [out["longest_run_hours"].max()],
                          "attempts_of_longest": [out["attempts_of_longest"].max()]}, index=["total"])
    return pd.concat([out, total])


def format_plan(cfg: dict) -> str:
    """The text `isocompute plan` prints."""
    costs = cell_costs(cfg)
    thr, job = cfg["cluster"]["throughput"], cfg["cluster"]["train"]
    summary = split_summary(costs, cfg["cluster"]["max_runtime"])
    t = cfg["train"]
    when = (f"every {t['eval_interval']} steps" if t["eval_schedule"] == "steps"
            else f"at {t['eval_points_per_octave']} compute points per doubling")
    lines = [f"experiment {cfg['experiment']}: {len(costs)} training runs "
             f"(backend {t['backend']}, {job['gpus']} GPUs per run, validated {when} "
             f"on {thr['val_problems'] or cfg['splits']['val_size']} problems x {cfg['eval']['samples']} samples)"]
    if costs.empty:
        lines.append("no grid: the config trains nothing (add grid.<split> entries or variants)")
        return "\n".join(lines)
    table = summary.copy()
    for col in ("rollouts", "eval_rollouts"):
        table[col] = table[col].map(lambda v: f"{v:,.0f}")
    table["gpu_hours"] = table["gpu_hours"].map(lambda v: f"{v:,.0f}")
    table["longest_run_hours"] = table["longest_run_hours"].map(lambda v: f"{v:,.1f}")
    lines.append(table.to_string())
    diff = difficulty_gpu_hours(cfg)
    jobs = cfg["cluster"]["sample"]["jobs"]
    lines.append("difficulty sampling: " + (f"~{diff:,.0f} GPU-hours in {jobs} parallel jobs "
                                             f"(~{diff / jobs:,.1f} h each, cluster.sample.jobs)" if diff is not None
                                             else "pool size unknown until loaded (set pool.max_problems to estimate)"))
    total = float(summary.loc["total", "gpu_hours"]) + (diff or 0.0)
    lines.append(f"estimated total: ~{total:,.0f} GPU-hours"
                 + (f" ({cfg['cluster']['gpu_model']})" if cfg["cluster"]["gpu_model"] else ""))
    lines.append(f"assumes {thr['rollouts_per_gpu_hour']:,.0f} rollouts per GPU-hour and "
                 f"{thr['step_overhead_s']:g} s overhead per step (cluster.throughput); "
                 f"SLURM attempts of {cfg['cluster']['max_runtime']} min (cluster.max_runtime)")
    return "\n".join(lines)
