"""What a study design costs on this machine: the unit costs of `isocompute.cluster.plan`'s cost
model (`UnitCosts`, `job_seconds`), measured on a finished study.

A training job of the local backend costs a fixed start-up (process, model load, the
end-of-run probe, writing), a cost per optimizer step, a cost per training rollout and a cost
per validation sample (problems x 4 samples at each evaluation). The step term is not
optional: at a fixed C_max the embedded study's B = 8 runs took 85 s and its B = 256 runs 15 s,
so a model in rollouts alone would price them the same. `MEASURED` was measured on a finished
study (`measure`, on `make replicate`: a least-squares fit of each run's wall time less its
evaluation time on its steps and rollouts, from runs/{split}/{cell}/metrics.jsonl and run.json;
the start-up is the job's wall time in benchmarks/train/**/*.tsv less the run's own). Jobs are
packed onto parallel workers, longest first (`plan.packed_wall`).

    PYTHONPATH=src .venv/bin/python benchmarks/power_cost.py [results/replicate_pilot]   # re-measure
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.cluster.plan import UnitCosts, job_seconds

EVAL_SAMPLES = 4        # avg@4

# Measured on `make replicate` of 2026-12-03, results/replicate_pilot with 400 validation problems,
# the machine shared with tests part of the time; the release before measured 0.0695, 0.00120,
# 0.000628 and 10.7 on results/embedded. Per step: 0.0368 s; per validation sample 0.000409 s
# (0.65 s per evaluation of 400 problems x 4).
MEASURED = UnitCosts(per_step=0.0368, per_rollout=0.000861, per_val_sample=0.000409, per_job=3.92)


def _run_rows(results: Path):
    for run_json in sorted(results.glob("runs/*/*/run.json")):
        run = json.loads(run_json.read_text())
        lines = [json.loads(line) for line in (run_json.parent / "metrics.jsonl").read_text().splitlines() if line]
        evals = [m["data"]["timing_s/eval"] for m in lines if "timing_s/eval" in m["data"]]
        split, cell = run_json.parent.parent.name, run_json.parent.name
        tsv = results / "benchmarks" / "train" / split / f"{cell}.tsv"
        job = float(pd.read_csv(tsv, sep="\t")["s"].iloc[0]) if tsv.exists() else np.nan
        yield {"split": split, "cell": cell, "steps": run["steps"], "rollouts": run["steps"] * run["B_p"] * run["n"],
               "evaluations": len(evals), "problems": run["val_problems"], "eval_s": sum(evals),
               "wall_s": run["wall_s"], "job_s": job}


def measure(results: Path) -> tuple[UnitCosts, pd.DataFrame]:
    """Per-unit costs from a finished study's run logs (each run's validation size from its run.json),
    and the table of runs they came from (with the model's prediction of each job)."""
    runs = pd.DataFrame(list(_run_rows(Path(results))))
    if runs.empty:
        raise FileNotFoundError(f"{results}: no runs/*/*/run.json")
    X = runs[["steps", "rollouts"]].to_numpy(dtype=float)
    (per_step, per_rollout), *_ = np.linalg.lstsq(X, (runs["wall_s"] - runs["eval_s"]).to_numpy(), rcond=None)
    units = UnitCosts(per_step=float(per_step), per_rollout=float(per_rollout),
                      per_val_sample=float(runs["eval_s"].sum()
                                           / (runs["evaluations"] * runs["problems"] * EVAL_SAMPLES).sum()),
                      per_job=float((runs["job_s"] - runs["wall_s"]).mean()))
    runs["model_s"] = [job_seconds(r.steps, r.rollouts, r.evaluations, r.problems, EVAL_SAMPLES, units)
                       for r in runs.itertuples()]
    return units, runs
