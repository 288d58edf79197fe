"""The GPU-hour plan (`isocompute plan`): runs, rollouts and GPU-hours of the
paper configs, the adaptive sweep's expected cost, and the numbers docs/cluster.md quotes.
"""

from __future__ import annotations

import os
import re
import subprocess

import pandas as pd
import pytest
import yaml

from isocompute.cli import main
from isocompute.cluster import adaptive_cost
from isocompute.analysis.adaptive.strata import STRATA
from isocompute.cluster.adaptive_cost import PLAN_REPLAY_SEEDS, adaptive_estimate, sweep_costs, synthetic_split_study
from isocompute.cluster.plan import UnitCosts, cell_costs, segment_seconds, split_summary
from isocompute.cluster.plan_report import approx, format_plan
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
    summary = split_summary(costs)
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
    # ~88 h: two SLURM attempts of 48 h, each paying the job's start-up and checkpointing
    # (cluster.throughput.job_overhead_s).
    assert row["attempts"] == 2 and cfg["cluster"]["throughput"]["job_overhead_s"] == 300
    assert row["gpu_hours"] == pytest.approx(8 * (64 * step_h + evals * 300 * 4 / (6000 * 8) + 2 * 300 / 3600))
    text = format_plan(cfg)
    assert "70 training runs" in text and "6,000 rollouts per GPU-hour" in text and "300 s per job" in text


def test_a_run_pays_a_start_up_per_slurm_attempt():
    """The longest run (easy bp32_n8, 16,384 steps: ~362 h) takes 8 attempts of 48 h, each paying the start-up."""
    cfg = load_config(PAPER_MAIN)
    costs = cell_costs(cfg)
    row = costs[(costs.split == "easy") & (costs.B_p == 32) & (costs.n == 8)].iloc[0]
    free = load_config(PAPER_MAIN, {"cluster": {"throughput": {"job_overhead_s": 0}}})
    bare = cell_costs(free).set_index(["split", "B_p", "n"]).loc[("easy", 32, 8)]
    assert row["attempts"] == 8 == split_summary(costs).loc["easy", "attempts_of_longest"]
    assert row["wall_hours"] - bare["wall_hours"] == pytest.approx(8 * 300 / 3600)
    with pytest.raises(ValueError, match="job_overhead_s"):
        segment_seconds(cfg, find_cell(grid_cells(cfg), "easy", 32, 8), 0, 10,
                        UnitCosts(per_step=1.0, per_rollout=0.0, per_val_sample=0.0, per_job=48 * 3600.0))


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
        total = split_summary(costs).loc["total"]
        assert f"{int(total['runs'])} runs" in doc and f"{total['gpu_hours']:,.0f}" in doc, path.name


TINY = {"grid": {"easy": {"B_p": [32], "n": [8, 64, 512], "B_max": 65536, "C_max": 4194304}},
        "cluster": {"throughput": {"rollouts_per_gpu_hour": 6000, "step_overhead_s": 0}}}


def _tiny(**throughput):
    cfg = load_config(PAPER_MAIN)
    cfg["grid"] = TINY["grid"]
    cfg["cluster"]["throughput"].update(TINY["cluster"]["throughput"], **throughput)
    return cfg


@pytest.fixture(scope="module")
def tiny_estimate():
    return adaptive_estimate(_tiny(), seeds=1)


def test_plan_replays_at_least_three_draws_per_stratum():
    assert PLAN_REPLAY_SEEDS >= 3


def test_adaptive_estimate_prices_every_rung_job(tiny_estimate):
    est, cfg = tiny_estimate, _tiny()
    frac = est["fractions"].set_index("n")[["fraction", "eval_fraction"]]
    assert set(frac.index) == {8, 64, 512} and ((frac > 0) & (frac <= 1)).all().all()
    reps, jobs, draws = est["replays"], est["jobs"], est["draws"]
    assert set(reps["split"]) == {"easy"} and set(reps["stratum"]) <= set(STRATA) and len(reps) >= 6
    assert est["failed"].empty and len(draws) == len(reps)
    # Every cell trains to the first rung; a job per cell and rung it trains, up to the last rung at C_max.
    first = jobs[jobs["rung"] == 0]
    assert len(first) == 3 * len(reps) and (first["from_compute"] == 0).all()
    assert jobs["rung"].max() <= cfg["sweep"]["rungs"] - 1 and (jobs["to_compute"] <= 4194304 * (1 + 1e-9)).all()
    # One start-up per rung job: an hour each adds 8 GPU-hours per job, and an hour of wall clock per rung.
    slow = sweep_costs(_tiny(job_overhead_s=3600), est)["draws"]
    free = sweep_costs(_tiny(job_overhead_s=0), est)["draws"]
    assert (slow["gpu_hours"] - free["gpu_hours"]).to_numpy() == pytest.approx(8.0 * free["jobs"].to_numpy())
    rungs = jobs.groupby(["stratum", "seed"], sort=False)["rung"].nunique().to_numpy()
    assert (slow["wall_hours"] - free["wall_hours"]).to_numpy() == pytest.approx(rungs.astype(float))
    assert (free["jobs"] == free["rung_jobs"]).all()       # no rung job runs past an attempt here


