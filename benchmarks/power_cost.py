"""What a study design costs on this machine: the cost model of `power_nstar`.

A training job of the local backend costs a fixed start-up (process, model
load, the end-of-run probe, writing), a cost per optimizer step, a cost per
training rollout and a cost per validation sample (problems x 4 samples at
each evaluation). The step term is not optional: at a fixed C_max the
embedded study's B = 8 runs took 85 s and its B = 256 runs 15 s, so a model
in rollouts alone would price them the same. The defaults were measured on
a finished study (`measure`, on `make replicate`: a least-squares fit of each run's
wall time less its evaluation time on its steps and rollouts, from
runs/{split}/{cell}/metrics.jsonl and run.json; the start-up is the job's
wall time in benchmarks/train/**/*.tsv less the run's own). Jobs are packed
onto `cores` parallel workers, longest first.

    PYTHONPATH=src .venv/bin/python benchmarks/power_cost.py [results/replicate_pilot]   # re-measure
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

EVAL_SAMPLES = 4        # avg@4


@dataclass(frozen=True)
class UnitCosts:
    """Seconds per unit of work of one job on one core (defaults: measured on `make replicate` of
    2026-12-03, results/replicate_pilot with 400 validation problems, the machine shared with tests part
    of the time; the release before measured 0.0695, 0.00120, 0.000628 and 10.7 on results/embedded)."""

    per_step: float = 0.0368          # optimizer step (generation call, update, logging)
    per_rollout: float = 0.000861     # training rollout
    per_val_sample: float = 0.000409  # validation sample (0.65 s per evaluation of 400 problems x 4)
    per_job: float = 3.92             # start-up and wrap-up of a job


def job_seconds(steps: int, rollouts: int, evaluations: int, problems: int, units: UnitCosts) -> float:
    """Wall seconds of one training job on one core."""
    return (units.per_job + units.per_step * steps + units.per_rollout * rollouts
            + units.per_val_sample * evaluations * problems * EVAL_SAMPLES)


def packed_wall(seconds, cores: int) -> float:
    """Wall time of independent jobs on `cores` workers, each job to the least loaded one, longest first."""
    load = np.zeros(max(int(cores), 1))
    for s in sorted(seconds, reverse=True):
        load[load.argmin()] += s
    return float(load.max())


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
        raise SystemExit(f"{results}: no runs/*/*/run.json")
    X = runs[["steps", "rollouts"]].to_numpy(dtype=float)
    (per_step, per_rollout), *_ = np.linalg.lstsq(X, (runs["wall_s"] - runs["eval_s"]).to_numpy(), rcond=None)
    units = UnitCosts(per_step=float(per_step), per_rollout=float(per_rollout),
                      per_val_sample=float(runs["eval_s"].sum()
                                           / (runs["evaluations"] * runs["problems"] * EVAL_SAMPLES).sum()),
                      per_job=float((runs["job_s"] - runs["wall_s"]).mean()))
    runs["model_s"] = [job_seconds(r.steps, r.rollouts, r.evaluations, r.problems, units) for r in runs.itertuples()]
    return units, runs


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    units, runs = measure(Path(args[0] if args else "results/replicate_pilot"))
    print(runs.round(2).to_string(index=False))
    err = runs["model_s"] - runs["job_s"]
    print(f"\n{units}\nmodel - measured job seconds: mean {err.mean():+.2f}, sd {err.std():.2f}, "
          f"total {runs['model_s'].sum():.0f} vs {runs['job_s'].sum():.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
