"""Extra evaluation sets (config eval.extra_sets): a set naming an unknown split, a set named
twice, a missing file or a file without verl's columns is rejected by key before any job; a
study without extra sets keeps its jobs' params."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from isocompute.config import ConfigError, check_config
from isocompute.data.eval_sets import check_eval_sets, extra_sets, read_eval_set
from isocompute.errors import InputError
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


@pytest.mark.parametrize("column, frame, what", [
    ("reward_model.ground_truth", verl_frame().assign(reward_model=[{"style": "rule", "ground_truth": g}
                                                                    for g in ("1", None, None)]), "row 1: null"),
    ("prompt", verl_frame().assign(prompt=["q0", "q1", "q2"]), "row 0: not a chat"),
])
def test_null_ground_truths_and_plain_string_prompts_are_refused_naming_set_file_column_row(
        tmp_path, column, frame, what):
    # Graded against the string 'None', a set scored avg@4 0 throughout; a plain prompt is no chat.
    path = tmp_path / "aime.parquet"
    frame.to_parquet(path)
    where = rf"evaluation set 'aime24': {path}: column '{column}' {what}".replace(".", r"\.")
    with pytest.raises(ConfigError, match=r"config key 'eval\.extra_sets\[0\]\.path': " + where):
        check_eval_sets(cfg_with({"name": "aime24", "path": str(path)}))
    with pytest.raises(InputError, match=where):
        read_eval_set(path, "aime24")


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


# --- verl: data.val_files as a list, one data_source per set, dumps split by it ----------

def test_verl_validates_on_a_list_of_files_one_data_source_per_set(tmp_path):
    from support.verl import overrides_dict, verl_cfg
    from isocompute.layout import RunPaths
    from isocompute.train.backends.verl.eval_sets import set_copy, split_dumps, write_set_copies
    from isocompute.train.backends.verl.files import VerlRunFiles
    from isocompute.train.backends.verl.overrides import verl_command

    own = verl_frame(2).assign(data_source="embedded", extra_info=[{"problem_id": "e0"}, {"problem_id": "e1"}])
    own.to_parquet(tmp_path / "val.parquet")
    verl_frame(3).to_parquet(tmp_path / "aime.parquet")
    base = (tmp_path / "run", tmp_path / "train.parquet", tmp_path / "val.parquet", "Qwen/Qwen2.5-7B-Instruct")
    cell = Cell("easy", 32, 8, 640, 163840)
    plain = overrides_dict(verl_command(verl_cfg(), cell, RunPaths(*base), python="python").argv[3:])
    assert plain["data.val_files"] == str((tmp_path / "val.parquet").resolve())  # unchanged without sets
    paths = RunPaths(*base, (("aime24", tmp_path / "aime.parquet"),))
    files = VerlRunFiles((tmp_path / "run").resolve())
    o = overrides_dict(verl_command(verl_cfg(), cell, paths, python="python").argv[3:])
    assert o["data.val_files"] == f"[{(tmp_path / 'val.parquet').resolve()},{set_copy(files, 'aime24')}]"
    assert write_set_copies(paths, files) == {"aime24": 3}
    copy = pd.read_parquet(set_copy(files, "aime24"))
    assert set(copy["data_source"]) == {"aime24"} and copy["extra_info"].iloc[2]["problem_id"] == "aime24-2"
    clash = RunPaths(*base, (("embedded", tmp_path / "aime.parquet"),))
    with pytest.raises(Exception, match="evaluation set 'embedded': the name is a data_source"):
        write_set_copies(clash, files)
    # verl's dump of a step holds both; the reward function's data_source splits it.
    gen = tmp_path / "generations"
    gen.mkdir()
    rows = [{"input": "q", "output": "1", "gts": "1", "score": 1.0, "step": 2, "problem_id": pid, "data_source": ds}
            for pid, ds in [("e0", "embedded"), ("aime24-0", "aime24"), ("e1", "embedded")]]
    (gen / "2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert split_dumps(gen, ["aime24"]) == 1 and split_dumps(gen, ["aime24"]) == 0
    assert [json.loads(x)["problem_id"] for x in (gen / "2.jsonl").read_text().splitlines()] == ["e0", "e1"]
    assert [json.loads(x)["problem_id"] for x in (gen / "aime24" / "2.jsonl").read_text().splitlines()] == ["aime24-0"]


def test_verl_capacity_counts_the_extra_sets(tmp_path):
    from support.verl import verl_cfg
    from isocompute.data.eval_sets import extra_set_problems

    verl_frame(5).to_parquet(tmp_path / "aime.parquet")
    cfg = verl_cfg(splits={"val_size": 7}, eval={"extra_sets": [{"name": "h", "split": "hard"},
                                                                {"name": "a", "path": str(tmp_path / "aime.parquet")}]})
    assert extra_set_problems(cfg) == 12 and extra_set_problems(cfg, "hard") == 5
    cfg["eval"]["extra_sets"].append({"name": "b", "path": "not/yet.parquet", "problems": 30})
    assert extra_set_problems(cfg, "easy", 300) == 335
