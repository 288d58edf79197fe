"""End to end: a tiny study of recipe variants through snakemake on the CPU (data
stages, seven variant runs with the local backend, scoring, their curves and the
three figures: Fig. 3, Fig. 4, the decoupled baseline); a changed variant re-runs
only its own run and the figures."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from support import TINY_CONFIG, job_counts, make_study_dir, run_snakemake, seed_study, write_config

pytestmark = pytest.mark.slow


def cells(*splits):
    return [{"split": s, "B_p": 2, "n": 4, "C_max": 32} for s in splits]   # B = 8: 4 steps


# The base recipe's runs serve every figure: Fig. 3's healthy recipe (KL + entropy on Easy, neither
# on Hard), the lr anchor of 1e-3, the sqrt rule and the plain 4/4 baseline. Seven runs in all.
TINY_VARIANTS = {
    **TINY_CONFIG,
    "difficulty": {"samples": 16, "extremely_hard_samples": 16},   # no Extremely Hard split: no extra draws
    "train": {"lr_base": 1e-3, "B_ref": 4, "warmup_steps": 1, "eval_schedule": "steps", "eval_interval": 2},
    "eval": {"k": 4, "samples": 4},
    "variants": {
        "base": {"label": "base recipe", "cells": cells("easy", "hard"),
                 "figures": ["regularization", "lr_anchor", "lr_scaling", "decoupled_baseline"]},
        "filtered": {"label": "KL + entropy, zero-var filter on them", "cells": cells("easy", "hard"),
                     "train": {"regularized_splits": ["easy", "hard"], "zero_variance_filter": "kl_entropy"},
                     "figures": ["regularization"]},
        "lr_low": {"label": "lr 3e-4", "train": {"lr_base": 3e-4}, "cells": cells("easy"), "figures": ["lr_anchor"]},
        "linear": {"train": {"lr_scaling": "linear"}, "cells": cells("easy"), "figures": ["lr_scaling"]},
        "n2_of_4": {"label": "2/4", "train": {"decoupled_baseline": {"enabled": True, "n_train": 2}},
                    "cells": cells("easy"), "figures": ["decoupled_baseline"]},
    },
}
RUNS = {("base", "easy"), ("base", "hard"), ("filtered", "easy"), ("filtered", "hard"), ("lr_low", "easy"),
        ("linear", "easy"), ("n2_of_4", "easy")}
FIGURES = "results/tiny/variants/figures"   # the target: no Fig. 2 (the data stages' figure) needed


@pytest.fixture(scope="module")
def tiny_variants(tmp_path_factory, tiny_stages):
    # From the session's data stages: its own difficulty params redraw the samples (pool and model kept).
    work = seed_study(make_study_dir(tmp_path_factory.mktemp("variants")), tiny_stages)
    cfg = write_config(work, TINY_VARIANTS)
    run_snakemake(work, "--cores", "2", FIGURES, "--configfile", str(cfg))
    return work, cfg


def metrics_of(run) -> list[dict]:
    return [json.loads(line)["data"] for line in (run / "metrics.jsonl").read_text().splitlines()][1:]


def test_each_variant_trains_apart_with_its_recipe(tiny_variants):
    work, _ = tiny_variants
    res = work / "results" / "tiny" / "variants"
    assert not (work / "results" / "tiny" / "runs").exists()   # no grid: only the variants train
    found = {(p.parts[-4], p.parts[-2]) for p in res.glob("*/runs/*/bp2_n4")}
    assert found == RUNS
    for variant, split in RUNS:
        run = res / variant / "runs" / split / "bp2_n4"
        marker = json.loads((run / "run.json").read_text())
        assert (marker["variant"], marker["split"], marker["M_max"]) == (variant, split, 4)
        evals = pd.read_parquet(run / "evals.parquet")
        assert evals["step"].tolist() == [0, 2, 4] and evals["avg@4"].between(0, 1).all()
        assert (work / "results" / "tiny" / "logs" / "train" / "variants" / variant / split / "bp2_n4.log").is_file()
    train = {v: json.loads((res / v / "runs" / "easy" / "bp2_n4" / "run.json").read_text())["config"]["train"]
             for v in ("base", "lr_low", "linear", "n2_of_4", "filtered")}
    lr = {v: json.loads((res / v / "runs" / "easy" / "bp2_n4" / "run.json").read_text())["lr"] for v in train}
    # lr = lr_base * (B / B_ref)^p with B = 8, B_ref = 4.
    assert lr["base"] == pytest.approx(1e-3 * 2 ** 0.5) and lr["linear"] == pytest.approx(2e-3)
    assert lr["lr_low"] == pytest.approx(3e-4 * 2 ** 0.5)
    assert train["n2_of_4"]["decoupled_baseline"] == {"enabled": True, "n_train": 2}
    # The filter on the KL and entropy terms only: every row in the loss, the terms over the others.
    filtered = metrics_of(res / "filtered" / "runs" / "hard" / "bp2_n4")
    assert all(d["actor/rows_in_loss"] == 8 and 0 <= d["actor/regularised_rows"] <= 8 for d in filtered)
    assert all("actor/kl_loss" in d for d in filtered)                      # KL + entropy on Hard too
    assert all("actor/kl_loss" not in d for d in metrics_of(res / "base" / "runs" / "hard" / "bp2_n4"))
    # The decoupled baseline: 2 of each problem's 4 rollouts in the gradient, compute counts all 4.
    decoupled = metrics_of(res / "n2_of_4" / "runs" / "easy" / "bp2_n4")
    assert all(d["actor/rows_in_loss"] == 4 for d in decoupled)
    assert decoupled[-1]["training/compute_rollouts"] == 32


def test_variant_curves_and_figures(tiny_variants):
    work, _ = tiny_variants
    res = work / "results" / "tiny" / "variants"
    curves = pd.read_parquet(res / "curves.parquet")
    assert {(v, s) for v, s in curves[["variant", "split"]].drop_duplicates().values} == RUNS
    assert {"step", "compute", "train_reward", "entropy", "kl", "lr", "avg@4"} <= set(curves.columns)
    assert curves.groupby(["variant", "split"]).size().eq(5).all()          # steps 0..4
    figures = sorted(p.name for p in (res / "figures").iterdir() if not p.name.startswith("."))
    assert figures == sorted(f"{stem}.{ext}" for stem in ("fig3_regularization", "fig4_learning_rate",
                                                          "appendix_decoupled_baseline") for ext in ("png", "pdf"))
    assert all((res / "figures" / f).stat().st_size > 10_000 for f in figures if f.endswith(".png"))


def test_a_changed_variant_reruns_only_its_run(tiny_variants):
    work, _ = tiny_variants
    changed = json.loads(json.dumps(TINY_VARIANTS))
    changed["variants"]["lr_low"]["train"]["lr_base"] = 1e-4
    proc = run_snakemake(work, "-n", FIGURES, "--configfile", str(write_config(work, changed)))
    out = proc.stdout + proc.stderr
    assert job_counts(out) == {"train_variant": 1, "score_variant": 1, "collect_variants": 1,
                               "variant_figures": 1}, out[-3000:]
    assert "variants/lr_low/runs/easy/bp2_n4/run.json" in out
    # A figure-only change (a label) redraws the figures and re-runs no training.
    relabel = json.loads(json.dumps(TINY_VARIANTS))
    relabel["variants"]["linear"]["label"] = "linear rule"
    proc = run_snakemake(work, "-n", FIGURES, "--configfile", str(write_config(work, relabel)))
    assert job_counts(proc.stdout + proc.stderr) == {"variant_figures": 1}
    write_config(work, TINY_VARIANTS)
