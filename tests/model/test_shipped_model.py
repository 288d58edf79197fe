"""The shipped embedded base model (isocompute.model.shipped): the embedded default's
pretrained weights in the package with their sha256 checksums, copied by the base_model
stage when the config's recipe is the shipped one's, pretrained otherwise."""

from __future__ import annotations

import json
import shutil

import pytest

from isocompute import atomic, jobs
from isocompute.cli import main
from isocompute.config import check_config, read_config_file
from isocompute.data.pool import build_pool
from isocompute.model import shipped
from isocompute.model.io import load_policy

from support import REPO, TINY_CONFIG

# A recipe that pretrains in about a second (TINY_CONFIG's model, 8 steps).
QUICK = {**TINY_CONFIG, "pool": {"n_problems": 100, "instruction": ""},
         "base_model": {**TINY_CONFIG["base_model"], "corpus_size": 400, "pretrain_steps": 8,
                        "pretrain_batch_size": 8}}


def stage_params(config: dict) -> dict:
    """The base_model rule's params of a config: what the stage sees."""
    return jobs.stage_params(check_config(config), "pool", "base_model")


def embedded_params(name: str = "config.yaml") -> dict:
    return stage_params(read_config_file(REPO / "config" / name))


def job_cfg(params: dict):
    from isocompute.cli.common import config_from_params

    return config_from_params(json.dumps(params))


def write_pool(params: dict, path) -> str:
    atomic.write_parquet(path, build_pool(check_config(dict(params))))
    return str(path)


def base_model(params: dict, pool: str, out) -> int:
    return main(["base-model", "--params", json.dumps(params), "--pool", pool, "--out", str(out)])


def test_shipped_copy_checksums_and_loads():
    sums = shipped.verify()
    assert set(shipped.REQUIRED_FILES) <= set(sums)
    assert {p.name for p in shipped.SHIPPED_DIR.iterdir()} == {*sums, shipped.SUMS_FILE, ".isocompute-output"}
    model, tok = load_policy(shipped.SHIPPED_DIR)
    assert model.config.model_type == "llama"
    # What the samplers render (the chat template is a file of its own in this transformers).
    text = tok.apply_chat_template([{"role": "user", "content": "Compute 2+3."}], tokenize=False,
                                   add_generation_prompt=True)
    assert text == "<|user|>Compute 2+3.<|end|>\n<|assistant|>"
    n_params = sum(p.numel() for p in model.parameters())
    meta = json.loads((shipped.SHIPPED_DIR / "isocompute_meta.json").read_text())
    assert n_params == meta["parameters"] and 100_000 < n_params < 200_000
    assert meta["steps"] == embedded_params()["base_model"]["pretrain_steps"]
    lean, _ = load_policy(shipped.SHIPPED_DIR, lean=True)    # what the samplers and trainer read
    assert sum(p.numel() for p in lean.parameters()) == n_params


@pytest.mark.parametrize("config", ["config.yaml", "replicate.yaml", "replicate_e15.yaml", "replicate_e18.yaml",
                                    "replicate_pilot.yaml"])
def test_shipped_recipe_is_the_embedded_studies(config):
    """`make run` and `make replicate` get the shipped copy: their recipe is its recipe."""
    assert shipped.shipped_recipe() == shipped.recipe(embedded_params(config))
    assert shipped.use_shipped(job_cfg(embedded_params(config)))


@pytest.mark.parametrize("change", [
    {"base_model": {"pretrain_steps": 2999}},
    {"base_model": {"hidden_size": 32}},
    {"base_model": {"pretrain_lr": 0.002}},
    {"pool": {"n_problems": 7999}},
    {"seed": 1},
    {"base_model": {"shipped": "never"}},
])
def test_another_recipe_or_never_pretrains(change):
    config = read_config_file(REPO / "config" / "config.yaml")
    for key, value in change.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    assert not shipped.use_shipped(job_cfg(stage_params(config)))


def test_keys_that_do_not_shape_the_weights_keep_the_shipped_copy():
    config = read_config_file(REPO / "config" / "config.yaml")
    config["base_model"] = {"shipped": "auto", "path": "unused/when/embedded", "pretrain_threads": 1}
    assert shipped.use_shipped(job_cfg(stage_params(config)))


def test_base_model_stage_copies_the_shipped_copy(tmp_path):
    params = embedded_params()
    pool = write_pool(params, tmp_path / "pool.parquet")
    out = tmp_path / "base"
    assert base_model(params, pool, out) == 0
    sums = shipped.verify()
    for name in sums.keys() - {shipped.RECIPE_FILE}:
        assert atomic.sha256_file(out / name) == sums[name], name
    prov = json.loads((out / "isocompute_provenance.json").read_text())
    assert prov["shipped"]["sha256"] == shipped.verify()["model.safetensors"]
    assert prov["config"]["base_model"]["shipped"] == "auto"
    load_policy(out)


def tampered_copy(tmp_path, name: str):
    copy = tmp_path / "shipped"
    shutil.copytree(shipped.SHIPPED_DIR, copy)
    target = copy / name
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 1
    target.write_bytes(bytes(data))
    return copy, target


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", shipped.RECIPE_FILE])
def test_a_changed_file_is_refused_naming_it(tmp_path, name):
    copy, target = tampered_copy(tmp_path, name)
    with pytest.raises(Exception) as exc:
        shipped.verify(copy)
    assert str(target) in str(exc.value) and "sha256" in str(exc.value)


