"""End to end: a tiny study whose runs validate on their own split, on the other split
(eval.extra_sets) and on an out-of-domain file given by path; every set is scored
apart and Fig. 14 and the out-of-domain curves are drawn for real."""

from __future__ import annotations

import pandas as pd
import pytest

from support import TINY_CONFIG, make_study_dir, run_snakemake, seed_study, write_config

pytestmark = pytest.mark.slow


def test_runs_are_evaluated_on_every_set_and_fig14_is_drawn(tmp_path, tiny_stages):
    work = seed_study(make_study_dir(tmp_path), tiny_stages)
    ood = work / "aime_tiny.parquet"
    pd.DataFrame({"data_source": ["aime"] * 3,
                  "prompt": [[{"role": "user", "content": f"{a}+{a}="}] for a in (1, 2, 3)],
                  "reward_model": [{"style": "rule", "ground_truth": str(2 * a)} for a in (1, 2, 3)]}
                 ).to_parquet(ood)
    cfg = write_config(work, {
        **TINY_CONFIG,
        "grid": {s: {"B_p": [2], "n": [2, 4], "B_max": 8, "C_max": 16} for s in ("easy", "hard")},
        "train": {"eval_schedule": "steps", "eval_interval": 1, "lr_base": 1e-3, "B_ref": 8, "warmup_steps": 1,
                  "probe_problems": 2, "probe_samples": 2},
        "eval": {"k": 4, "samples": 4, "extra_sets": [{"name": "Easy", "split": "easy"},
                                                      {"name": "Hard", "split": "hard"},
                                                      {"name": "aime24", "path": str(ood)}]},
    })
    # The cross-evaluation's figures only (the splits' own analyses are test_pipeline_train's).
    run_snakemake(work, "results/tiny/cross_eval/figures", "--cores", "2", "--configfile", str(cfg))
    results = work / "results" / "tiny"
    run = results / "runs" / "easy" / "bp2_n2"
    assert sorted(p.name for p in (run / "eval_sets").iterdir()) == ["Hard.parquet", "aime24.parquet"]
    own = pd.read_parquet(run / "evals.parquet")
    for name in ("Hard", "aime24"):
        table = pd.read_parquet(run / "eval_sets" / f"{name}.parquet")
        assert table["step"].tolist() == own["step"].tolist() and (table["eval_set"] == name).all()
    table = pd.read_parquet(results / "cross_eval" / "evals.parquet")
    assert sorted(set(zip(table["split"], table["eval_set"]))) == [
        ("easy", "Easy"), ("easy", "Hard"), ("easy", "aime24"), ("hard", "Easy"), ("hard", "Hard"), ("hard", "aime24")]
    assert table.loc[table["eval_set"] == "aime24", "out_of_domain"].all()
    figures = results / "cross_eval" / "figures"
    for stem in ("fig14_cross_eval", "appendix_out_of_domain"):
        assert (figures / f"{stem}.png").stat().st_size > 0 and (figures / f"{stem}.pdf").is_file()
