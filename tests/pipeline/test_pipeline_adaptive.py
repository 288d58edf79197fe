"""End to end: the adaptive sweep (sweep.mode: adaptive) of a tiny study through
snakemake. `snakemake -n` shows rung 0's jobs only; once rung 0 is decided (a
checkpoint), it shows the last rung's jobs for the runs that go on. A run killed
mid-rung resumes from its checkpoint, not from step 0; every run that goes on
resumes from its rung-0 checkpoint; a stopped run keeps its rung-0 evaluations
in the analysis, and the others reach M_max. A cluster job's own Snakemake
(--mode remote, as under --profile slurm) builds a last-rung job.

The tiny model barely learns in a few steps, so its curves are flat within their
noise and the rule (rightly) lets every run go on. The test therefore replaces
rung 0's decision by one that stops a run, as the rule does on a study that
learns (its own tests: tests/analysis/adaptive/test_adaptive.py), before the sweep goes on.
"""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from isocompute.config import check_config
from isocompute.grid import grid_cells
from isocompute.sweep import rung_stop_steps
from isocompute.train.recipe import cell_recipe
from support import TINY_CONFIG, job_counts, make_study_dir, run_snakemake, seed_study, write_config

pytestmark = pytest.mark.slow

# Three runs of one B_p; rung 0 at C_max / 4 = 16 rollouts, the last rung at C_max = 64.
ADAPTIVE = {
    **TINY_CONFIG,
    "grid": {"easy": {"B_p": [2], "n": [2, 4, 8], "B_max": 16, "C_max": 64}},
    "train": {"lr_base": 1e-3, "B_ref": 8, "warmup_steps": 2, "probe_problems": 0},
    "eval": {"k": 4, "samples": 4},
    "sweep": {"mode": "adaptive", "eta": 4, "rungs": 2},
}
RUNS = {"bp2_n2": (4, 16), "bp2_n4": (2, 8), "bp2_n8": (1, 4)}  # run -> (rung-0 stop step, M_max)
STOPPED, KILLED = "bp2_n4", "bp2_n2"
TABLES = "results/tiny/analysis/easy/tables"
DECISIONS = "results/tiny/sweep/easy/rung0/decisions.csv"


def kill_step() -> tuple[int, int]:
    """(step at which the killed run dies, the checkpoint it must resume from): after the first
    evaluation step past its rung-0 stop, before the next one's checkpoint."""
    cfg = check_config(json.loads(json.dumps(ADAPTIVE)))
    cell = next(c for c in grid_cells(cfg) if c.name == KILLED)
    stop, M_max = RUNS[KILLED]
    assert rung_stop_steps(cfg, cell) == [stop, M_max]
    later = [s for s in cell_recipe(cfg, cell).eval_steps if stop < s < M_max]
    return later[1], later[0]  # dies after step later[1]'s records, before its checkpoint


