"""What the adaptive sweep (config section sweep) is expected to cost, before it runs: replays of
its rule on synthetic studies shaped like the config's grid (`adaptive_estimate`, several per
split and stratum of truths), priced by `isocompute.cluster.plan`'s one cost model.

Each rung of each cell a replayed sweep trains is a job of its own, priced by `plan.segment_seconds`
(one start-up each), and each rung waits for its slowest job before the next rung's decision, so
the sweep's wall clock is the sum over rungs of the rung's packed wall (`sweep_costs`,
`plan.packed_wall`). `isocompute plan` prints the GPU-hours and wall clock as a range over the
draws, against the grid's (`plan_report`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import warnings
from pathlib import Path

import pandas as pd

from isocompute.cluster.plan import UnitCosts, cell_costs, cell_validation, packed_wall, segment_seconds
from isocompute.grid import grid_cells
from isocompute.sweep import stop_step
from isocompute.train.recipe import validation_steps

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
                validation[(cell.split, cell.B_p, cell.n)] = cell_validation(cfg, cell)
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
