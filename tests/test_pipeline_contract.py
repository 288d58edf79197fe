"""End to end, the job contract: a study whose C_max is no power of two (the split's
compute-matched schedule is then not each run's own) and with eval.samples = eval.k = 2
trains through the real train and score rules; every job validates at the steps the
Snakefile planned, and is given exactly its params (isocompute.jobs.train_params)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import TINY_CONFIG, make_study_dir, run_snakemake, write_config
from isocompute import jobs
from isocompute.config import check_config
from isocompute.grid import Cell, grid_cells
from isocompute.train.recipe import cell_recipe, validation_steps

pytestmark = pytest.mark.slow

STUDY = {
    **TINY_CONFIG,
    "experiment": "contract",
    "splits": {**TINY_CONFIG["splits"], "names": ["easy"]},
    "grid": {"easy": {"B_p": [2], "n": [2, 4], "B_max": 8, "C_max": 30}},
    "train": {"lr_base": 1e-3, "B_ref": 8, "warmup_steps": 2, "probe_problems": 0, "eval_points_per_octave": 3},
    "eval": {"k": 2, "samples": 2},
}


def test_jobs_validate_where_the_snakefile_planned_and_get_exactly_their_params(tmp_path):
    work = make_study_dir(tmp_path)
    path = write_config(work, STUDY)
    cfg = check_config(json.loads(json.dumps(STUDY)))
    cells = grid_cells(cfg)
    targets = [f"results/contract/runs/easy/{c.name}/evals.parquet" for c in cells]
    run_snakemake(work, *targets, "--cores", "2", "--configfile", str(path))
    differs = 0
    for cell in cells:
        run = work / "results" / "contract" / "runs" / "easy" / cell.name
        planned = list(cell_recipe(cfg, cell).eval_steps)
        evals = pd.read_parquet(run / "evals.parquet")
        assert evals["step"].tolist() == planned, cell.name
        assert evals["avg@2"].between(0, 1).all()
        marker = json.loads((run / "run.json").read_text())
        assert marker["config"] == json.loads(jobs.as_json(jobs.train_params(cfg, cell)))
        assert marker["config"]["experiment"] == "contract" and "k" not in marker["config"]["eval"]
        metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        assert [m["step"] for m in metrics] == list(range(cell.M_max + 1))
        # A job that derived its schedule alone (the grid not given) validated elsewhere.
        alone = Cell("easy", cell.B_p, cell.n, cell.M_max, cell.M_max * cell.rollouts_per_step)
        differs += list(validation_steps({**cfg, "grid": {}}, alone)) != planned
    assert differs, "this study no longer tells a job's own schedule from the split's"
