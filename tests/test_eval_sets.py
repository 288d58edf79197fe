"""Extra evaluation sets (config eval.extra_sets): a set naming an unknown split, a set named
twice, a missing file or a file without verl's columns is rejected by key before any job; a
study without extra sets keeps its jobs' params."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from isocompute.config import ConfigError, check_config
from isocompute.data.eval_sets import check_eval_sets, extra_sets, read_eval_set
from isocompute.layout import StudyLayout, run_paths
from isocompute.grid import Cell


def cfg_with(*sets):
    return check_config({"splits": {"names": ["easy", "hard"]}, "eval": {"extra_sets": list(sets)}})


def verl_frame(n=3):
    return pd.DataFrame({"data_source": ["aime"] * n, "prompt": [[{"role": "user", "content": f"q{i}"}] for i in range(n)],
                         "reward_model": [{"style": "rule", "ground_truth": str(i)} for i in range(n)]})


@pytest.mark.parametrize("sets, message", [
    ([{"name": "x", "split": "medium"}], "config key 'eval.extra_sets[0].split': split 'medium' is not built"),
    ([{"name": "x", "split": "easy"}, {"name": "x", "split": "hard"}], "'eval.extra_sets[1].name': evaluation set 'x' is named twice"),
    ([{"name": "x"}], "eval.extra_sets[0]"),
    ([{"name": "x", "split": "easy", "path": "a.parquet"}], "eval.extra_sets[0]"),
    ([{"name": "1x", "split": "easy"}], "eval.extra_sets[0].name"),
])
def test_bad_sets_are_rejected_by_key(sets, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        cfg_with(*sets)


def test_set_files_are_checked_for_verl_columns(tmp_path):
    with pytest.raises(ConfigError, match=r"'eval\.extra_sets\[0\]\.path'.*file not found"):
        check_eval_sets(cfg_with({"name": "aime24", "path": str(tmp_path / "none.parquet")}))
    verl_frame().drop(columns=["data_source"]).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ConfigError, match=r"'eval\.extra_sets\[0\]\.path'.*missing verl column\(s\) \['data_source'\]"):
        check_eval_sets(cfg_with({"name": "aime24", "path": str(tmp_path / "bad.parquet")}))
    verl_frame().assign(reward_model=[{"style": "rule"}] * 3).to_parquet(tmp_path / "nogt.parquet")
    with pytest.raises(ConfigError, match=r"reward_model\.ground_truth"):
        check_eval_sets(cfg_with({"name": "aime24", "path": str(tmp_path / "nogt.parquet")}))
    verl_frame().to_parquet(tmp_path / "good.parquet")
    cfg = cfg_with({"name": "aime24", "path": str(tmp_path / "good.parquet")}, {"name": "Hard", "split": "hard"})
    check_eval_sets(cfg)
    assert [s.name for s in extra_sets(cfg)] == ["aime24", "Hard"]
    df = read_eval_set(tmp_path / "good.parquet", "aime24")
    assert [e["problem_id"] for e in df["extra_info"]] == ["aime24-0", "aime24-1", "aime24-2"]


def test_runs_get_every_set_but_their_own_split():
    cfg = cfg_with({"name": "Hard", "split": "hard"}, {"name": "aime24", "path": "data/aime24.parquet"})
    layout = StudyLayout("embedded")
    assert layout.eval_set_files(cfg, "hard") == (("aime24", "data/aime24.parquet"),)
    paths = run_paths(cfg, Cell("easy", 2, 2, 4, 16))
    assert paths.eval_sets == (("Hard", "results/embedded/splits/hard/val.parquet"), ("aime24", "data/aime24.parquet"))
    assert run_paths(check_config({}), Cell("easy", 2, 2, 4, 16)).eval_sets == ()
    files = layout.run_files("easy", 2, 2)
    assert str(files.set_generations("aime24")) == "results/embedded/runs/easy/bp2_n2/generations/aime24"
    assert str(files.set_evals("aime24")) == "results/embedded/runs/easy/bp2_n2/eval_sets/aime24.parquet"


def test_default_config_has_no_sets_and_identity_is_unchanged(tmp_path):
    from isocompute.layout import RunPaths
    from isocompute.train.identity import training_identity

    cfg = check_config({})
    assert cfg["eval"]["extra_sets"] == []
    (tmp_path / "t.parquet").write_text("x")
    paths = RunPaths(tmp_path, tmp_path / "t.parquet", tmp_path / "t.parquet", str(tmp_path))
    assert "eval_sets" not in training_identity(cfg, Cell("easy", 2, 2, 4, 16), paths)
    with_set = RunPaths(tmp_path, tmp_path / "t.parquet", tmp_path / "t.parquet", str(tmp_path),
                        (("a", tmp_path / "t.parquet"),))
    assert "eval_sets" in training_identity(cfg, Cell("easy", 2, 2, 4, 16), with_set)
    json.dumps(training_identity(cfg, Cell("easy", 2, 2, 4, 16), with_set), default=str)
