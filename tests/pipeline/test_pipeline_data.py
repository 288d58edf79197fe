"""End to end: the real data stages through snakemake on a tiny config
(pool -> pretrained base model -> avg@16 sampling -> splits -> Fig. 2), as the
session's tiny_stages fixture builds them from nothing (the other end-to-end modules
start from copies of them, seed_study)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from isocompute.data.schema import COLUMNS, problem_ids
from isocompute.model.io import load_policy

from support import TINY_CONFIG, TINY_DATA_TARGETS, job_counts, make_study_dir, run_snakemake, seed_study, write_config

pytestmark = pytest.mark.slow

DATA_TARGETS = list(TINY_DATA_TARGETS)


@pytest.fixture(scope="module")
def tiny_study(tiny_stages, tmp_path_factory):
    """A copy of the session's data stages (built with TINY_CONFIG by Snakemake), whole."""
    work = tmp_path_factory.mktemp("study") / "study"
    shutil.copytree(tiny_stages, work, symlinks=True)
    return work, work / "config" / "test.yaml"


def test_data_stages_produce_splits_and_figure(tiny_study):
    work, _ = tiny_study
    res = work / "results" / "tiny"
    pool = pd.read_parquet(res / "data" / "pool.parquet")
    diff = pd.read_parquet(res / "data" / "difficulty.parquet")
    assert len(pool) == 300 and list(diff["problem_id"]) == list(problem_ids(pool))
    assert diff["correct"].between(0, 16).all() and (diff["samples"] == 16).all()
    # Problems with none correct in 16 got the extra draws for pass@K.
    zero = diff["correct"] == 0
    assert (diff.loc[zero, "samples_k"] == 24).all() and (diff.loc[zero, "correct_k"] >= 0).all()
    for split in ("easy", "hard"):
        train = pd.read_parquet(res / "splits" / split / "train.parquet")
        val = pd.read_parquet(res / "splits" / split / "val.parquet")
        assert list(train.columns) == COLUMNS and len(val) == 4
        assert not set(problem_ids(train)) & set(problem_ids(val))
    rates = pd.read_parquet(res / "splits" / "hard" / "train.parquet")["extra_info"].map(lambda e: e["base_pass_rate"])
    assert (rates <= 0.0625).all()
    assert (res / "figures" / "fig2_difficulty.png").stat().st_size > 10_000
    assert (res / "figures" / "fig2_difficulty.pdf").is_file()
    counts = pd.read_csv(res / "figures" / "fig2_difficulty.counts.csv", index_col=0)
    assert counts["pool"].sum() == 300
    # Provenance: config and versions recorded beside results.
    prov = json.loads((res / "splits" / "splits.json").read_text())
    assert prov["config"]["seed"] == 0 and prov["versions"]["torch"]
    # Only the sections the stage read (with their defaults), not unrelated defaults.
    assert sorted(prov["config"]) == ["seed", "splits"]
    assert prov["config"]["splits"]["val_size"] == 4
    assert (res / "logs" / "difficulty.log").is_file()


def test_base_model_round_trips_through_auto_classes(tiny_study):
    work, _ = tiny_study
    model_dir = work / "results" / "tiny" / "model" / "base"
    for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
              "generation_config.json"):
        assert (model_dir / f).is_file(), f
    model, tok = load_policy(model_dir)
    assert model.config.model_type == "llama"
    assert sum(p.numel() for p in model.parameters()) < 1_000_000
    text = tok.apply_chat_template([{"role": "user", "content": "Compute 2+3."}], tokenize=False,
                                   add_generation_prompt=True)
    assert text == "<|user|>Compute 2+3.<|end|>\n<|assistant|>"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    assert tok.eos_token == "<|end|>" and model.generation_config.temperature == 0.6


def test_rerun_is_a_no_op_and_param_change_reruns_only_downstream(tiny_study):
    work, cfg = tiny_study
    proc = run_snakemake(work, "-n", *DATA_TARGETS, "--configfile", str(cfg))
    assert "Nothing to be done" in proc.stdout + proc.stderr
    changed = dict(TINY_CONFIG, splits={**TINY_CONFIG["splits"], "val_size": 3})
    cfg2 = write_config(work, changed)
    proc = run_snakemake(work, "-n", *DATA_TARGETS, "--configfile", str(cfg2))
    out = proc.stdout + proc.stderr
    assert "rule splits:" in out or "splits " in out
    for upstream in ("rule pool:", "rule base_model:", "rule difficulty:"):
        assert upstream not in out


@pytest.mark.parametrize("experiment", ["tiny", "other"])
def test_a_seeded_study_finds_the_data_stages_up_to_date(tiny_stages, tmp_path, experiment):
    """seed_study, which the end-to-end modules start from: no data stage runs again (under the
    same or another experiment name), and a changed data param reruns that stage and what follows."""
    work = seed_study(make_study_dir(tmp_path), tiny_stages, experiment)
    targets = [t.replace("results/tiny/", f"results/{experiment}/") for t in DATA_TARGETS]
    cfg = write_config(work, {**TINY_CONFIG, "experiment": experiment})
    proc = run_snakemake(work, "-n", *targets, "--configfile", str(cfg))
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    changed = {**TINY_CONFIG, "experiment": experiment,
               "difficulty": {**TINY_CONFIG["difficulty"], "extremely_hard_samples": 16}}
    proc = run_snakemake(work, "-n", *targets, "--configfile", str(write_config(work, changed)))
    assert job_counts(proc.stdout + proc.stderr) == {"difficulty_chunk": 1, "difficulty": 1, "splits": 1,
                                                     "fig_difficulty": 1}, proc.stdout[-3000:]


def test_mixture_components_over_k_samples_end_to_end(tiny_study, tmp_path):
    """The paper's mixture components (docs/methods.md section 10): the difficulty stage then draws K
    samples for every problem; Dual's Hard is none of K correct, its Easy a band over
    the same K. The pool and the base model are reused."""
    work = tmp_path / "mix"
    shutil.copytree(tiny_study[0], work, symlinks=True)
    mixtures = {"dual": {"hard": {"share": 0.5, "band": [0.0, 0.0]}, "easy": {"share": 0.5, "band": [0.04, 1.0]}}}
    config = dict(TINY_CONFIG, splits={**TINY_CONFIG["splits"], "names": ["easy", "hard", "dual"],
                                       "mix_size": 12, "mixtures": mixtures})
    cfg = write_config(work, config)
    proc = run_snakemake(work, "--cores", "2", "results/tiny/splits/dual/train.parquet", "--configfile", str(cfg))
    out = proc.stdout + proc.stderr
    assert "rule difficulty_chunk:" in out and "rule base_model:" not in out and "rule pool:" not in out
    res = work / "results" / "tiny"
    diff = pd.read_parquet(res / "data" / "difficulty.parquet").set_index("problem_id")
    assert (diff["samples_k"] == 24).all()
    train = pd.read_parquet(res / "splits" / "dual" / "train.parquet")
    rate = diff.loc[list(problem_ids(train)), "correct_k"] / 24
    assert len(train) == 12 and (rate == 0).sum() == 6 and (rate >= 0.04).sum() == 6
    easy_val = pd.read_parquet(res / "splits" / "easy" / "val.parquet")
    assert not set(problem_ids(train)) & set(problem_ids(easy_val))
