"""Recipe variants (config `variants`) without running the pipeline: bad input named
before any job, each variant's recipe, identity, rerun contract and paths, the loss
terms the zero-variance filter reaches, the verl mapping and what verl rejects, the
paper config's plan, and the variants' curves and figures from synthetic runs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from isocompute.config import check_config, load_config
from isocompute.errors import ConfigError
from isocompute.grid import Cell, find_cell, grid_cells, variant_cells
from isocompute.layout import RunPaths, StudyLayout
from isocompute.train import grpo
from isocompute.train.backends import check_study
from isocompute.train.recipe import cell_config, cell_recipe, variant_config
from support import REPO, VENV_BIN
from support.verl import overrides_dict

ABLATIONS = REPO / "config" / "paper" / "ablations.yaml"
GRID = {"easy": {"B_p": [2], "n": [2, 4], "B_max": 8, "C_max": 64}}


def study(variants: dict, **over) -> dict:
    return check_config({"splits": {"names": ["easy", "hard"]}, "grid": GRID, "variants": variants, **over})


def cell(split="easy", B_p=2, n=4, **extra) -> dict:
    return {"split": split, "B_p": B_p, "n": n, **extra}


# --- bad input, named before any job ------------------------------------------------

BAD = [
    ("unknown-key", {"v": {"train": {"lr_bse": 1e-3}, "cells": [cell()]}}, {},
     "config key 'variants.v.train.lr_bse': unknown key"),
    ("not-a-recipe-key", {"v": {"train": {"backend": "verl"}, "cells": [cell()]}}, {},
     "config key 'variants.v.train.backend': not a recipe key, so variant 'v' cannot override it"),
    ("evaluation-schedule-is-the-studys", {"v": {"train": {"eval_interval": 2}, "cells": [cell()]}}, {},
     "'variants.v.train.eval_interval': not a recipe key"),
    ("bad-value", {"v": {"train": {"lr_scaling": "cubic"}, "cells": [cell()]}}, {},
     "config key 'variants.v.train.lr_scaling': expected one of"),
    ("bad-filter-mode", {"v": {"train": {"zero_variance_filter": "pg"}, "cells": [cell()]}}, {},
     "'variants.v.train.zero_variance_filter'"),
    ("cell-split-not-built", {"v": {"cells": [cell("dual")]}}, {},
     "config key 'variants.v.cells[0].split': split 'dual' is not built"),
    ("cell-split-unknown", {"v": {"cells": [cell("medium")]}}, {}, "'variants.v.cells[0].split'"),
    ("cell-without-budget", {"v": {"cells": [cell("hard")]}}, {},
     "config key 'variants.v.cells[0].C_max': expected a compute budget"),
    ("cell-twice", {"v": {"cells": [cell(), cell()]}}, {}, "'variants.v.cells[1]': variant 'v' names cell"),
    ("no-cells", {"v": {"train": {"lr_base": 1e-3}}}, {}, "'variants.v': 'cells' is a required property"),
    ("bad-name", {"v/1": {"cells": [cell()]}}, {}, "config key 'variants'"),
    ("unknown-figure", {"v": {"cells": [cell()], "figures": ["fig99"]}}, {}, "'variants.v.figures[0]'"),
]


@pytest.mark.parametrize("case,variants,over,message", BAD, ids=[b[0] for b in BAD])
def test_bad_variants_are_rejected_by_name(case, variants, over, message):
    with pytest.raises(ConfigError) as err:
        study(variants, **over)
    assert message in str(err.value), str(err.value)


STUDY_BAD = [
    ("no-step-within-budget", {"v": {"cells": [cell(B_p=8, n=16)]}}, {},
     "config key 'variants.v.cells[0]': B_p * n = 128 exceeds C_max = 64"),
    ("decoupled-not-fewer", {"v": {"train": {"decoupled_baseline": {"enabled": True, "n_train": 4}},
                                   "cells": [cell()]}}, {},
     "config key 'variants.v.train.decoupled_baseline.n_train': expected fewer than the n = 4"),
    ("too-few-evaluations", {"v": {"cells": [cell(C_max=8)]}}, {}, "variant 'v': config key 'train.eval_"),
    ("verl-filter-on-kl-entropy", {"v": {"train": {"zero_variance_filter": "kl_entropy"}, "cells": [cell()]}},
     {"train": {"backend": "verl"}},
     "config key 'variants.v.train.zero_variance_filter': 'kl_entropy' is not supported by the verl backend: "
     "verl 0.9.1's actor loss applies one response mask"),
    ("verl-filter-everywhere", {"v": {"train": {"zero_variance_filter": True}, "cells": [cell()]}},
     {"train": {"backend": "verl"}}, "'variants.v.train.zero_variance_filter': True is not supported"),
    ("verl-decoupled", {"v": {"train": {"decoupled_baseline": {"enabled": True, "n_train": 2}},
                              "cells": [cell()]}}, {"train": {"backend": "verl"}},
     "'variants.v.train.decoupled_baseline.enabled': True is not supported by the verl backend: verl 0.9.1's "
     "GRPO estimator"),
]


@pytest.mark.parametrize("case,variants,over,message", STUDY_BAD, ids=[b[0] for b in STUDY_BAD])
def test_variants_a_study_cannot_run_stop_in_check_study(case, variants, over, message):
    with pytest.raises(ConfigError) as err:
        check_study(study(variants, **over))
    assert message in str(err.value), str(err.value)


@pytest.mark.parametrize("variants,named", [
    ({"v": {"train": {"device": "cpu"}, "cells": [cell()]}}, "'variants.v.train.device': not a recipe key"),
    ({"v": {"cells": [cell("very_easy")]}}, "'variants.v.cells[0].split': split 'very_easy' is not built"),
])
def test_snakemake_stops_before_any_job_naming_the_variant(tmp_path, monkeypatch, variants, named):
    """The Snakefile's checks, in process (test_reliability runs them through `snakemake -n`)."""
    from support import TINY_CONFIG, make_study_dir, workflow_config_error, write_config

    work = make_study_dir(tmp_path)
    cfg = write_config(work, {**TINY_CONFIG, "grid": GRID, "variants": variants})
    monkeypatch.chdir(work)
    line = workflow_config_error(cfg)
    assert named in line and "\n" not in line, line
    assert not (work / "results").exists()


