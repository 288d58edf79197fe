"""The GPU-hour plan (`isocompute plan`): runs, rollouts and GPU-hours of the
paper configs, the adaptive sweep's expected cost, and the numbers docs/cluster.md quotes.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from isocompute.cli import main
from isocompute.cluster import plan
from isocompute.analysis.adaptive.strata import STRATA
from isocompute.cluster.plan import adaptive_estimate, cell_costs, format_plan, split_summary, synthetic_split_study
from isocompute.config import load_config, read_config_file
from isocompute.grid import find_cell, grid_cells, variant_cells
from isocompute.train.recipe import cell_recipe
from support import REPO, VENV_BIN

PAPER = sorted((REPO / "config" / "paper").glob("*.yaml"))
PAPER_MAIN = REPO / "config" / "paper" / "qwen25_7b.yaml"


def test_plan_counts_runs_rollouts_and_gpu_hours():
    cfg = load_config(PAPER_MAIN)
    costs = cell_costs(cfg)
    assert costs.groupby("split").size().to_dict() == {"easy": 41, "hard": 29}   # with the fixed-B cells
    assert (costs["rollouts"] <= 4194304).all() and (costs["rollouts"] > 4194304 - 65536).all()
    summary = split_summary(costs, cfg["cluster"]["max_runtime"])
    assert summary.loc["total", "runs"] == 70
    # The cost model by hand for one cell: easy bp1024_n64, B = 65536, M = 64, 8 GPUs.
    row = costs[(costs.B_p == 1024) & (costs.n == 64)].iloc[0]
    step_h = 60 / 3600 + 65536 / (6000 * 8)
    cell = find_cell(grid_cells(cfg), "easy", 1024, 64)
    evals = len(cell_recipe(cfg, cell).eval_steps)
    # 4 compute points per doubling from 2^8 (the smallest batch) to 2^22; this run reaches those from
    # half a step (2^15) up, 29 points on 21 distinct steps (from step 1 on several share a step).
    assert evals == row["evaluations"] == 21
    steps = load_config(PAPER_MAIN, {"train": {"eval_schedule": "steps"}})
    assert cell_recipe(steps, cell).eval_steps == (0, 10, 20, 30, 40, 50, 60, 64)
    assert row["gpu_hours"] == pytest.approx(8 * (64 * step_h + evals * 300 * 4 / (6000 * 8)))
    text = format_plan(cfg)
    assert "70 training runs" in text and "6,000 rollouts per GPU-hour" in text


@pytest.mark.parametrize("path", PAPER, ids=[p.stem for p in PAPER])
@pytest.mark.slow   # simulates the adaptive sweep of each paper config
def test_paper_configs_check_and_plan(path, tmp_path):
    cfg = load_config(path)
    if cfg["compare"] and not cfg["grid"] and not cfg["variants"]:
        return check_compare_only_config(path, cfg, tmp_path)
    assert cfg["train"]["backend"] == "verl" and cfg["sampling"]["backend"] == "vllm"
    assert cfg["base_model"]["source"] == "path" and cfg["pool"]["data_source"] == "math"
    assert cfg["train"]["lr_base"] == 1e-6 and cfg["train"]["B_ref"] == 1024
    assert cfg["eval"]["k"] == 4 and cfg["eval"]["samples"] == 4 and cfg["splits"]["val_size"] == 300
    for split, spec in cfg["grid"].items():
        assert spec["B_max"] == (65536 if split == "easy" else 16384)
    assert grid_cells(cfg) or variant_cells(cfg)   # ablations.yaml: recipe variants, no grid
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "plan", str(path), "--adaptive-seeds", "1"],
                          capture_output=True, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert proc.returncode == 0 and "GPU-hours" in proc.stdout, proc.stderr
    if grid_cells(cfg):
        assert "adaptive sweep" in proc.stdout and "whole bill" in proc.stdout and "training rollouts" in proc.stdout


def check_compare_only_config(path, cfg, tmp_path):
    """A paper config that only compares (Figs. 12, 13): it names paper experiments, each with an
    analysis of every split it draws; its plan trains nothing."""
    studies = {c["experiment"]: c for c in map(load_config, PAPER) if c["grid"]}
    for spec in cfg["compare"].values():
        for entry in spec["experiments"]:
            assert entry["experiment"] in studies, entry
            assert set(spec["splits"]) <= set(studies[entry["experiment"]]["grid"]), entry
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "plan", str(path)], capture_output=True, text=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert proc.returncode == 0 and "trains nothing: 0 GPU-hours" in proc.stdout, proc.stderr


def test_docs_state_each_paper_configs_plan():
    """docs/cluster.md quotes `isocompute plan` for every paper config; keep them in step."""
    doc = (REPO / "docs" / "cluster.md").read_text()
    for path in PAPER:
        cfg = load_config(path)
        assert f"`config/paper/{path.name}`" in doc
        costs = cell_costs(cfg)
        if costs.empty:   # compare only: trains nothing
            assert f"`config/paper/{path.name}` | " in doc and "| 0 runs | 0 | 0 |" in doc
            continue
        total = split_summary(costs, cfg["cluster"]["max_runtime"]).loc["total"]
        assert f"{int(total['runs'])} runs" in doc and f"{total['gpu_hours']:,.0f}" in doc, path.name


TINY = {"grid": {"easy": {"B_p": [32], "n": [8, 64, 512], "B_max": 65536, "C_max": 4194304}},
        "cluster": {"throughput": {"rollouts_per_gpu_hour": 6000, "step_overhead_s": 0}}}


def test_adaptive_estimate_scales_each_cell_by_its_share():
    cfg = load_config(PAPER_MAIN)
    cfg["grid"] = TINY["grid"]
    cfg["cluster"]["throughput"].update(TINY["cluster"]["throughput"])
    est = adaptive_estimate(cfg, seeds=1)
    frac = est["fractions"].set_index("n")["fraction"]
    eval_frac = est["fractions"].set_index("n")["eval_fraction"]
    assert set(frac.index) == {8, 64, 512} and (frac > 0).all() and (frac <= 1).all()
    assert (eval_frac > 0).all() and (eval_frac <= 1).all()
    reps = est["replays"]
    assert set(reps["split"]) == {"easy"} and set(reps["stratum"]) <= set(STRATA) and len(reps) >= 6
    text = format_plan(cfg, est)
    costs = cell_costs(cfg).set_index("n")
    eval_gpu = costs["eval_rollouts"] / TINY["cluster"]["throughput"]["rollouts_per_gpu_hour"]
    expected = ((costs["gpu_hours"] - eval_gpu) * frac + eval_gpu * eval_frac).sum()
    assert f"~{expected:,.0f} GPU-hours instead of ~{costs['gpu_hours'].sum():,.0f}" in text
    assert "whole bill" in text and "validation generations" in text
    assert "1 synthetic studies per split and stratum" in text
    per = reps.groupby("stratum", sort=False)["share"].mean()
    assert (f"whole bill {per.min():.0%} ({per.idxmin()}) to {per.max():.0%} ({per.idxmax()}) of the grid's, "
            "by when n* moves") in text
    assert "the saving depends on the truth" in text


@pytest.mark.parametrize("seed", range(3))
def test_on_an_early_crossover_the_largest_n_trains_to_c_max_and_the_smallest_stops(seed):
    """The replay `plan` prices, on a truth where n = 512 overtakes early (stratum "early"): the
    largest n, n* at C_max, trains its whole budget, the smallest stops before it, the bill is
    below the grid's, and the n it keeps is within epsilon of the truth's best at every probe."""
    import warnings

    from isocompute.analysis.adaptive.replay import replay
    from isocompute.sweep import SweepSettings

    cfg = load_config(PAPER_MAIN)
    cfg["grid"] = TINY["grid"]
    study = synthetic_split_study(cfg, "easy", seed, "early")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = replay(study, c_max=float(TINY["grid"]["easy"]["C_max"]), params=SweepSettings.from_config(cfg))
    spent = res["runs"].set_index("n").eval("spent / full_compute")
    assert spent[512] == 1 and spent[8] < 1, spent.to_dict()
    assert res["share"] < 1 and res["right_by_regret"] == 1, (res["share"], res["right_by_regret"])


def test_plan_command_caches_the_adaptive_estimate(tmp_path, monkeypatch, capsys):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**read_config_file(PAPER_MAIN), "grid": TINY["grid"]}))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["plan", str(path), "--adaptive-seeds", "1"]) == 0
    first = capsys.readouterr().out
    assert "adaptive sweep" in first and list((tmp_path / "cache" / "isocompute" / "plan").glob("adaptive-*.json"))
    monkeypatch.setattr(plan, "adaptive_estimate", lambda *a, **k: pytest.fail("replayed despite the cache"))
    assert main(["plan", str(path), "--adaptive-seeds", "1"]) == 0
    assert capsys.readouterr().out == first
    assert main(["plan", str(path), "--no-adaptive"]) == 0
    assert "adaptive sweep" not in capsys.readouterr().out
    assert main(["plan", str(path), "--adaptive-seeds", "0"]) == 2
    assert "--adaptive-seeds: expected an integer >= 1" in capsys.readouterr().err
