"""The text `isocompute plan CONFIG` prints: the grid's runs, rollouts, GPU-hours and SLURM
attempts per split (`isocompute.cluster.plan`), and, given the replays of `adaptive_cost`, the
adaptive sweep's expected cost as a range over its draws against the grid's.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from isocompute.cluster.adaptive_cost import sweep_costs
from isocompute.cluster.plan import cell_costs, difficulty_gpu_hours, split_summary


def approx(x: float) -> str:
    """`x` to 2 significant figures, with thousands separators: 29,797 -> '30,000', 0.534 -> '0.53'."""
    if not math.isfinite(x) or x == 0:
        return f"{x:g}"
    v = float(f"{x:.2g}")
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:g}"


def _spread(values, unit: str) -> str:
    """'~MEAN UNIT (draws MIN-MAX; sd SD)', each to 2 significant figures."""
    v = np.asarray(values, dtype=float)
    sd = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    return f"~{approx(v.mean())} {unit} (draws {approx(v.min())}-{approx(v.max())}; sd {approx(sd)})"


def _adaptive_lines(cfg: dict, costs: pd.DataFrame, adaptive: dict) -> list[str]:
    frac = adaptive["fractions"]
    merged = costs.merge(frac, on=["split", "B_p", "n"], how="left").fillna({"fraction": 1.0, "eval_fraction": 1.0})
    train = (merged["rollouts"] * merged["fraction"]).sum()
    val = (merged["eval_rollouts"] * merged["eval_fraction"]).sum()
    share = float(train / merged["rollouts"].sum())
    val_share = float(val / merged["eval_rollouts"].sum()) if merged["eval_rollouts"].sum() > 0 else float("nan")
    bill = float((train + val) / (merged["rollouts"].sum() + merged["eval_rollouts"].sum()))
    rep = adaptive["replays"]
    per_stratum = rep.groupby("stratum", sort=False)["share"].mean()
    lo, hi = per_stratum.idxmin(), per_stratum.idxmax()
    sw, thr = cfg["sweep"], cfg["cluster"]["throughput"]
    mode = "this config's mode" if sw["mode"] == "adaptive" else "sweep.mode adaptive; this config: grid"
    lines = [f"adaptive sweep ({mode}): whole bill {per_stratum.min():.0%} ({lo}) to {per_stratum.max():.0%} ({hi}) "
             f"of the grid's, by when n* moves; {bill:.0%} averaged over the strata (training rollouts {share:.0%}, "
             f"validation generations {val_share:.0%})"]
    priced = sweep_costs(cfg, adaptive)
    draws, grid = priced["draws"], priced["grid"]
    where = (f"on {thr['nodes']} nodes (cluster.throughput.nodes)" if thr["nodes"]
             else "every job on a node of its own (cluster.throughput.nodes: null)")
    if draws.empty:
        lines.append("  GPU-hours and wall clock not estimated: no stratum of truths was replayed for every split")
    else:
        lines += [f"  {_spread(draws['gpu_hours'], 'GPU-hours')} over {len(draws)} draws (stratum x seed, every "
                  f"split) instead of the grid's ~{approx(grid['gpu_hours'])}; each job's start-up and "
                  f"checkpointing included ({thr['job_overhead_s']:g} s, cluster.throughput.job_overhead_s): "
                  f"~{approx(draws['jobs'].mean())} SLURM jobs (a job per rung a cell trains, ~"
                  f"{approx(draws['rung_jobs'].mean())}, and their extra attempts) instead of the grid's "
                  f"{grid['jobs']:,} ({grid['runs']:,} runs and their attempts)",
                  f"  wall clock {_spread(draws['wall_hours'], 'h')} instead of the grid's "
                  f"~{approx(grid['wall_hours'])} h, {where}: each of the {sw['rungs']} rungs waits for its slowest "
                  f"job before the next rung's decision (queueing and the decisions' own minutes left out)"]
    lines += ["  the saving depends on the truth: on when n* moves, and on whether n matters at all (where it does "
              "not, the model cannot rule out that one run pulls ahead); per stratum: "
              + ", ".join(f"{k} {v:.0%}" for k, v in per_stratum.items()),
              f"  expected from replaying the rule (bands {sw['bands']}, eta {sw['eta']:.4g}, {sw['rungs']} rungs, "
              f"z {sw['z']}, epsilon {sw['epsilon']:g}{' of the rise' if sw['epsilon_of'] == 'rise' else ''}, "
              f"and the rest of the sweep and analysis sections) on "
              f"{rep['seed'].nunique()} synthetic studies per split and "
              f"stratum shaped like this grid (its cells, C_max, validation steps and {cfg['splits']['val_size']} x "
              f"{cfg['eval']['k']} validation draws; truths of isocompute.analysis.adaptive.strata); n* within "
              f"the regret it accepts of the full grid's best at {rep['right_by_regret'].mean():.0%} of probe budgets, "
              f"the same n* "
              f"at {rep['agreement'].mean():.0%}"]
    return lines + _failed_lines(adaptive)


def _failed_lines(adaptive: dict) -> list[str]:
    """Each (split, stratum, seed) the estimate could not replay, by name and reason."""
    failed = adaptive.get("failed")
    return [f"  stratum {row.stratum} not replayed for split {row.split} (seed {row.seed}): {row.reason}; "
            "its draw is left out of the GPU-hours and wall clock"
            for row in ([] if failed is None or failed.empty else failed.itertuples(index=False))]


def format_plan(cfg: dict, adaptive: dict | None = None) -> str:
    """The text `isocompute plan` prints; with `adaptive` (`adaptive_estimate`), the adaptive sweep's
    expected cost too."""
    costs = cell_costs(cfg)
    thr, job = cfg["cluster"]["throughput"], cfg["cluster"]["train"]
    summary = split_summary(costs)
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
    if adaptive is not None and not adaptive["replays"].empty:
        lines += _adaptive_lines(cfg, costs, adaptive)
    elif adaptive is not None and cfg["grid"]:            # a study without a grid has no sweep
        lines += ["adaptive sweep: not estimated, no replay of it ran"] + _failed_lines(adaptive)
    lines.append(f"assumes {thr['rollouts_per_gpu_hour']:,.0f} rollouts per GPU-hour, "
                 f"{thr['step_overhead_s']:g} s overhead per step and {thr['job_overhead_s']:g} s per job "
                 f"(cluster.throughput); SLURM attempts of {cfg['cluster']['max_runtime']} min (cluster.max_runtime)")
    return "\n".join(lines)
