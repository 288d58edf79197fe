"""Config validation: unknown keys and wrong types are rejected by name before
any job is scheduled; schema defaults fill every knob."""

from __future__ import annotations

import re

import pytest

from isocompute.config import ConfigError, check_config, load_schema

from support import run_snakemake, write_config


def test_defaults_fill_every_section():
    cfg = check_config({})
    assert cfg["experiment"] == "embedded"
    assert cfg["sampling"]["temperature"] == 0.6 and cfg["sampling"]["top_p"] == 1.0
    assert cfg["splits"]["bands"]["hard"] == [0.0, 0.0625]
    assert cfg["splits"]["mixtures"]["tri"] == {"hard": 0.5, "easy": 0.25, "very_easy": 0.25}
    assert len(cfg["pool"]["families"]) == 5


def test_every_schema_property_documents_a_default():
    def walk(schema, path):
        for key, sub in schema.get("properties", {}).items():
            here = f"{path}.{key}" if path else key
            assert "default" in sub, f"schema key {here} has no default"
            if sub.get("type") == "object":
                walk(sub, here)

    walk(load_schema(), "")


@pytest.mark.parametrize("bad, message", [
    ({"bogus": 1}, "config key 'bogus': unknown key"),
    ({"pool": {"nproblems": 10}}, "config key 'pool.nproblems': unknown key"),
    ({"splits": {"bands": {"easy": [0.3, 0.6], "medium": [0.1, 0.2]}}}, "config key 'splits.bands.medium': unknown key"),
    ({"pool": {"families": [{"name": "a", "operands": 2, "digits": [1, 2], "ops": "+",
                             "corpus_accuracy": 0.5, "extra": 1}]}}, "config key 'pool.families[0].extra': unknown key"),
    ({"seed": "zero"}, "config key 'seed': expected integer"),
    ({"sampling": {"temperature": "hot"}}, "config key 'sampling.temperature': expected number"),
    ({"sampling": {"backend": "tgi"}}, "config key 'sampling.backend': expected one of"),
    ({"splits": {"val_size": 0}}, "config key 'splits.val_size': expected a value >= 1"),
    ({"splits": {"bands": {"easy": [0.6, 0.3]}}}, "config key 'splits.bands.easy'"),
    ({"splits": {"mixtures": {"dual": {"hard": 0.5, "easy": 0.6}}}}, "config key 'splits.mixtures.dual'"),
    ({"pool": {"source": "file"}}, "config key 'pool.path'"),
])
def test_bad_config_names_the_key(bad, message):
    with pytest.raises(ConfigError) as info:
        check_config(bad)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_snakemake_rejects_bad_config_before_any_job(workdir):
    cfg = write_config(workdir, {"experiment": "bad", "pool": {"n_problems": "many"}})
    proc = run_snakemake(workdir, "-n", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    out = (proc.stdout + proc.stderr).strip()
    # Snakemake may print its own note on --configfile; the error is one line, and last.
    assert out.splitlines()[-1] == "isocompute config error: config key 'pool.n_problems': expected integer, got str 'many'"
    assert "Traceback" not in out and out.count("error") == 1
    assert not (workdir / "results").exists()


def test_experiment_name_separates_results(workdir):
    cfg = write_config(workdir, {"experiment": "study_a"})
    proc = run_snakemake(workdir, "-n", "--configfile", str(cfg))
    assert "results/study_a/data/pool.parquet" in proc.stdout + proc.stderr


@pytest.mark.parametrize("sweep, message", [
    ({"mode": "adaptive", "rungs": 100_000_000}, "config key 'sweep.rungs': expected a value <= 64"),
    ({"mode": "adaptive", "rungs": 60, "eta": 2}, "config key 'sweep.rungs': the first rung C_max / eta^(rungs - 1)"),
])
def test_adaptive_sweep_rungs_are_bounded_by_name(sweep, message):
    grid = {"easy": {"B_p": [4], "n": [2], "C_max": 8192, "B_max": 64}}
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_config({"sweep": sweep, "grid": grid})
    check_config({"sweep": {**sweep, "mode": "grid"}, "grid": grid} if sweep["rungs"] <= 64 else {"grid": grid})


@pytest.mark.parametrize("extra, message", [
    ({"grid": {"easy": {"B_p": [4], "n": [2], "C_max": 10 ** 15, "B_max": 64}}},
     "config key 'grid.easy.C_max': expected a value <= 1099511627776"),
    ({"train": {"eval_points_per_octave": 10 ** 9}}, "config key 'train.eval_points_per_octave': expected a value <= 1024"),
    ({"grid": {"easy": {"B_p": [4], "n": [2], "C_max": 10 ** 9, "B_max": 64}},
      "train": {"eval_schedule": "steps", "eval_interval": 1}},
     "config key 'train.eval_interval': grid.easy's run B_p 4, n 2 takes 125,000,000 steps"),
    ({"grid": {"easy": {"B_p": [4], "n": [2], "C_max": 8192, "B_max": 64}},
      "train": {"eval_schedule": "steps", "eval_interval": 1},
      "variants": {"v": {"train": {"kl_coef": 0.0}, "cells": [{"split": "easy", "B_p": 1, "n": 1, "C_max": 10 ** 9}]}}},
     "config key 'train.eval_interval': variants.v.cells[0]'s run B_p 1, n 1 takes 1,000,000,000 steps"),
])
def test_schedules_that_would_never_finish_are_refused_by_name(extra, message):
    # A typo must not make the login node build a schedule of 10^15 steps (it hung before).
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_config(extra)


GRID = {"easy": {"B_p": [4], "n": [2], "C_max": 8192, "B_max": 64}}


@pytest.mark.parametrize("extra, message", [
    ({"analysis": {"metric": "avg@8"}}, "config key 'analysis.metric': expected one of the metrics the score jobs "
                                        "write with eval.k = 4 (avg@4, best@4"),
    ({"analysis": {"min_compute": 100000}, "grid": GRID},
     "config key 'analysis.min_compute': 100000 leaves grid.easy (C_max 8,192) nothing to fit"),
    ({"variants": {"figures": {"train": {"kl_coef": 0.0}, "cells": [{"split": "easy", "B_p": 4, "n": 2}]}}, "grid": GRID},
     "config key 'variants.figures': 'figures' is the variants' figures folder"),
])
def test_what_failed_only_after_training_is_refused_before_it(extra, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_config(extra)


def test_every_metric_the_score_jobs_write_is_accepted():
    for metric in ("avg@4", "best@4", "worst@4", "pass@1", "pass@4_unbiased", "worst@4_unbiased"):
        assert check_config({"analysis": {"metric": metric}})["analysis"]["metric"] == metric
    assert check_config({"analysis": {"metric": "avg@8"}, "eval": {"k": 8, "samples": 8}})


def test_the_rung_bound_has_one_value():
    # schedule.MAX_RUNGS is the schema's bound on sweep.rungs.
    from isocompute.schedule import MAX_RUNGS

    assert load_schema()["properties"]["sweep"]["properties"]["rungs"]["maximum"] == MAX_RUNGS


def test_settings_differing_lists_changed_leaves_in_order():
    from isocompute.config import check_config, settings_differing

    cfg = check_config({"experiment": "e", "train": {"lr_base": 1.0e-4}, "grid": {"easy": {"B_p": [4], "n": [2], "B_max": 64, "C_max": 4096}}})
    got = dict(settings_differing(cfg, check_config({})))
    assert got["experiment"] == "e" and got["train.lr_base"] == 1.0e-4
    assert got["grid.easy.B_p"] == [4] and "train.B_ref" not in got
    assert settings_differing(check_config({}), check_config({})) == []


@pytest.mark.parametrize("cluster, message", [
    ({"vllm": {"tensor_parallel_size": 4}, "sample": {"gpus": 2}},
     r"'cluster.vllm.tensor_parallel_size': 4 is more GPUs than the sampling job has \(cluster.sample.gpus = 2\)"),
    ({"vllm": {"tensor_parallel_size": 4}, "gres": "gpu:h200:2"},
     r"'cluster.vllm.tensor_parallel_size': 4 .* \(the count of cluster.gres = 2\)"),
])
def test_vllm_tensor_parallelism_beyond_the_sampling_job_is_refused_by_name(cluster, message):
    with pytest.raises(ConfigError, match=message):
        check_config({"sampling": {"backend": "vllm"}, "cluster": cluster})
    check_config({"sampling": {"backend": "vllm"}, "cluster": {**cluster, "vllm": {"tensor_parallel_size": 2}}})
    check_config({"cluster": cluster})   # the local sampler starts no vLLM engine


NON_FINITE = [
    ("train.lr_base", float("nan")), ("sweep.eta", float("nan")), ("analysis.ci", float("nan")),
    ("sweep.z", float("inf")), ("analysis.bin_width", float("nan")), ("analysis.extrapolate_fraction", float("inf")),
    ("cluster.verl.gpu_memory_utilization", float("nan")), ("train.clip_ratio", float("-inf")),
]


@pytest.mark.parametrize("key, value", NON_FINITE, ids=[k for k, _ in NON_FINITE])
def test_nan_and_infinity_fail_every_number_by_name(key, value):
    # jsonschema's bounds compare with < and >, false for NaN, and infinity clears any minimum.
    cfg: dict = {}
    node = cfg
    *parents, last = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    with pytest.raises(ConfigError, match=re.escape(f"config key '{key}': expected number") + ".*finite"):
        check_config(cfg)


def test_nan_in_a_variant_fails_before_any_job():
    variants = {"x": {"train": {"lr_base": float("nan")}, "cells": [{"split": "easy", "B_p": 4, "n": 2}]}}
    with pytest.raises(ConfigError, match=re.escape("config key 'variants.x.train.lr_base'")):
        check_config({"variants": variants})


@pytest.mark.parametrize("grid, message", [
    ({"B_p": [2], "n": [2], "C_max": 24.0, "B_max": 64}, "'grid.easy.C_max': expected integer, got float 24.0 (write 24)"),
    ({"B_p": [2.0], "n": [2], "C_max": 24, "B_max": 64}, "'grid.easy.B_p[0]': expected integer, got float 2.0 (write 2)"),
])
def test_an_integral_float_is_not_an_integer(grid, message):
    # 24.0 became `--max-steps 6.0` (refused at run time) and B_p 2.0 a run folder bp2.0_n2.
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_config({"grid": {"easy": grid}})
