"""What a study costs before it runs: training runs per split, rollouts, and an
estimate of GPU-hours and wall-clock per run (`isocompute plan CONFIG`).

A pure function of the config. The cost model is deliberately simple and its
constants are config keys (`cluster.throughput`), so a user can calibrate it
from one measured run:

    hours per step   = step_overhead_s / 3600 + B_p * n / (rollouts_per_gpu_hour * gpus)
    run GPU-hours    = gpus * M_max * hours per step  +  evaluation rollouts / rollouts_per_gpu_hour
    evaluations      = the recipe's validation steps (train.eval_schedule)

It is one case of the unit-cost model every cost estimate of the project uses (`UnitCosts`,
`job_seconds`): seconds per job (start-up and wrap-up), per optimizer step, per training rollout
and per validation sample; here the config's throughput sets them (`UnitCosts.of`: no start-up,
a validation sample costs a training rollout), and the power analysis of a study design
(`isocompute.design`) sets them from a finished study's run logs. `packed_wall` packs jobs
onto parallel workers.

The adaptive sweep's expected cost (config section sweep) comes from replaying
its rule on synthetic studies shaped like the config's grid (`adaptive_estimate`):
each cell trains the mean share of its budget the replay gave it, and runs the
mean share of its evaluations; both parts of the bill are printed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.data.eval_sets import extra_set_problems
from isocompute.grid import grid_cells, variant_cells
from isocompute.train.recipe import cell_config, cell_recipe, validation_steps

# Synthetic studies per split and stratum of truths behind the adaptive estimate (a small
# number: the spread over the strata is printed), and the modules whose code decides it (the cache key).
PLAN_REPLAY_SEEDS = 1
REPLAY_COLUMNS = ["split", "stratum", "seed", "share", "share_training", "share_validation", "agreement",
                  "right_by_regret", "reward_diff"]
_RULE_MODULES = ("adaptive.rule", "adaptive.pooled", "adaptive.shared", "adaptive.strata", "adaptive.replay",
                 "fits.synthetic", "fits.sigmoid", "fits.noise", "fits.collapse", "fits.methods", "fits.pooled",
                 "frontier.envelope", "pipeline")


@dataclass(frozen=True)
class UnitCosts:
    """Seconds per unit of work of one training job on what it runs on (its GPUs, or one core)."""

    per_step: float          # optimizer step (generation call, update, logging)
    per_rollout: float       # training rollout
    per_val_sample: float    # validation sample (a problem's sample at an evaluation)
    per_job: float = 0.0     # start-up and wrap-up of a job

    @classmethod
    def of(cls, cfg: dict) -> "UnitCosts":
        """The config's throughput (cluster.throughput, cluster.train.gpus): a step's overhead, and
        rollouts_per_gpu_hour x gpus for training rollouts and validation samples alike."""
        thr = cfg["cluster"]["throughput"]
        per_rollout = 3600.0 / (float(thr["rollouts_per_gpu_hour"]) * cfg["cluster"]["train"]["gpus"])
        return cls(per_step=float(thr["step_overhead_s"]), per_rollout=per_rollout, per_val_sample=per_rollout)


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


def cell_costs(cfg: dict) -> pd.DataFrame:
    """One row per training run (the grid's, then each recipe variant's): split, B_p, n, M_max,
    rollouts, eval rollouts, GPU-hours (eval_gpu_hours: the part its evaluations take), wall hours,
    and `group`: the split, or '<variant>/<split>' for a variant's run."""
    gpus = cfg["cluster"]["train"]["gpus"]
    units = UnitCosts.of(cfg)
    samples = cfg["eval"]["samples"]
    val_problems = cfg["cluster"]["throughput"]["val_problems"] or cfg["splits"]["val_size"]
    rows = []
    for cell in grid_cells(cfg) + variant_cells(cfg):
        B = cell.B_p * cell.n
        n_eval = len(cell_recipe(cell_config(cfg, cell), cell).eval_steps)
        # A variant's runs validate on their own split only; a grid run on the extra sets too.
        problems = val_problems + (0 if cell.variant else extra_set_problems(cfg, cell.split, val_problems))
        eval_rollouts = n_eval * problems * samples
        eval_h = job_seconds(0, 0, n_eval, problems, samples, units) / 3600.0
        wall_h = job_seconds(cell.M_max, B * cell.M_max, n_eval, problems, samples, units) / 3600.0
        rows.append({
            "split": cell.split, "B_p": cell.B_p, "n": cell.n, "M_max": cell.M_max,
            "rollouts": B * cell.M_max, "evaluations": n_eval, "eval_rollouts": eval_rollouts,
            "wall_hours": wall_h, "gpu_hours": gpus * wall_h, "eval_gpu_hours": gpus * eval_h,
            "group": f"{cell.variant}/{cell.split}" if cell.variant else cell.split,
        })
    return pd.DataFrame(rows, columns=["split", "B_p", "n", "M_max", "rollouts", "evaluations", "eval_rollouts",
                                       "wall_hours", "gpu_hours", "eval_gpu_hours", "group"])


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