def test_the_stage_stops_with_one_line_on_a_damaged_copy(tmp_path, monkeypatch, capsys):
    copy, target = tampered_copy(tmp_path, "model.safetensors")
    monkeypatch.setattr(shipped, "SHIPPED_DIR", copy)
    params = embedded_params()
    out = tmp_path / "base"
    assert base_model(params, write_pool(params, tmp_path / "pool.parquet"), out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(target) in err[0] and "does not match" in err[0]
    assert not out.exists()                     # nothing published


def test_a_missing_checksum_file_is_refused(tmp_path):
    copy = tmp_path / "shipped"
    shutil.copytree(shipped.SHIPPED_DIR, copy)
    (copy / shipped.SUMS_FILE).unlink()
    with pytest.raises(Exception, match=str(copy / shipped.SUMS_FILE)):
        shipped.verify(copy)


def test_ship_then_stage_gives_what_pretraining_gives(tmp_path, monkeypatch):
    """The rebuild (ship-base-model) publishes exactly the model the stage pretrains for
    that recipe, and the stage then copies it instead of pretraining; `--check` agrees."""
    cfg_file = tmp_path / "quick.yaml"
    cfg_file.write_text(json.dumps(QUICK))
    dest = tmp_path / "shipped"
    assert main(["ship-base-model", str(cfg_file), "--out", str(dest)]) == 0
    assert shipped.verify(dest)
    params = stage_params(dict(QUICK))
    pool = write_pool(params, tmp_path / "pool.parquet")
    # Not the package's recipe: the stage pretrains.
    assert base_model(params, pool, tmp_path / "pretrained") == 0
    meta = json.loads((tmp_path / "pretrained" / "isocompute_provenance.json").read_text())
    assert "shipped" not in meta and meta["steps"] == 8
    # With the quick recipe shipped, the stage copies it: the same weights, no pretraining.
    monkeypatch.setattr(shipped, "SHIPPED_DIR", dest)
    assert base_model(params, pool, tmp_path / "copied") == 0
    meta = json.loads((tmp_path / "copied" / "isocompute_provenance.json").read_text())
    assert meta["shipped"]["from"] == str(dest)
    # Every file the pretraining wrote, byte for byte, but the provenance of the job.
    pretrained = {p.name for p in (tmp_path / "pretrained").iterdir()}
    assert {p.name for p in (tmp_path / "copied").iterdir()} == pretrained
    assert shipped.reproduced(dest, tmp_path / "pretrained") == []
    assert shipped.reproduced(dest, tmp_path / "copied") == []
    assert main(["ship-base-model", str(cfg_file), "--out", str(dest), "--check"]) == 0


def test_check_refuses_a_copy_pretraining_does_not_reproduce(tmp_path, capsys):
    """Weights that are not the recipe's, with consistent checksums: only --check sees it."""
    dest, nine = tmp_path / "shipped", tmp_path / "nine"
    for recipe, steps, out in ((tmp_path / "quick.yaml", 8, dest), (tmp_path / "nine.yaml", 9, nine)):
        recipe.write_text(json.dumps({**QUICK, "base_model": {**QUICK["base_model"], "pretrain_steps": steps}}))
        assert main(["ship-base-model", str(recipe), "--out", str(out)]) == 0
    shutil.copyfile(nine / "model.safetensors", dest / "model.safetensors")
    sums = shipped.read_sums(dest)
    sums["model.safetensors"] = atomic.sha256_file(dest / "model.safetensors")
    (dest / shipped.SUMS_FILE).write_text("".join(f"{h}  {n}\n" for n, h in sums.items()))
    shipped.verify(dest)
    capsys.readouterr()
    assert main(["ship-base-model", str(tmp_path / "quick.yaml"), "--out", str(dest), "--check"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("isocompute ship-base-model: error: ")
    assert "a fresh pretraining" in errors[0] and str(dest / "model.safetensors") in errors[0]


def test_make_run_samples_difficulty_in_single_thread_jobs_side_by_side(tmp_path):
    """The embedded default (`make run`, 2 cores): the avg@16 sampling is 2 difficulty_chunk
    jobs of 1 thread each (cluster.sample.jobs 2), not one job of 2 threads."""
    from support import job_counts, make_study_dir, run_snakemake

    work = make_study_dir(tmp_path / "study")
    proc = run_snakemake(work, "-n", "--cores", "2", "results/embedded/data/difficulty.parquet")
    out = proc.stdout + proc.stderr
    assert job_counts(out)["difficulty_chunk"] == 2
    # Snakemake lists a job's threads when they are more than 1; base_model's 2 are listed.
    blocks = {block.split(":", 1)[0]: block for block in out.split("\nrule ")[1:]}
    assert "threads: 2" in blocks["base_model"]
    chunks = [block for block in out.split("\nrule ")[1:] if block.startswith("difficulty_chunk:")]
    assert len(chunks) == 2 and not any("threads:" in block for block in chunks)