# --- recipe, identity, rerun contract, paths -------------------------------------------

def test_a_variant_trains_with_the_studys_recipe_and_its_overrides():
    cfg = study({
        "linear": {"train": {"lr_scaling": "linear", "lr_base": 2e-3}, "cells": [cell(), cell("hard", C_max=32)]},
        "plain": {"cells": [cell(n=2)]},
    }, train={"lr_base": 1e-3, "B_ref": 4})
    cells = variant_cells(cfg)
    assert [(c.variant, c.split, c.B_p, c.n, c.M_max, c.C_max) for c in cells] == [
        ("linear", "easy", 2, 4, 8, 64), ("linear", "hard", 2, 4, 4, 32), ("plain", "easy", 2, 2, 16, 64)]
    linear = variant_config(cfg, "linear")
    assert linear["train"]["lr_scaling"] == "linear" and cfg["train"]["lr_scaling"] == "sqrt"
    assert linear["train"]["kl_coef"] == cfg["train"]["kl_coef"]
    # lr = lr_base * (B / B_ref)^p: the variant's 2e-3 * 8/4; the plain variant's and the grid's 1e-3 * sqrt(B/4).
    assert cell_recipe(cell_config(cfg, cells[0]), cells[0]).lr == pytest.approx(4e-3)
    assert cell_recipe(cell_config(cfg, cells[2]), cells[2]).lr == pytest.approx(1e-3)
    grid = find_cell(grid_cells(cfg), "easy", 2, 4)
    assert cell_recipe(cell_config(cfg, grid), grid).lr == pytest.approx(1e-3 * 2 ** 0.5)
    # A variant's run validates from its own batch to its own budget, as the train stage computes it.
    staged = check_config({"seed": 0, "train": linear["train"]})
    assert cell_recipe(linear, cells[1]).eval_steps == cell_recipe(staged, cells[1]).eval_steps


def test_identity_and_params_carry_the_overridden_keys(tmp_path):
    from isocompute.train.identity import training_identity

    cfg = study({"a": {"train": {"zero_variance_filter": "kl_entropy"}, "cells": [cell()]},
                 "b": {"train": {"regularized_splits": []}, "cells": [cell()]}})
    for name in ("train", "val"):
        (tmp_path / f"{name}.parquet").write_text(name)
    paths = RunPaths(tmp_path / "run", tmp_path / "train.parquet", tmp_path / "val.parquet", "org/model")
    a, b = (find_cell(variant_cells(cfg), "easy", 2, 4, variant=v) for v in "ab")
    id_a = training_identity(variant_config(cfg, "a"), a, paths)
    id_b = training_identity(variant_config(cfg, "b"), b, paths)
    assert id_a["train"]["zero_variance_filter"] == "kl_entropy" and id_b["train"]["regularized_splits"] == []
    assert id_a != id_b != training_identity(cfg, find_cell(grid_cells(cfg), "easy", 2, 4), paths)


