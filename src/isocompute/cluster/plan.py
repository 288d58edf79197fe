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

The adaptive sweep's expected cost (config section sweep) comes from replaying
its rule on synthetic studies shaped like the config's grid (`adaptive_estimate`,
several per split and stratum of truths): each rung of each cell it trains is
a job of its own, priced by the same model (`segment_seconds`, one start-up
each), and each rung waits for its slowest job before the next rung's decision,
so the sweep's wall clock is the sum over rungs of the rung's packed wall
(`sweep_costs`). The GPU-hours and wall clock are printed as a range over the
draws, against the grid's.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.data.eval_sets import extra_set_problems
from isocompute.grid import grid_cells, variant_cells
from isocompute.sweep import stop_step
from isocompute.train.recipe import cell_config, cell_recipe, validation_steps

# Synthetic studies per split and stratum of truths behind the adaptive estimate (a small
# number, each a draw of the range printed: 3 x 8 strata x 2 splits of the paper's main study
# replay in about 4 CPU-minutes, spread over the cores), and the modules whose code decides it
# (the cache key).
PLAN_REPLAY_SEEDS = 3
REPLAY_COLUMNS = ["split", "stratum", "seed", "share", "share_training", "share_validation", "agreement",
                  "right_by_regret", "reward_diff"]
# One row per job a replayed sweep runs: a cell (split, B_p, n) trained from the compute of its last
# checkpoint (from_compute; 0 at the first rung) to a rung's (to_compute).
JOB_COLUMNS = ["split", "stratum", "seed", "rung", "B_p", "n", "from_compute", "to_compute"]
FAILED_COLUMNS = ["split", "stratum", "seed", "reason"]
DRAW_COLUMNS = ["stratum", "seed", "gpu_hours", "wall_hours", "jobs", "rung_jobs"]
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


