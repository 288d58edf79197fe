"""End to end: the whole tiny study through snakemake (data stages, a 2-cell
(B_p, n) grid with two seed replicates, trained on the compute-matched
evaluation schedule and scored, analysis tables and figures); a changed
analysis parameter re-runs only analysis, a changed eval.k only scoring."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from isocompute.config import check_config
from isocompute.grid import Cell
from isocompute.train.recipe import cell_recipe
from support import TINY_CONFIG, job_counts, make_study_dir, run_snakemake, seed_study, write_config

pytestmark = pytest.mark.slow

TINY_GRID = {
    **TINY_CONFIG,
    "grid": {"easy": {"B_p": [2], "n": [2, 4], "B_max": 8, "C_max": 24, "seeds": 2}},
    "train": {"eval_interval": 2, "lr_base": 1e-3, "B_ref": 8, "warmup_steps": 2, "probe_problems": 3,
              "probe_samples": 8, "probe_at": [0.5, 1.0]},
    "eval": {"k": 4, "samples": 4},
}
RUNS = {"bp2_n2": 6, "bp2_n2_s1": 6, "bp2_n4": 3, "bp2_n4_s1": 3}  # run -> M_max = 24 // (B_p * n)


@pytest.fixture(scope="module")
def tiny_grid(tmp_path_factory, tiny_stages):
    work = seed_study(make_study_dir(tmp_path_factory.mktemp("grid")), tiny_stages)
    cfg = write_config(work, TINY_GRID)
    run_snakemake(work, "--cores", "2", "--configfile", str(cfg))
    return work, cfg


def test_grid_runs_and_scores_every_cell(tiny_grid):
    work, _ = tiny_grid
    runs = work / "results" / "tiny" / "runs" / "easy"
    assert sorted(p.name for p in runs.iterdir()) == sorted(RUNS)
    for run, M_max in RUNS.items():
        n, replicate = (int(x or 0) for x in re.fullmatch(r"bp2_n(\d+)(?:_s(\d+))?", run).groups())
        B_p = 2
        marker = json.loads((runs / run / "run.json").read_text())
        assert (marker["B_p"], marker["n"], marker["M_max"], marker["backend"]) == (B_p, n, M_max, "local")
        assert marker["versions"]["torch"] and marker["config"]["train"]["eval_interval"] == 2
        evals = pd.read_parquet(runs / run / "evals.parquet")
        assert list(evals.columns[:8]) == ["split", "run", "B_p", "n", "seed", "step", "compute", "tokens"]
        assert (evals["seed"] == replicate).all() and marker["config_hash"]
        for col in ("avg@4", "best@4", "worst@4", "pass@1", "pass@4_unbiased", "worst@4_unbiased"):
            assert evals[col].between(0, 1).all(), col
        # The compute-matched schedule, shared by both batch sizes (and seeds).
        cell = Cell("easy", B_p, n, M_max, 24, replicate)
        expected_steps = list(cell_recipe(check_config(json.loads(json.dumps(TINY_GRID))), cell).eval_steps)
        assert evals["step"].tolist() == expected_steps and expected_steps[0] == 0 and expected_steps[-1] == M_max
        assert (evals["compute"] == B_p * n * evals["step"]).all()
        assert evals["tokens"].iloc[0] == 0 and evals["tokens"].is_monotonic_increasing
        assert (evals["worst@4"] <= evals["avg@4"]).all() and (evals["avg@4"] <= evals["best@4"]).all()
        assert (evals["split"] == "easy").all() and (evals["run"] == run).all()
        metrics = [json.loads(line) for line in (runs / run / "metrics.jsonl").read_text().splitlines()]
        assert [m["step"] for m in metrics] == list(range(M_max + 1))
        for key in ("critic/score/mean", "actor/entropy", "actor/kl_loss", "actor/grad_norm", "actor/lr",
                    "response_length/mean", "perf/tokens_generated", "perf/tokens_generated_cumulative",
                    "perf/rollouts_per_s", "time/wall_s"):
            assert key in metrics[-1]["data"], key
        rates = pd.read_json(runs / run / "train_pass_rates.jsonl", lines=True)
        assert len(rates) == M_max * B_p and rates["pass_rate"].between(0, 1).all()
        # The fixed probe: the same 3 problems in every run, 8 draws each, at C = 12 and 24 for both batches.
        probe = pd.read_json(runs / run / "train_probe.jsonl", lines=True)
        assert sorted(probe["compute"].unique()) == [12.0, 24.0] and len(probe) == 6
        assert (probe["pass_rate"] * 8).round(9).apply(lambda v: float(v).is_integer()).all()
        first = pd.read_json(runs / "bp2_n2" / "train_probe.jsonl", lines=True)
        assert set(probe["problem_id"]) == set(first["problem_id"])
        assert (runs / run / "grades_cache.json").is_file()
        assert (work / "results" / "tiny" / "logs" / "train" / "easy" / f"{run}.log").is_file()


def test_analysis_tables_figures_and_partial_rerun(tiny_grid):
    work, cfg = tiny_grid
    res = work / "results" / "tiny" / "analysis" / "easy"
    evals = pd.read_parquet(res / "evals.parquet")
    assert sorted(evals["run"].unique()) == sorted(RUNS)
    records = pd.read_csv(res / "tables" / "records.csv")
    assert {"B_p", "n", "step", "compute", "avg@4", "bin"} <= set(records.columns)
    assert (records.groupby("n")["step"].min() == 0).all()  # a curve's first point is a record
    fits = pd.read_csv(res / "tables" / "fits.csv")
    assert sorted(fits["n"]) == [2, 4] and {"R0", "A", "B", "C_mid", "sse", "status"} <= set(fits.columns)
    for table in ("frontier.csv", "n_star_fit.csv", "extrapolation.csv", "interference.csv"):
        assert (res / "tables" / table).is_file(), table
    assert (res / "figures" / "fig11_interference.png").is_file()
    train = pd.read_parquet(res / "train_pass_rates.parquet")
    # The fixed probe's rates (Fig. 11 reads them) and the batches' (the mechanism table).
    assert set(train["source"]) == {"probe", "batch"}
    assert set(train.loc[train["source"] == "probe", "compute"]) == {12.0, 24.0}
    batch = train[train["source"] == "batch"]
    assert (batch["compute"] == batch["step"] * batch["B_p"] * batch["n"]).all()
    mechanism = pd.read_csv(res / "tables" / "mechanism.csv")
    assert sorted(mechanism["n"].unique()) == [2, 4] and mechanism["groups"].sum() == len(batch)
    assert (res / "figures" / "mechanism_zero_variance.png").is_file()
    interference = pd.read_csv(res / "tables" / "interference.csv")
    assert set(interference["compute"]) == {24.0} and (interference.groupby("n")["count"].sum() == 6).all()
    # Analysis parameters are rule params: a new bin width re-runs analysis, figures and the headline only.
    proc = run_snakemake(work, "-n", "--configfile", str(write_config(work, {**TINY_GRID, "analysis": {"bin_width": 0.02}})))
    assert set(job_counts(proc.stdout + proc.stderr)) == {"analyze", "figures", "headline", "all"}
    write_config(work, TINY_GRID)


def test_changed_k_rescores_without_retraining(tiny_grid):
    work, _ = tiny_grid
    cfg = write_config(work, {**TINY_GRID, "eval": {"k": 2, "samples": 4}})
    proc = run_snakemake(work, "-n", "--configfile", str(cfg))
    jobs = proc.stdout + proc.stderr
    assert "rule score:" in jobs or "score" in jobs.split("Job stats")[-1]
    assert "rule train:" not in jobs and "rule difficulty:" not in jobs
    run_snakemake(work, "--cores", "2", "--configfile", str(cfg))
    evals = pd.read_parquet(work / "results" / "tiny" / "runs" / "easy" / "bp2_n2" / "evals.parquet")
    assert {"avg@2", "best@2", "worst@2", "pass@2_unbiased"} <= set(evals.columns)