def test_adaptive_sweep_grows_rung_by_rung_and_resumes(tmp_path, tiny_stages):
    work = seed_study(make_study_dir(tmp_path / "adaptive"), tiny_stages)
    cfg = str(write_config(work, ADAPTIVE))
    runs = work / "results" / "tiny" / "runs" / "easy"

    # Before any job: rung 0 of every run, its scoring and the decision; no full run yet.
    dry = run_snakemake(work, "-n", "--configfile", cfg)
    counts = job_counts(dry.stdout + dry.stderr)
    assert (counts["train_rung"], counts["score_rung"], counts["adaptive_rung"]) == (3, 3, 1), counts
    assert "train" not in counts and "score" not in counts

    run_snakemake(work, DECISIONS, "--cores", "2", "--configfile", cfg)
    with open(work / DECISIONS, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(r["run"] for r in rows) == sorted(RUNS)
    for r in rows:
        assert int(r["stop_step"]) == RUNS[r["run"]][0] and float(r["rung_compute"]) == 16.0 and r["reason"]
        marker = json.loads((runs / r["run"] / "rungs" / "0" / "rung.json").read_text())
        assert (marker["rung"], marker["stop_at_step"], marker["steps"], marker["M_max"]) == \
            (0, RUNS[r["run"]][0], RUNS[r["run"]][0], RUNS[r["run"]][1])
        assert not (runs / r["run"] / "run.json").exists()
    # The rule's decision, replaced by one that stops a run (see the module docstring).
    for r in rows:
        r["continue"] = str(r["run"] != STOPPED)
    with open(work / DECISIONS, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    # The DAG has grown: the last rung of the runs that go on.
    dry = run_snakemake(work, TABLES, "-n", "--configfile", cfg)
    counts = job_counts(dry.stdout + dry.stderr)
    assert (counts["train"], counts["score"], counts["collect"]) == (2, 2, 1), counts
    assert "train_rung" not in counts and "adaptive_rung" not in counts
    # What a SLURM job runs: a Snakemake holding that job alone (--mode remote), where the
    # checkpoint looks unmade; it reads the decision from disk.
    remote = run_snakemake(work, "--target-jobs", "train:split=easy,B_p=2,n=8,rep=", "--allowed-rules", "train",
                           "--mode", "remote", "--cores", "1", "--nolock", "-n", "--configfile", cfg)
    assert "rung0/decisions.csv" in remote.stdout + remote.stderr

    # One run is killed (SIGKILL) mid-rung; the re-run resumes it from its last checkpoint.
    dies_at, resumes_from = kill_step()
    killed = run_snakemake(work, TABLES, "--cores", "2", "--configfile", cfg, check=False,
                           env_extra={"ISOCOMPUTE_FAULT_AT": f"easy/{KILLED}:{dies_at}"})
    assert killed.returncode != 0 and not (runs / KILLED / "run.json").exists()
    metrics = [json.loads(line)["step"] for line in (runs / KILLED / "metrics.jsonl").read_text().splitlines()]
    assert metrics[-1] == dies_at
    run_snakemake(work, TABLES, "--cores", "2", "--configfile", cfg)

    for run, (stop, M_max) in RUNS.items():
        evals = pd.read_parquet(runs / run / ("rungs/0/evals.parquet" if run == STOPPED else "evals.parquet"))
        assert evals["step"].max() == (stop if run == STOPPED else M_max), run
        if run == STOPPED:
            assert not (runs / run / "run.json").exists()
            continue
        marker = json.loads((runs / run / "run.json").read_text())
        assert marker["steps"] == M_max
        # Never a step trained twice in the records: one per step, 0..M_max.
        steps = [json.loads(line)["step"] for line in (runs / run / "metrics.jsonl").read_text().splitlines()]
        assert steps == list(range(M_max + 1)), run
        assert marker["resumed_from"] == (resumes_from if run == KILLED else stop), run
    # The analysis holds every run, the stopped one up to its rung.
    evals = pd.read_parquet(work / "results" / "tiny" / "analysis" / "easy" / "evals.parquet")
    last = evals.groupby("run")["compute"].max().to_dict()
    assert last == {"bp2_n2": 64, "bp2_n4": 16, "bp2_n8": 64}
    fits = pd.read_csv(work / TABLES / "fits.csv")
    assert sorted(fits["n"]) == [2, 4, 8]
    # Done: nothing left to run.
    dry = run_snakemake(work, TABLES, "-n", "--configfile", cfg)
    assert "Nothing to be done" in dry.stdout + dry.stderr


# Three rungs (16, 32, 64 rollouts): the decision at rung 0 stops bp2_n4, the one at rung 1
# resumes it (the safety net, sweep.revive), and it trains on from its rung-0 checkpoint.
REVIVE = {**ADAPTIVE, "sweep": {"mode": "adaptive", "eta": 2, "rungs": 3}}
REVIVE_STOPS = {"bp2_n2": (4, 8, 16), "bp2_n4": (2, 4, 8), "bp2_n8": (1, 2, 4)}   # run -> stop step per rung


def _rewrite_decision(path, go):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["continue"] = str(go(r["run"]))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return rows


def test_a_run_the_safety_net_resumes_trains_on_from_its_checkpoint(tmp_path, tiny_stages):
    work = seed_study(make_study_dir(tmp_path / "revive"), tiny_stages)
    cfg = str(write_config(work, REVIVE))
    runs = work / "results" / "tiny" / "runs" / "easy"
    rung0, rung1 = (f"results/tiny/sweep/easy/rung{r}/decisions.csv" for r in (0, 1))

    run_snakemake(work, rung0, "--cores", "2", "--configfile", cfg)
    _rewrite_decision(work / rung0, lambda run: run != STOPPED)
    run_snakemake(work, rung1, "--cores", "2", "--configfile", cfg)
    # The decision at rung 1 has a row for the stopped run too: stopped, unless the rule resumed it.
    rows = {r["run"]: r for r in _rewrite_decision(work / rung1, lambda run: True)}
    assert sorted(rows) == sorted(REVIVE_STOPS)
    assert int(rows[STOPPED]["stop_step"]) == REVIVE_STOPS[STOPPED][0]
    assert rows[STOPPED]["reason"] == "stopped at an earlier rung" or rows[STOPPED]["reason"].startswith("revived")
    assert not (runs / STOPPED / "rungs" / "1").exists()

    # Resumed at rung 1's decision: the last rung (the full run) for all three, the stopped run from rung 0.
    dry = run_snakemake(work, TABLES, "-n", "--configfile", cfg)
    counts = job_counts(dry.stdout + dry.stderr)
    assert (counts["train"], counts["score"]) == (3, 3), counts
    run_snakemake(work, TABLES, "--cores", "2", "--configfile", cfg)
    for run, stops in REVIVE_STOPS.items():
        marker = json.loads((runs / run / "run.json").read_text())
        assert marker["steps"] == stops[-1]
        assert marker["resumed_from"] == (stops[0] if run == STOPPED else stops[1]), run
        steps = [json.loads(line)["step"] for line in (runs / run / "metrics.jsonl").read_text().splitlines()]
        assert steps == list(range(stops[-1] + 1)), run                 # no step trained twice
    evals = pd.read_parquet(work / "results" / "tiny" / "analysis" / "easy" / "evals.parquet")
    assert evals.groupby("run")["compute"].max().to_dict() == {"bp2_n2": 64, "bp2_n4": 64, "bp2_n8": 64}