def synthetic_split_study(cfg: dict, split: str, seed: int, stratum: str = "mid") -> pd.DataFrame:
    """An evaluation table shaped like `split`'s grid: its cells, C_max and validation steps,
    binomial noise of its validation set (splits.val_size problems x eval.k samples), and a known
    truth of `stratum` drawn for this grid (`adaptive.strata.draw_truth`, seed `seed`)."""
    from isocompute.analysis.adaptive.strata import draw_truth
    from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study

    cells = {(c.B_p, c.n): c for c in grid_cells(cfg) if c.split == split}     # seed replicates share a shape
    c_max = float(cfg["grid"][split]["C_max"])
    truth = draw_truth(stratum, seed, tuple(sorted({b for b, _ in cells})), tuple(sorted({n for _, n in cells})), c_max)
    draws = cfg["splits"]["val_size"] * cfg["eval"]["k"]
    parts = [synthetic_study((B_p,), (n,), c_max=c_max, reward=truth.reward,
                             eval_steps=lambda B, M_max, s=validation_steps(cfg, cell): s,
                             noise=EvalNoise(problems=max(1, round(draws / 4)), samples=4, seed=seed * 100_003 + i))
             for i, ((B_p, n), cell) in enumerate(sorted(cells.items()))]
    return pd.concat(parts, ignore_index=True)


def adaptive_estimate(cfg: dict, seeds: int = PLAN_REPLAY_SEEDS, progress=None) -> dict:
    """The adaptive sweep's expected cost, from `seeds` replays per split and stratum of truths
    (`adaptive.strata.STRATA`: how early n* moves, saturating, peaked, null and unstable curves),
    each with the config's sweep section (`adaptive.replay.replay`). Returns {"fractions": one row
    per (split, B_p, n): the mean share of its rollouts the cell trains (fraction) and of its
    evaluations it runs (eval_fraction), over every stratum and seed; "replays": one row per
    (split, stratum, seed): share (the whole bill: training rollouts and validation generations),
    share_training, share_validation, agreement, right_by_regret, reward_diff}. `progress(total=...)`,
    if given, makes a bar that each replay advances (a replay of a paper-scale grid takes seconds)."""
    from isocompute.analysis.adaptive.replay import replay
    from isocompute.analysis.adaptive.strata import STRATA
    from isocompute.sweep import SweepSettings

    params = SweepSettings.from_config(cfg)
    fractions, replays = [], []
    bar = progress(total=len(cfg["grid"]) * seeds * len(STRATA)) if progress is not None and cfg["grid"] else None
    for split in cfg["grid"]:
        for stratum, seed in itertools.product(STRATA, range(seeds)):
            try:
                study = synthetic_split_study(cfg, split, seed, stratum)
            except RuntimeError:           # a grid too small for the stratum (one n: no crossover)
                if bar is not None:
                    bar.update(1)
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                res = replay(study, c_max=float(cfg["grid"][split]["C_max"]), params=params)
            runs = res["runs"]
            fractions.append(runs.assign(split=split, fraction=runs["spent"] / runs["full_compute"],
                                         eval_fraction=runs["evaluations_spent"] / runs["evaluations_full"]))
            replays.append({"split": split, "stratum": stratum, "seed": seed, "share": res["share"],
                            "share_training": res["share_training"], "share_validation": res["share_validation"],
                            "agreement": res["agreement"], "right_by_regret": res["right_by_regret"],
                            "reward_diff": res["reward_diff"]})
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    if not fractions:
        return {"fractions": pd.DataFrame(columns=["split", "B_p", "n", "fraction", "eval_fraction"]),
                "replays": pd.DataFrame(columns=REPLAY_COLUMNS)}
    frac = pd.concat(fractions).groupby(["split", "B_p", "n"], sort=False, as_index=False)[
        ["fraction", "eval_fraction"]].mean()
    return {"fractions": frac, "replays": pd.DataFrame(replays, columns=REPLAY_COLUMNS)}


def adaptive_cache_key(cfg: dict, seeds: int = PLAN_REPLAY_SEEDS) -> str:
    """What `adaptive_estimate` depends on, hashed: the grids, validation steps, validation set
    size, the sweep section, the seeds and the code of the rule and the analysis it uses."""
    import importlib

    state = {"grid": cfg["grid"], "val_size": cfg["splits"]["val_size"], "k": cfg["eval"]["k"],
             "sweep": cfg["sweep"], "seeds": seeds,
             "steps": [[c.split, c.B_p, c.n, list(validation_steps(cfg, c))] for c in grid_cells(cfg)]}
    digest = hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode())
    for name in _RULE_MODULES:
        digest.update(Path(importlib.import_module(f"isocompute.analysis.{name}").__file__).read_bytes())
    digest.update(Path(__file__).read_bytes())          # the synthetic studies and the estimate's columns
    return digest.hexdigest()[:20]


