"""The job contract (isocompute.jobs, config.job_config): a job's config is exactly the
sections its rule passed; reading anything else fails naming it; what a job needs from
elsewhere in the config (the split's compute range, the experiment) is in its params;
the run identity and the train params are one definition."""

from __future__ import annotations

import copy
import json

import pytest

from isocompute import jobs
from isocompute.config import ConfigError, check_config
from isocompute.job_config import NotGiven, job_config
from isocompute.grid import Cell, grid_cells, variant_cells
from isocompute.layout import RunPaths
from isocompute.train.identity import training_identity
from isocompute.train.recipe import cell_recipe, study_compute_range, validation_steps


def study(**sections) -> dict:
    base = {"experiment": "contract", "grid": {"easy": {"B_p": [2, 4, 8], "n": [2, 4, 8, 16], "B_max": 128, "C_max": 10000}}}
    return check_config({**base, **sections})


def job_of(cfg: dict, cell) -> dict:
    """The config the train job of `cell` gets, as it gets it: through JSON."""
    return job_config(json.loads(jobs.as_json(jobs.train_params(cfg, cell))))


def test_reading_a_section_or_key_not_given_fails_naming_it():
    cfg = job_config({"seed": 0, "eval": {"samples": 2}})
    assert cfg["eval"]["samples"] == 2
    with pytest.raises(NotGiven, match=r"config key 'grid' was not given to this job"):
        cfg["grid"]
    with pytest.raises(NotGiven, match=r"config key 'grid'"):
        cfg.get("grid", {})  # .get must not fall back to a default either
    with pytest.raises(NotGiven, match=r"config key 'eval\.k' was not given .* only \['samples'\] of 'eval'"):
        cfg["eval"]["k"]
    assert "grid" not in cfg and "samples" in cfg["eval"]
    assert copy.deepcopy(cfg) == {"seed": 0, "eval": {"samples": 2}}
    assert json.loads(json.dumps(cfg)) == {"seed": 0, "eval": {"samples": 2}}


def test_a_jobs_config_is_checked_by_key_and_filled_with_nothing():
    with pytest.raises(ConfigError, match=r"config key 'train\.lr_base': expected number"):
        job_config({"train": {"lr_base": "1e-4"}})
    with pytest.raises(ConfigError, match=r"config key 'gird': unknown key"):
        job_config({"gird": {}})
    with pytest.raises(ConfigError, match=r"config key 'schedule"):
        job_config({"schedule": {"min_compute": 0, "C_max": 8}})
    assert job_config({"train": {"kl_coef": 0.1}}) == {"train": {"kl_coef": 0.1}}


@pytest.mark.parametrize("c_max", [10000, 12000, 8192])
def test_every_job_validates_at_the_steps_the_snakefile_planned(c_max):
    """The evaluation schedule of a C_max that is not a power of two: before the contract the
    job read the empty default grid and validated most cells at other steps."""
    cfg = study(grid={"easy": {"B_p": [2, 4, 8], "n": [2, 4, 8, 16], "B_max": 128, "C_max": c_max}})
    cells = grid_cells(cfg)
    wrong_before = 0
    for cell in cells:
        planned = cell_recipe(cfg, cell).eval_steps
        assert cell_recipe(job_of(cfg, cell), cell).eval_steps == planned, cell.name
        # What a job without the range derived (its own batch to M_max * B): the old bug.
        alone = Cell(cell.split, cell.B_p, cell.n, cell.M_max, cell.M_max * cell.rollouts_per_step)
        own = {**cfg, "grid": {}, "train": {**cfg["train"], "eval_min_compute": None}}
        wrong_before += validation_steps(own, alone) != planned
    if c_max != 8192:
        assert wrong_before >= len(cells) // 2  # the test would have caught it


def test_a_variant_job_gets_its_own_budget():
    cfg = study(variants={"lr": {"train": {"lr_base": 1e-3}, "cells": [{"split": "easy", "B_p": 4, "n": 6,
                                                                        "C_max": 1000}]}})
    (cell,) = variant_cells(cfg)
    job = job_of(cfg, cell)
    assert job["train"]["lr_base"] == 1e-3 and job["eval"]["extra_sets"] == []
    assert study_compute_range(job, cell) == (24.0, 1000.0)
    assert cell_recipe(job, cell).eval_steps == cell_recipe(cfg, cell).eval_steps


def test_train_params_carry_the_experiment_and_no_eval_k():
    cfg = study(eval={"samples": 2, "k": 2})
    cell = grid_cells(cfg)[0]
    job = job_of(cfg, cell)
    assert job["experiment"] == "contract" and job["eval"]["samples"] == 2
    with pytest.raises(NotGiven, match="eval.k"):
        job["eval"]["k"]  # a changed k re-scores without re-training
    assert json.loads(jobs.as_json(jobs.stage_params(cfg, "eval")))["eval"] == {"samples": 2, "k": 2}