def test_variant_runs_sit_apart_from_the_grid():
    layout = StudyLayout("x")
    assert layout.cell_files(Cell("easy", 2, 4, 8, 64, variant="lin")).run_dir.as_posix() == \
        "results/x/variants/lin/runs/easy/bp2_n4"
    assert layout.cell_files(Cell("easy", 2, 4, 8, 64)).run_dir.as_posix() == "results/x/runs/easy/bp2_n4"
    assert layout.variant_figures == "results/x/variants/figures"


# --- loss: the zero-variance filter on every term or on the KL and entropy terms only -----

def test_loss_rows_by_filter_mode_and_decoupled_baseline():
    rewards = np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=float)   # groups: mixed, all 1 / all 0, mixed
    index = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    rows, reg = grpo.loss_rows(rewards, index)
    assert rows.tolist() == list(range(8)) and reg is None
    rows, reg = grpo.loss_rows(rewards, index, zero_variance_filter=True)
    assert rows.tolist() == [0, 1, 6, 7] and reg is None
    rows, reg = grpo.loss_rows(rewards, index, zero_variance_filter="kl_entropy")
    assert rows.tolist() == list(range(8)) and reg.tolist() == [1, 1, 0, 0, 0, 0, 1, 1]
    rows, reg = grpo.loss_rows(rewards, index, zero_variance_filter="kl_entropy", n_train=1,
                               rng=np.random.default_rng(0))
    assert len(rows) == 4 and sorted(index[rows]) == [0, 1, 2, 3] and reg.tolist() == [1, 0, 0, 1]
    with pytest.raises(ValueError):
        grpo.loss_rows(rewards, index, zero_variance_filter="pg")


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(4, 3, 5, generator=g, requires_grad=True)
    responses = torch.randint(0, 5, (4, 3), generator=g)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]])
    adv = torch.tensor([1.0, -1.0, 0.0, 0.0])[:, None] * mask
    ref = torch.log_softmax(torch.randn(4, 3, 5, generator=g), -1).gather(-1, responses[..., None])[..., 0]
    return logits, responses, mask, adv, ref


def test_kl_and_entropy_terms_over_the_regularised_rows_only():
    weights = grpo.LossWeights(kl_coef=0.1, entropy_coef=0.05, temperature=0.7)
    logits, responses, mask, adv, ref = _batch()
    every, m_every = grpo.grpo_objective(logits, responses, mask, adv, weights, ref)
    # All rows regularised: the same objective as no filter.
    same, _ = grpo.grpo_objective(logits, responses, mask, adv, weights, ref, torch.tensor([True] * 4))
    assert same.item() == pytest.approx(every.item(), rel=1e-6)
    # Rows 2, 3 (a zero-variance group) out of KL and entropy: pg over all rows, the terms over rows 0, 1.
    reg = torch.tensor([True, True, False, False])
    loss, m = grpo.grpo_objective(logits, responses, mask, adv, weights, ref, reg)
    scaled = logits / 0.7
    log_prob = grpo.token_log_probs(scaled, responses)
    pg, _ = grpo.policy_loss(log_prob.detach(), log_prob, adv, mask)
    reg_mask = mask * reg[:, None]
    ent = grpo.entropy(scaled, reg_mask)
    kl = grpo.kl_loss(log_prob, ref, reg_mask)
    assert loss.item() == pytest.approx((pg - 0.05 * ent + 0.1 * kl).item(), rel=1e-6)
    assert m["actor/entropy_term"] == pytest.approx(ent.item()) and m["actor/kl_term"] == pytest.approx(kl.item())
    # The logged entropy and KL are every row's, comparable across variants.
    assert m["actor/entropy"] == pytest.approx(m_every["actor/entropy"])
    assert m["actor/kl_loss"] == pytest.approx(m_every["actor/kl_loss"]) and m["actor/regularised_rows"] == 2
    # The KL and entropy terms' gradient reaches only the regularised rows: rows 2, 3 have zero advantage.
    logits.grad = None
    loss.backward()
    assert logits.grad[2:].abs().sum() == 0 and logits.grad[:2].abs().sum() > 0
    # No regularised row: the policy gradient alone.
    none, _ = grpo.grpo_objective(logits, responses, mask, adv, weights, ref, torch.tensor([False] * 4))
    assert none.item() == pytest.approx(pg.item())