def _adaptive_lines(cfg: dict, costs: pd.DataFrame, adaptive: dict) -> list[str]:
    frac = adaptive["fractions"]
    merged = costs.merge(frac, on=["split", "B_p", "n"], how="left").fillna({"fraction": 1.0, "eval_fraction": 1.0})
    # A run's GPU-hours are its training and its evaluations (cell_costs); each part scales with its own share.
    eval_gpu = merged["eval_gpu_hours"]
    gpu = float(((merged["gpu_hours"] - eval_gpu) * merged["fraction"] + eval_gpu * merged["eval_fraction"]).sum())
    full = float(costs["gpu_hours"].sum())
    train, val = (merged["rollouts"] * merged["fraction"]).sum(), (merged["eval_rollouts"] * merged["eval_fraction"]).sum()
    share = float(train / merged["rollouts"].sum())
    val_share = float(val / merged["eval_rollouts"].sum()) if merged["eval_rollouts"].sum() > 0 else float("nan")
    bill = float((train + val) / (merged["rollouts"].sum() + merged["eval_rollouts"].sum()))
    rep = adaptive["replays"]
    per_stratum = rep.groupby("stratum", sort=False)["share"].mean()
    lo, hi = per_stratum.idxmin(), per_stratum.idxmax()
    sw = cfg["sweep"]
    mode = "this config's mode" if sw["mode"] == "adaptive" else "sweep.mode adaptive; this config: grid"
    return [f"adaptive sweep ({mode}): whole bill {per_stratum.min():.0%} ({lo}) to {per_stratum.max():.0%} ({hi}) "
            f"of the grid's, by when n* moves; ~{gpu:,.0f} GPU-hours instead of ~{full:,.0f} averaged over the "
            f"strata ({bill:.0%}: training rollouts {share:.0%}, validation generations {val_share:.0%})",
            "  the saving depends on the truth: on when n* moves, and on whether n matters at all (where it does "
            "not, the model cannot rule out that one run pulls ahead); per stratum: "
            + ", ".join(f"{k} {v:.0%}" for k, v in per_stratum.items()),
            f"  expected from replaying the rule (bands {sw['bands']}, eta {sw['eta']:.4g}, {sw['rungs']} rungs, "
            f"z {sw['z']}, epsilon {sw['epsilon']:g}) on {rep['seed'].nunique()} synthetic studies per split and "
            f"stratum shaped like this grid (its cells, C_max, validation steps and {cfg['splits']['val_size']} x "
            f"{cfg['eval']['k']} validation draws; truths of isocompute.analysis.adaptive.strata); n* within "
            f"epsilon of the full grid's best at {rep['right_by_regret'].mean():.0%} of probe budgets, the same n* "
            f"at {rep['agreement'].mean():.0%}"]


def format_plan(cfg: dict, adaptive: dict | None = None) -> str:
    """The text `isocompute plan` prints; with `adaptive` (`adaptive_estimate`), the adaptive sweep's
    expected cost too."""
    costs = cell_costs(cfg)
    thr, job = cfg["cluster"]["throughput"], cfg["cluster"]["train"]
    summary = split_summary(costs, cfg["cluster"]["max_runtime"])
    t = cfg["train"]
    when = (f"every {t['eval_interval']} steps" if t["eval_schedule"] == "steps"
            else f"at {t['eval_points_per_octave']} compute points per doubling")
    lines = [f"experiment {cfg['experiment']}: {len(costs)} training runs "
             f"(backend {t['backend']}, {job['gpus']} GPUs per run, validated {when} "
             f"on {thr['val_problems'] or cfg['splits']['val_size']} problems x {cfg['eval']['samples']} samples"
             + (f", and on the extra evaluation sets {', '.join(s['name'] for s in cfg['eval']['extra_sets'])}"
                if cfg["eval"]["extra_sets"] else "") + ")"]
    if costs.empty and cfg.get("compare"):
        names = ", ".join(sorted(cfg["compare"]))
        lines.append(f"compare only ({names}): draws finished experiments' analyses, trains nothing: "
                     "0 GPU-hours")
        return "\n".join(lines)
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
    if adaptive is not None and not adaptive["replays"].empty:   # a study without a grid has no sweep
        lines += _adaptive_lines(cfg, costs, adaptive)
    lines.append(f"assumes {thr['rollouts_per_gpu_hour']:,.0f} rollouts per GPU-hour and "
                 f"{thr['step_overhead_s']:g} s overhead per step (cluster.throughput); "
                 f"SLURM attempts of {cfg['cluster']['max_runtime']} min (cluster.max_runtime)")
    return "\n".join(lines)
