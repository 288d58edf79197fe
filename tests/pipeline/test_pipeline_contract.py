"""End to end, the job contract: a study whose C_max is no power of two (the split's
compute-matched schedule is then not each run's own) and with eval.samples = eval.k = 2
trains through the real train and score rules; every job validates at the steps the
Snakefile planned, and is given exactly its params (isocompute.jobs.train_params); its
trackers (config tracking) come in the options file, so changing them re-runs no job."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from isocompute import jobs
from isocompute.config import check_config
from isocompute.grid import Cell, grid_cells
from isocompute.train.recipe import cell_recipe, validation_steps
from support import TINY_CONFIG, job_counts, make_study_dir, run_snakemake, seed_study, write_config

pytestmark = pytest.mark.slow

STUDY = {
    **TINY_CONFIG,
    "experiment": "contract",
    "splits": {**TINY_CONFIG["splits"], "names": ["easy"]},
    "grid": {"easy": {"B_p": [2], "n": [2, 4], "B_max": 8, "C_max": 30}},
    "train": {"lr_base": 1e-3, "B_ref": 8, "warmup_steps": 2, "probe_problems": 0, "eval_points_per_octave": 3},
    "eval": {"k": 2, "samples": 2},
    # The trackers reach the local train jobs through the options file, not their params.
    "tracking": {"backends": ["tensorboard"]},
}


def test_jobs_validate_where_the_snakefile_planned_and_get_exactly_their_params(tmp_path, tiny_stages):
    work = seed_study(make_study_dir(tmp_path), tiny_stages, "contract")
    path = write_config(work, STUDY)
    cfg = check_config(json.loads(json.dumps(STUDY)))
    cells = grid_cells(cfg)
    run_snakemake(work, *targets_of(cells), "--cores", "2", "--configfile", str(path))
    differs = 0
    for cell in cells:
        run = work / "results" / "contract" / "runs" / "easy" / cell.name
        planned = list(cell_recipe(cfg, cell).eval_steps)
        evals = pd.read_parquet(run / "evals.parquet")
        assert evals["step"].tolist() == planned, cell.name
        assert evals["avg@2"].between(0, 1).all()
        marker = json.loads((run / "run.json").read_text())
        # What the job was given: its params, and the options file's tracking section.
        given = {**jobs.train_params(cfg, cell), **jobs.train_options(cfg)}
        assert marker["config"] == json.loads(jobs.as_json(given)) and jobs.uses_train_options(cfg)
        assert marker["config"]["experiment"] == "contract" and "k" not in marker["config"]["eval"]
        metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        assert [m["step"] for m in metrics] == list(range(cell.M_max + 1))
        # A job that derived its schedule alone (the grid not given) validated elsewhere.
        alone = Cell("easy", cell.B_p, cell.n, cell.M_max, cell.M_max * cell.rollouts_per_step)
        differs += list(validation_steps({**cfg, "grid": {}}, alone)) != planned
    assert differs, "this study no longer tells a job's own schedule from the split's"
    check_tracking_and_its_rerun_contract(work, path, cells)


def targets_of(cells) -> list[str]:
    return [f"results/contract/runs/easy/{c.name}/evals.parquet" for c in cells]


def tracked_rows(work, cell) -> dict:
    """{step: {tag: value}} of a run's TensorBoard events (config tracking)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(work / f"results/contract/tracking/tensorboard/contract/contract-easy-{cell.name}"))
    board.Reload()
    logged = {}
    for tag in board.Tags()["scalars"]:
        for event in board.Scalars(tag):
            logged.setdefault(event.step, {})[tag] = event.value
    return logged


def check_tracking_and_its_rerun_contract(work, path, cells) -> None:
    """Each run's TensorBoard events hold its metrics.jsonl rows; another tracking section (other
    trackers, another project) rewrites the options file and re-runs no train or score job."""
    for cell in cells:
        run = work / "results" / "contract" / "runs" / "easy" / cell.name
        metrics = {m["step"]: m["data"] for m in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())}
        logged = tracked_rows(work, cell)
        assert sorted(logged) == sorted(metrics) and all(
            logged[s] == pytest.approx(metrics[s], rel=1e-6) for s in metrics), cell.name
    write_config(work, {**STUDY, "tracking": {"backends": ["wandb", "tensorboard"], "project": "other"}})
    counts = job_counts(run_snakemake(work, *targets_of(cells), "-n", "--cores", "2", "--configfile",
                                      str(path)).stdout)
    assert counts == {"train_options": 1}, counts