# --- verl: each variant as verl overrides, and what verl cannot express -----------------

def _ablations():
    return load_config(ABLATIONS)


def _verl_overrides(cfg, variant, split, B_p, n, tmp_path):
    from isocompute.layout import run_paths
    from isocompute.train.backends.verl.overrides import verl_overrides

    c = find_cell(variant_cells(cfg), split, B_p, n, variant=variant)
    paths = run_paths(cfg, c)
    paths = type(paths)(tmp_path / paths.run_dir, tmp_path / "t.parquet", tmp_path / "v.parquet", paths.model)
    return c, verl_overrides(cell_config(cfg, c), c, paths)


def test_verl_overrides_of_the_paper_variants(tmp_path):
    cfg = _ablations()
    o = {name: overrides_dict(_verl_overrides(cfg, name, split, B_p, n, tmp_path)[1]) for name, split, B_p, n in [
        ("kl_entropy", "hard", 256, 16), ("no_regularization", "easy", 256, 16), ("lr_linear", "easy", 128, 64),
        ("lr_constant", "easy", 128, 64), ("lr_sqrt", "easy", 128, 64), ("lr_2p5e-7", "easy", 128, 8)]}
    assert o["kl_entropy"]["actor_rollout_ref.actor.use_kl_loss"] == "true"          # on Hard too
    assert float(o["kl_entropy"]["actor_rollout_ref.actor.entropy_coeff"]) == 1e-3
    assert o["no_regularization"]["actor_rollout_ref.actor.use_kl_loss"] == "false"  # off on Easy too
    assert float(o["no_regularization"]["actor_rollout_ref.actor.entropy_coeff"]) == 0.0
    lr = {k: float(v["actor_rollout_ref.actor.optim.lr"]) for k, v in o.items()}
    assert lr["lr_constant"] == pytest.approx(1e-6) and lr["lr_linear"] == pytest.approx(8e-6)
    assert lr["lr_sqrt"] == pytest.approx(1e-6 * 8 ** 0.5) and lr["lr_2p5e-7"] == pytest.approx(2.5e-7)
    assert o["lr_linear"]["trainer.experiment_name"] == "paper_ablations-lr_linear-easy-bp128_n64"
    assert o["lr_linear"]["trainer.default_local_dir"].endswith(
        "results/paper_ablations/variants/lr_linear/runs/easy/bp128_n64/checkpoints")