def identity_of(cfg, cell, tmp_path) -> dict:
    for name in ("train.parquet", "val.parquet"):
        (tmp_path / name).write_text("rows")
    paths = RunPaths(tmp_path / "run", tmp_path / "train.parquet", tmp_path / "val.parquet", "org/model")
    return training_identity(cfg, cell, paths)


def leaves(tree: dict, prefix=()):
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def changed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1 if value else 0.5
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, value[0]] if value else [1]
    return 1 if value is None else None


# The params of a train job that do not change its trajectory, so not its identity (a run
# resumes across them): why each is left out.
NOT_IN_IDENTITY = {
    ("experiment",): "names the run in loggers",
    ("train", "device"): "the same run resumes on another device",
    ("sampling", "batch_size"): "how many sequences are generated at once, not what is sampled",
    ("eval", "extra_sets"): "the sets' files are in the identity by digest (paths.eval_sets)",
    ("schedule", "min_compute"): "when a run validates, not how it trains",
    ("schedule", "C_max"): "the budget: a run whose budget was raised continues",
    ("grading", "max_timeout_share"): "a check on the run's rewards, not how it trains",
}


def test_the_run_identity_follows_the_train_params(tmp_path):
    """One definition: a param of a train job changes its run identity exactly when it is not
    listed, with a reason, as not shaping the trajectory."""
    cfg = study()
    cell = grid_cells(cfg)[0]
    params = jobs.train_params(cfg, cell)
    base = identity_of(job_config(params), cell, tmp_path)
    for path, value in leaves(params):
        other = copy.deepcopy(params)
        node = other
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = changed(value)
        try:
            identity = identity_of(job_config(other), cell, tmp_path)
        except ConfigError:
            continue  # a changed value the schema refuses (an enum): no job could get it
        listed = path in NOT_IN_IDENTITY or path[:1] in NOT_IN_IDENTITY
        assert (identity != base) == (not listed), \
            f"train param {'.'.join(path)}: {'listed but in' if listed else 'not in'} the run identity"


def test_check_grid_job_reads_a_grid_without_extra_cells():
    """grid.<split>.cells is optional without a default: a check-grid job given a grid
    without it (its rule's params) reads no cells, instead of NotGiven."""
    from isocompute.grid import grid_cells

    cfg = check_config({"splits": {"names": ["easy", "hard"]},
                        "grid": {"easy": {"B_p": [2], "n": [2], "B_max": 4, "C_max": 16}}})
    given = job_config(json.loads(jobs.as_json(jobs.grid_check_params(cfg))))
    assert "cells" not in given["grid"]["easy"]
    assert [c.name for c in grid_cells(given)] == ["bp2_n2"]


@pytest.mark.parametrize("gres", [None, "gpu:h200:4"])
def test_a_verl_train_job_builds_its_command_from_its_params(tmp_path, gres):
    """A verl train job (params + options file) builds verl's command without reading a key
    its rule did not pass: cluster.gres is resolved into cluster.train.gpus by the rule."""
    from isocompute.cli.common import config_from_params
    from isocompute.train.backends.verl.overrides import check_supported, verl_command

    cfg = check_config({"experiment": "t", "splits": {"names": ["easy", "hard"]},
                        "grid": {"easy": {"B_p": [2], "n": [2], "B_max": 4, "C_max": 20}},
                        "train": {"backend": "verl", **({} if gres else {"device": "cpu"})},
                        "cluster": {"gres": gres, "train": {"gpus": 1, "cpus_per_gpu": 8},
                                    "verl": {"storage_units": 1}}})
    (cell,) = grid_cells(cfg)
    job = config_from_params(jobs.as_json(jobs.train_params(cfg, cell)), jobs.as_json(jobs.train_options(cfg)))
    check_supported(job)
    paths = RunPaths(run_dir=str(tmp_path / "run"), train_file="t.parquet", val_file="v.parquet", model="m")
    command = verl_command(job, cell, paths, stop_at_step=3)
    expected = "trainer.n_gpus_per_node=4" if gres else "trainer.device=cpu"
    assert expected in command.argv and "trainer.experiment_name=t-easy-bp2_n2" in command.argv


def test_train_jobs_start_longest_first():
    """The train rule's priority is the cell's step count: on a few cores the long runs
    (small batches, most steps) start first and the short ones fill in at the end."""
    cells = grid_cells(study())
    by_priority = sorted(cells, key=jobs.train_priority, reverse=True)
    assert [jobs.train_priority(c) for c in cells] == [c.M_max for c in cells]
    assert (by_priority[0].B_p, by_priority[0].n) == (2, 2) and by_priority[-1].B_p * by_priority[-1].n == 128