def test_the_sweeps_wall_clock_waits_for_each_rungs_slowest_job():
    """Two rungs: all three cells to C_max / 32, then n = 512 alone to C_max. The sweep's wall clock is
    the slowest first-rung job plus n = 512's second; on one node, every job one after the other."""
    cfg = _tiny(job_overhead_s=120)
    c0 = 4194304 / 32
    jobs = pd.DataFrame([{"split": "easy", "stratum": "mid", "seed": 0, "rung": 0, "B_p": 32, "n": n,
                          "from_compute": 0.0, "to_compute": c0} for n in (8, 64, 512)]
                        + [{"split": "easy", "stratum": "mid", "seed": 0, "rung": 1, "B_p": 32, "n": 512,
                            "from_compute": c0, "to_compute": 4194304.0}])
    cells = {c.n: c for c in grid_cells(cfg)}
    first = {n: segment_seconds(cfg, cells[n], 0, int(c0 // (32 * n)))["seconds"] for n in (8, 64, 512)}
    second = segment_seconds(cfg, cells[512], int(c0 // (32 * 512)), cells[512].M_max)["seconds"]
    est = {"jobs": jobs, "failed": pd.DataFrame()}
    priced = sweep_costs(cfg, est)
    draw = priced["draws"].iloc[0]
    assert draw["wall_hours"] == pytest.approx((max(first.values()) + second) / 3600)
    assert draw["gpu_hours"] == pytest.approx(8 * (sum(first.values()) + second) / 3600)
    assert draw["rung_jobs"] == 4
    costs = cell_costs(cfg)
    assert priced["grid"]["wall_hours"] == pytest.approx(costs["wall_hours"].max())
    one_node = sweep_costs(_tiny(job_overhead_s=120, nodes=1), est)
    assert one_node["draws"].iloc[0]["wall_hours"] == pytest.approx((sum(first.values()) + second) / 3600)
    assert one_node["grid"]["wall_hours"] == pytest.approx(costs["wall_hours"].sum())


def test_plan_prints_the_sweeps_cost_as_a_rounded_range(tiny_estimate):
    cfg = _tiny()
    text = format_plan(cfg, tiny_estimate)
    draws = sweep_costs(cfg, tiny_estimate)["draws"]
    g = draws["gpu_hours"]
    assert (f"~{approx(g.mean())} GPU-hours (draws {approx(g.min())}-{approx(g.max())}; sd {approx(g.std())})"
            in text)
    line = next(line for line in text.splitlines() if "GPU-hours (draws" in line)
    for number in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?", line.split(" over ")[0]):
        assert len(number.replace(",", "").replace(".", "").strip("0")) <= 2, (number, line)
    w = draws["wall_hours"]
    assert f"wall clock ~{approx(w.mean())} h (draws {approx(w.min())}-{approx(w.max())}" in text
    assert f"instead of the grid's ~{approx(cell_costs(cfg)['wall_hours'].max())} h" in text
    assert "whole bill" in text and "validation generations" in text and "job_overhead_s" in text
    assert "1 synthetic studies per split and stratum" in text
    per = tiny_estimate["replays"].groupby("stratum", sort=False)["share"].mean()
    assert (f"whole bill {per.min():.0%} ({per.idxmin()}) to {per.max():.0%} ({per.idxmax()}) of the grid's, "
            "by when n* moves") in text
    assert "the saving depends on the truth" in text and "not replayed" not in text


def test_approx_keeps_two_significant_figures():
    assert [approx(x) for x in (29797, 25012.3, 2549.9, 361.8, 42.0, 7.25, 0.534, 0.0)] == \
        ["30,000", "25,000", "2,500", "360", "42", "7.2", "0.53", "0"]


def test_a_stratum_not_drawn_is_named_not_dropped(monkeypatch):
    """A truth the grid cannot hold (draw_truth's RuntimeError) is named with its split, seed and
    reason; its draw is left out of the range, and says so."""
    real = adaptive_cost.synthetic_split_study

    def no_late(cfg, split, seed, stratum="mid"):
        if stratum == "late":
            raise RuntimeError("no late truth in 5000 draws")
        return real(cfg, split, seed, stratum)

    monkeypatch.setattr(adaptive_cost, "synthetic_split_study", no_late)
    cfg = _tiny()
    est = adaptive_estimate(cfg, seeds=1, workers=1)
    failed = est["failed"]
    assert failed[["split", "stratum", "seed"]].values.tolist() == [["easy", "late", 0]]
    assert "late" not in set(est["replays"]["stratum"]) and "late" not in set(est["draws"]["stratum"])
    text = format_plan(cfg, est)
    assert ("stratum late not replayed for split easy (seed 0): no late truth in 5000 draws; its draw is left out "
            "of the GPU-hours and wall clock") in text
    # Nothing replayed at all: still named, never silent.
    monkeypatch.setattr(adaptive_cost, "synthetic_split_study",
                        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("too small")))
    est = adaptive_estimate(cfg, seeds=1, workers=1)
    assert est["replays"].empty and len(est["failed"]) == len(STRATA)
    text = format_plan(cfg, est)
    assert "adaptive sweep: not estimated" in text and "stratum null not replayed for split easy (seed 0): too small" in text


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
    monkeypatch.setattr(adaptive_cost, "adaptive_estimate", lambda *a, **k: pytest.fail("replayed despite the cache"))
    assert main(["plan", str(path), "--adaptive-seeds", "1"]) == 0
    assert capsys.readouterr().out == first
    assert main(["plan", str(path), "--no-adaptive"]) == 0
    assert "adaptive sweep" not in capsys.readouterr().out
    assert main(["plan", str(path), "--adaptive-seeds", "0"]) == 2
    assert "--adaptive-seeds: expected an integer >= 1" in capsys.readouterr().err