@pytest.mark.slow   # starts verl's trainer CLI (Hydra composition)
def test_verl_resolves_a_variants_command(tmp_path):
    """verl 0.9.1 resolves a variant's command line (`main_ppo --cfg job`), and composes and
    validates more of them with its own config checks (no GPU)."""
    import yaml
    from support.verl import COMPOSE

    cfg = _ablations()
    _, literal = _verl_overrides(cfg, "no_regularization", "easy", 256, 16, tmp_path)
    cli = subprocess.Popen([sys.executable, "-m", "verl.trainer.main_ppo", "--cfg", "job", "--resolve", *literal],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = [_verl_overrides(cfg, *spec, tmp_path) for spec in
            [("lr_linear", "easy", 128, 64), ("kl_entropy", "hard", 256, 16), ("n256", "easy", 128, 256)]]
    proc = subprocess.run([sys.executable, "-c", COMPOSE], input=json.dumps([o for _, o in runs]),
                          capture_output=True, text=True, timeout=600)
    out, err = cli.communicate(timeout=600)
    assert cli.returncode == 0, err[-4000:]
    actor = yaml.safe_load(out)["actor_rollout_ref"]["actor"]
    assert actor["optim"]["lr"] == pytest.approx(2e-6) and actor["use_kl_loss"] is False   # sqrt(4096/1024)
    assert actor["entropy_coeff"] == 0.0
    assert proc.returncode == 0, proc.stderr[-4000:]
    (lin, reg, n256) = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert lin["config"]["actor_rollout_ref"]["actor"]["optim"]["lr"] == pytest.approx(8e-6)
    assert reg["reference"] is True and reg["config"]["actor_rollout_ref"]["actor"]["use_kl_loss"] is True
    assert n256["config"]["actor_rollout_ref"]["rollout"]["n"] == 256
    assert n256["config"]["trainer"]["total_training_steps"] == 100


def test_the_paper_variants_verl_cannot_run_are_named(tmp_path, monkeypatch):
    from isocompute import config as config_module

    monkeypatch.setattr(config_module, "check_paths", lambda cfg: None)
    cfg = _ablations()
    assert check_study(cfg) == [] and len(variant_cells(cfg)) == 14
    bad = {**cfg["variants"], "n64_of_256": {"label": "64/256", "figures": ["decoupled_baseline"],
                                             "train": {"decoupled_baseline": {"enabled": True, "n_train": 64}},
                                             "cells": [cell(B_p=128, n=256, C_max=3276800)]}}
    with pytest.raises(ConfigError, match="'variants.n64_of_256.train.decoupled_baseline.enabled'"):
        check_study(check_config({**cfg, "variants": bad}))


def test_plan_of_the_ablations_config():
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "plan", str(ABLATIONS)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "14 training runs" in proc.stdout
    for group in ("kl_entropy/hard", "no_regularization/easy", "lr_linear/easy", "n256/easy", "total"):
        assert group in proc.stdout, group


# --- curves and figures ------------------------------------------------------------------

def _synthetic_run(variant, split, B_p, n, steps, lr, kl=True):
    metrics = [{"step": s, "data": {"critic/score/mean": 0.1 * s, "actor/entropy": 1.0 / (s + 1), "actor/lr": lr,
                                    **({"actor/kl_loss": 0.01 * s} if kl else {})}} for s in range(1, steps + 1)]
    metrics.insert(0, {"step": 0, "data": {"val/score/mean": 0.2}})
    evals = pd.DataFrame({"step": [0, steps // 2, steps], "avg@4": [0.2, 0.3, 0.4], "best@4": [0.5, 0.6, 0.7],
                          "worst@4": [0.0, 0.1, 0.1], "compute": [0, 1, 2]})
    from isocompute.analysis.inputs.variants import variant_curves

    return variant_curves(metrics, evals, variant=variant, split=split, B_p=B_p, n=n)


def test_curves_join_training_metrics_and_evaluations():
    run = _synthetic_run("a", "hard", 2, 4, 4, 1e-3, kl=False)
    assert run["step"].tolist() == [0, 1, 2, 3, 4] and run["compute"].tolist() == [0, 8, 16, 24, 32]
    assert run["avg@4"].isna().tolist() == [False, True, False, True, False]
    assert run["kl"].isna().all() and run.loc[1, "entropy"] == pytest.approx(0.5)
    assert (run[["variant", "split", "B_p", "n"]].drop_duplicates().values.tolist() == [["a", "hard", 2, 4]])


def test_variant_figures_from_synthetic_runs(tmp_path):
    from isocompute.analysis.plots.variants import plot_variants

    curves = pd.concat([
        _synthetic_run("reg", "easy", 2, 4, 6, 1e-3), _synthetic_run("reg", "hard", 2, 4, 6, 1e-3),
        _synthetic_run("none", "easy", 2, 4, 6, 1e-3, kl=False), _synthetic_run("none", "hard", 2, 4, 6, 1e-3, kl=False),
        _synthetic_run("lo", "easy", 2, 2, 6, 1e-4), _synthetic_run("hi", "easy", 2, 2, 6, 1e-2),
        _synthetic_run("lo", "hard", 2, 2, 6, 1e-4),
        _synthetic_run("lin", "easy", 2, 4, 6, 4e-3), _synthetic_run("n4", "easy", 2, 4, 6, 1e-3),
        _synthetic_run("n2of4", "easy", 2, 4, 6, 1e-3)], ignore_index=True)
    variants = {"reg": {"figures": ["regularization"], "label": "KL + entropy"}, "none": {"figures": ["regularization"]},
                "lo": {"figures": ["lr_anchor"]}, "hi": {"figures": ["lr_anchor"]}, "lin": {"figures": ["lr_scaling"]},
                "n4": {"figures": ["decoupled_baseline"], "label": "4/4"},
                "n2of4": {"figures": ["decoupled_baseline"], "label": "2/4"}, "unused": {"figures": []}}
    paths = plot_variants(curves, variants, tmp_path, formats=("png",))
    assert sorted(p.name for p in paths) == ["appendix_decoupled_baseline.png", "fig3_regularization.png",
                                             "fig4_learning_rate.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)
    assert plot_variants(curves, {"reg": {"figures": []}}, tmp_path / "none") == []
    # A split only one of a figure's variants ran at (another figure's cell) gets no panel.
    from isocompute.analysis.plots.variants import _runs

    assert set(_runs(curves, {"lo": "lo", "hi": "hi"})["split"]) == {"easy"}
    assert set(_runs(curves, {"lo": "lo"})["split"]) == {"easy", "hard"}