def _validation(cfg: dict, cell) -> tuple[tuple[int, ...], int, int]:
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
    its evaluations take; "attempts"; "evaluations"}. `validation`: `_validation(cfg, cell)`, when
    the caller has it."""
    units = UnitCosts.of(cfg) if units is None else units
    steps, problems, samples = validation or _validation(cfg, cell)
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
        validation = _validation(cfg, cell)
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


def _replay_draw(cfg: dict, split: str, stratum: str, seed: int) -> dict:
    """One replay of `adaptive_estimate`: the sweep of the config (its sweep and analysis sections)
    on a synthetic study of `split` with a truth of `stratum` drawn with `seed`. Returns the key
    (split, stratum, seed) with "runs" (the replay's, with their shares), "replay" (its scores) and
    "jobs" (`JOB_COLUMNS`, from the rule's decisions per rung), or with "reason" where no truth of
    the stratum could be drawn for this grid."""
    from isocompute.analysis.adaptive.replay import replay
    from isocompute.analysis.fits.settings import AnalysisSettings
    from isocompute.sweep import SweepSettings

    key = {"split": split, "stratum": stratum, "seed": seed}
    try:
        study = synthetic_split_study(cfg, split, seed, stratum)
    except RuntimeError as exc:           # a grid too small for the stratum (one n: no crossover)
        return {**key, "reason": str(exc)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = replay(study, c_max=float(cfg["grid"][split]["C_max"]), params=SweepSettings.from_config(cfg),
                     settings=AnalysisSettings.from_config(cfg))
    runs, budgets = res["runs"], res["budgets"]
    # Every cell trains to the first rung; after each decision, the cells going on (and those the
    # safety net resumes) train from their last rung's checkpoint to the next: a job each.
    reached = {(int(b), int(n)): 0 for b, n in zip(runs["B_p"], runs["n"])}
    jobs = [{**key, "rung": 0, "B_p": b, "n": n, "from_compute": 0.0, "to_compute": float(budgets[0])}
            for b, n in reached]
    for rung, entry in enumerate(res["log"], start=1):
        for b, n in sorted((int(b), int(n)) for b, n in entry["going"]):
            jobs.append({**key, "rung": rung, "B_p": b, "n": n, "from_compute": float(budgets[reached[(b, n)]]),
                         "to_compute": float(budgets[rung])})
            reached[(b, n)] = rung
    return {**key, "jobs": jobs,
            "runs": runs.assign(split=split, fraction=runs["spent"] / runs["full_compute"],
                                eval_fraction=runs["evaluations_spent"] / runs["evaluations_full"]),
            "replay": {**key, **{k: res[k] for k in REPLAY_COLUMNS[3:]}}}


def _workers(tasks: int) -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:                # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, tasks))


def adaptive_estimate(cfg: dict, seeds: int = PLAN_REPLAY_SEEDS, progress=None, workers: int | None = None) -> dict:
    """The adaptive sweep's expected cost, from `seeds` replays per split and stratum of truths
    (`adaptive.strata.STRATA`: how early n* moves, saturating, peaked, null and unstable curves),
    each the sweep of the config's sweep and analysis sections (`adaptive.replay.replay`), in
    `workers` processes (default: one per core, at most one per replay). Returns {"fractions": one
    row per (split, B_p, n): the mean share of its rollouts the cell trains (fraction) and of its
    evaluations it runs (eval_fraction), over every stratum and seed; "replays": one row per
    (split, stratum, seed): share (the whole bill: training rollouts and validation generations),
    share_training, share_validation, agreement, right_by_regret, reward_diff; "jobs": every job the
    replayed sweeps run (`JOB_COLUMNS`); "failed": one row per (split, stratum, seed) not replayed,
    with the reason (no truth of the stratum on this grid); "draws": their price by the config's
    cost model (`sweep_costs`)}. `progress(total=...)`, if given, makes a bar that each replay
    advances (a replay of a paper-scale grid takes seconds)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from isocompute.analysis.adaptive.strata import STRATA

    tasks = [(split, stratum, seed) for split in cfg["grid"] for stratum, seed in itertools.product(STRATA, range(seeds))]
    workers = _workers(len(tasks)) if workers is None else max(1, int(workers))
    bar = progress(total=len(tasks)) if progress is not None and tasks else None
    if workers == 1:
        results = []
        for task in tasks:
            results.append(_replay_draw(cfg, *task))
            if bar is not None:
                bar.update(1)
    else:
        with ProcessPoolExecutor(workers) as pool:
            futures = [pool.submit(_replay_draw, cfg, *task) for task in tasks]
            for _ in as_completed(futures):
                if bar is not None:
                    bar.update(1)
            results = [f.result() for f in futures]
    if bar is not None:
        bar.close()
    done = [r for r in results if "reason" not in r]
    out = {"replays": pd.DataFrame([r["replay"] for r in done], columns=REPLAY_COLUMNS),
           "jobs": pd.DataFrame([j for r in done for j in r["jobs"]], columns=JOB_COLUMNS),
           "failed": pd.DataFrame([{k: r[k] for k in FAILED_COLUMNS} for r in results if "reason" in r],
                                  columns=FAILED_COLUMNS)}
    if done:
        out["fractions"] = pd.concat([r["runs"] for r in done]).groupby(["split", "B_p", "n"], sort=False,
                                                                       as_index=False)[["fraction", "eval_fraction"]].mean()
    else:
        out["fractions"] = pd.DataFrame(columns=["split", "B_p", "n", "fraction", "eval_fraction"])
    out["draws"] = sweep_costs(cfg, out)["draws"]
    return out


def sweep_costs(cfg: dict, estimate: dict) -> dict:
    """The replayed sweeps of `estimate` (`adaptive_estimate`'s jobs and failed) and the grid priced
    by the config's cost model (`segment_seconds`: a start-up per job and SLURM attempt). Returns
    {"draws": one row per (stratum, seed) replayed for every split (`DRAW_COLUMNS`): the sweep's
    GPU-hours, wall hours, SLURM jobs (attempts included) and rung jobs; "grid": {"gpu_hours",
    "wall_hours", "jobs", "runs"}}.

    The sweep's wall clock has rung barriers: every rung of every split waits for its slowest job
    before the next rung's decision, so it is the sum over rungs of the rung's jobs packed on
    cluster.throughput.nodes (`packed_wall`; null: a node each, the rung's slowest job), the
    splits' rungs side by side. The grid's is its runs packed the same way. A recipe variant's
    runs train whole in both, beside the sweep's rungs. Queueing and the decisions' own minutes
    are left out of both."""
    gpus, nodes = cfg["cluster"]["train"]["gpus"], cfg["cluster"]["throughput"]["nodes"]
    units = UnitCosts.of(cfg)
    costs = cell_costs(cfg)
    grid = {"gpu_hours": float(costs["gpu_hours"].sum()), "runs": len(costs), "jobs": int(costs["attempts"].sum()),
            "wall_hours": packed_wall(costs["wall_hours"], nodes or len(costs)) if len(costs) else 0.0}
    variants = costs[costs["group"] != costs["split"]]
    variants_wall = packed_wall(variants["wall_hours"], nodes or len(variants)) if len(variants) else 0.0
    cells: dict = {}
    for cell in grid_cells(cfg):                 # seed replicates: a job each
        cells.setdefault((cell.split, cell.B_p, cell.n), []).append(cell)
    validation, priced = {}, {}

    def price(cell, start, stop):
        key = (cell.split, cell.B_p, cell.n, start, stop)
        if key not in priced:
            if (cell.split, cell.B_p, cell.n) not in validation:
                validation[(cell.split, cell.B_p, cell.n)] = _validation(cfg, cell)
            priced[key] = segment_seconds(cfg, cell, start, stop, units, validation[(cell.split, cell.B_p, cell.n)])
        return priced[key]

    jobs, failed = estimate.get("jobs"), estimate.get("failed")
    incomplete = set() if failed is None or failed.empty else set(zip(failed["stratum"], failed["seed"]))
    rows = []
    if jobs is not None and not jobs.empty:
        for (stratum, seed), draw in jobs.groupby(["stratum", "seed"], sort=False):
            if (stratum, seed) in incomplete:
                continue
            per_rung: dict = {}
            gpu_h, n_jobs, rung_jobs = float(variants["gpu_hours"].sum()), int(variants["attempts"].sum()), 0
            for split, rung, B_p, n, lo, hi in draw[["split", "rung", "B_p", "n", "from_compute",
                                                      "to_compute"]].itertuples(index=False):
                for cell in cells.get((split, int(B_p), int(n)), []):
                    start = 0 if lo <= 0 else stop_step(cell, lo)
                    stop = stop_step(cell, hi)
                    if stop <= start:                # nothing left to train: no job
                        continue
                    job = price(cell, start, stop)
                    per_rung.setdefault(int(rung), []).append(job["seconds"])
                    gpu_h += gpus * job["seconds"] / 3600.0
                    n_jobs += job["attempts"]
                    rung_jobs += 1
            wall = sum(packed_wall(s, nodes or len(s)) for s in per_rung.values()) / 3600.0
            rows.append({"stratum": stratum, "seed": int(seed), "gpu_hours": gpu_h,
                         "wall_hours": max(wall, variants_wall), "jobs": n_jobs, "rung_jobs": rung_jobs})
    return {"draws": pd.DataFrame(rows, columns=DRAW_COLUMNS), "grid": grid}


def adaptive_cache_key(cfg: dict, seeds: int = PLAN_REPLAY_SEEDS) -> str:
    """What `adaptive_estimate` depends on, hashed: the grids, validation steps, validation set
    size, the sweep and analysis sections, the seeds and the code of the rule and the analysis it
    uses. Not the cost model: `format_plan` prices the cached jobs afresh (`sweep_costs`)."""
    import importlib

    state = {"grid": cfg["grid"], "val_size": cfg["splits"]["val_size"], "k": cfg["eval"]["k"],
             "sweep": cfg["sweep"], "analysis": cfg["analysis"], "seed": cfg["seed"], "seeds": seeds,
             "steps": [[c.split, c.B_p, c.n, list(validation_steps(cfg, c))] for c in grid_cells(cfg)]}
    digest = hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode())
    for name in _RULE_MODULES:
        digest.update(Path(importlib.import_module(f"isocompute.analysis.{name}").__file__).read_bytes())
    digest.update(Path(__file__).read_bytes())          # the synthetic studies and the estimate's columns
    return digest.hexdigest()[:20]


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
    train, val = (merged["rollouts"] * merged["fraction"]).sum(), (merged["eval_rollouts"] * merged["eval_fraction"]).sum()
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
              f"z {sw['z']}, epsilon {sw['epsilon']:g}, and the rest of the sweep and analysis sections) on "
              f"{rep['seed'].nunique()} synthetic studies per split and "
              f"stratum shaped like this grid (its cells, C_max, validation steps and {cfg['splits']['val_size']} x "
              f"{cfg['eval']['k']} validation draws; truths of isocompute.analysis.adaptive.strata); n* within "
              f"epsilon of the full grid's best at {rep['right_by_regret'].mean():.0%} of probe budgets, the same n* "
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
