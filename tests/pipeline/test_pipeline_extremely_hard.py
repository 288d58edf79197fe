"""End to end: a tiny study trained on Extremely Hard (none correct of K samples), its
analysis and Fig. 20 (the best@4 and worst@4 frontiers) drawn for real, as
config/paper/extremely_hard.yaml asks for at paper scale."""

from __future__ import annotations

import pandas as pd
import pytest

from support import TINY_CONFIG, make_study_dir, run_snakemake, seed_study, write_config

pytestmark = pytest.mark.slow


def test_extremely_hard_study_draws_fig20(tmp_path, tiny_stages):
    work = seed_study(make_study_dir(tmp_path), tiny_stages)   # its split names re-cut the splits
    cfg = write_config(work, {
        **TINY_CONFIG,
        "splits": {**TINY_CONFIG["splits"], "names": ["easy", "extremely_hard"]},
        "grid": {"extremely_hard": {"B_p": [2], "n": [2, 4], "B_max": 8, "C_max": 16}},
        "train": {"eval_schedule": "steps", "eval_interval": 1, "lr_base": 1e-3, "B_ref": 8, "warmup_steps": 1,
                  "probe_problems": 2, "probe_samples": 2},
    })
    run_snakemake(work, "results/tiny/analysis/extremely_hard/figures", "--cores", "2", "--configfile", str(cfg))
    analysis = work / "results" / "tiny" / "analysis" / "extremely_hard"
    evals = pd.read_parquet(analysis / "evals.parquet")
    assert sorted(evals.groupby(["B_p", "n"]).groups) == [(2, 2), (2, 4)]
    front = pd.read_csv(analysis / "tables" / "frontier_metrics.csv")
    assert {"best@4", "worst@4"} <= set(front["metric"])
    fig = analysis / "figures" / "appendix_best_worst_frontiers"
    assert fig.with_suffix(".png").stat().st_size > 0 and fig.with_suffix(".pdf").is_file()
