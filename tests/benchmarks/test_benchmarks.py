"""Every benchmark's --quick mode, run as a user runs it (a subprocess, this checkout's
src/ first), so that none breaks unseen: it exits 0, prints its table, and its numbers
hold what they must whatever the machine's speed (a rate within [0, 1] and inside its
interval, a count equal to what was asked, the known answer of a case where the truth
is trivial). The GPU check's parts have their own tests (test_gpu_check.py), and so has
the TRL comparison (test_bench_grpo.py: its local half always, TRL given a venv with it).
A test reads what a benchmark ran from what it prints and writes, or gives it on the command
line; it imports no benchmark (tests/project/test_architecture.py keeps it so)."""

from __future__ import annotations

import itertools
import json
import re
import shutil

import pandas as pd
import pytest
import yaml

from support import REPO, make_study_dir, seed_study
from support import run_benchmark as run_script

pytestmark = pytest.mark.slow   # each runs a benchmark (run_benchmark refuses otherwise)


def run_benchmark(script: str, *args: str, returncode: int = 0, timeout: float = 600) -> str:
    """stdout of `benchmarks/<script> args`, which must exit with `returncode` (support.run_benchmark)."""
    return run_script(script, *args, returncode=returncode, timeout=timeout).stdout


def test_adaptive_replay_quick_spends_less_than_the_grid_it_replays(tmp_path):
    out = run_benchmark("bench_adaptive_replay.py", "--quick", "--out", str(tmp_path / "stops.csv"))
    grid = re.search(r"^B_p = \d+, n = ([\d, ]+), C_max = 2\^(\d+), ", out, flags=re.M)   # the grid it replays
    assert grid, out
    NS, C_MAX = [int(n) for n in grid.group(1).split(", ")], 2.0 ** int(grid.group(2))
    assert re.search(r"^\s+mean\s+min\s+max$", out, flags=re.M), out
    rows = {m.group(1): [float(v) / 100 for v in m.groups()[1:]]
            for m in re.finditer(r"^(whole bill / full grid|training rollouts / grid|validation / grid|"
                                 r"same n\* at probe budgets|n\* in the grid's n\* band)\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%$",
                                 out, flags=re.M)}
    assert len(rows) == 5, out
    for mean, lo, hi in rows.values():
        assert 0 <= lo <= mean <= hi <= 1
    assert "done-when (4 per doubling, sigma 0.013, crossover; same n* within the full grid's own n* band): " in out
    stops = pd.read_csv(tmp_path / "stops.csv")
    assert sorted(stops["seed"].unique()) == [0, 1]                 # the 2 studies of --quick
    for _, runs in stops.groupby("seed"):
        assert sorted(runs["n"]) == NS                              # every run of the grid, once
    assert (stops["spent"] <= stops["full_compute"]).all() and (stops["stopped_at"] <= C_MAX * (1 + 1e-9)).all()
    assert (stops["evaluations_spent"] <= stops["evaluations_full"]).all()
    # the printed shares are the runs' bill as they stopped over the full grid's: training rollouts, and
    # with them the validation generations (1,200 per evaluation)
    bill = lambda r, t, v: r[t].sum() + r[v].sum()  # noqa: E731
    shares = stops.groupby("seed").apply(lambda r: r["spent"].sum() / r["full_compute"].sum(), include_groups=False)
    assert shares.mean() == pytest.approx(rows["training rollouts / grid"][0], abs=6e-4)
    whole = stops.groupby("seed").apply(lambda r: bill(r, "spent", "validation_spent")
                                        / bill(r, "full_compute", "validation_full"), include_groups=False)
    assert whole.mean() == pytest.approx(rows["whole bill / full grid"][0], abs=6e-4)
    assert (stops["validation_full"] == 1200 * stops["evaluations_full"]).all()


def test_adaptive_strata_quick_judges_every_stratum_by_regret(tmp_path):
    from isocompute.analysis.adaptive.intervals import wilson
    from isocompute.analysis.adaptive.strata import STRATA

    out = run_benchmark("bench_adaptive_strata.py", "--quick", "--bootstrap", "10", "--out", str(tmp_path / "s.csv"))
    studies = pd.read_csv(tmp_path / "s.csv", keep_default_na=False, na_values=[""])   # "null" is a stratum
    assert sorted(studies["stratum"].unique()) == sorted(STRATA)
    assert (studies.groupby("stratum").size() == 2).all()          # --quick: 2 truths x 1 noise seed
    assert ((studies["oracle"] > 0) & (studies["oracle"] <= studies["bill"] + 1e-9)).all()   # a floor
    assert ((studies["wrong"] >= 0) & (studies["wrong"] <= studies["probes"])).all()
    # judged where the sweep acts: probes at or above the first rung (C_max / 32 of C_max / 2^10..C_max)
    assert (studies["acting_probes"] == 2 * 10).all() and (studies["cmax_probes"] == 2).all()
    assert (studies["wrong_acting"] <= studies["wrong"]).all() and (studies["wrong_cmax"] <= studies["wrong_acting"]).all()
    assert ((studies["bad_stops"] >= 0) & (studies["bad_stops"] <= studies["model_stops"])).all()
    assert studies["model_stops"].sum() > 0                     # the model stops runs, and each stop is judged
    assert ((studies["outside_band"] >= 0) & (studies["outside_band"] <= studies["probes"])).all()
    # replay caps a run's spend at the grid's, so "bill <= 100%" cannot fail, and on a null every n
    # is right, so "0% wrong" cannot either: the sweep is judged by what it saves instead. Averaged
    # over the strata it spends well under the grid (47% at these seeds) and above the oracle's
    # floor; where nothing happens (the null) it stops runs too, every study under the grid's bill.
    assert studies["oracle"].mean() < studies["bill"].mean() < 0.75, studies.groupby("stratum")["bill"].mean()
    null = studies[studies["stratum"] == "null"]
    assert len(null) == 2 and (null["bill"] < 0.9).all(), null["bill"]
    for stratum in STRATA:
        assert re.search(rf"^{stratum}\s+wrong [\d.]+% \[[\d.]+%, [\d.]+%\] \(grid [\d.]+%; sweep - grid "
                         rf"[-+][\d.]+ points \[[-+][\d.]+, [-+][\d.]+\]\), bill [\d.]+% \(max", out, re.M), out
    assert "bill averaged over the strata" in out and "highest stratum bill" in out
    # the relative bar read off the rows just written, with its error rate
    bar = run_benchmark("bench_adaptive_strata.py", "--bar", str(tmp_path / "s.csv"))
    assert re.search(rf"strata over 1 point: \d+ of {len(STRATA)}; smallest p_over x strata", bar), bar
    assert re.search(r"a sweep 0\.0 points worse than the grid in every stratum fails the bar in [\d.]+ of", bar), bar
    lo, hi = wilson(0, 40)
    assert lo == 0 and hi == pytest.approx(0.0876, abs=1e-3)     # the Wilson interval's known value
    lo, hi = wilson(5, 10)
    assert lo < 0.5 < hi and lo == pytest.approx(1 - hi)


def test_analysis_quick_runs_the_cli_chain_on_every_run(tmp_path):
    points = 30                                                 # --quick's, given explicitly
    out = run_benchmark("bench_analysis.py", "--quick", "--points", str(points), "--keep", str(tmp_path))
    evals = pd.read_csv(tmp_path / "evals.csv")                 # the table it wrote and analysed
    cells = set(zip(evals["B_p"], evals["n"]))
    assert cells == set(itertools.product(evals["B_p"].unique(), evals["n"].unique()))   # a full grid
    assert (evals["B_p"].nunique(), evals["n"].nunique()) == (2, 4)                      # --quick: 2 B_p x 4 n
    assert evals.groupby(["B_p", "n"]).size().eq(points).all()
    runs = len(cells)
    assert f"table: {runs} runs x {points} evaluation points = {runs * points} rows" in out
    assert re.search(r"^phase\s+seconds$", out, flags=re.M), out
    phases = set(re.findall(r"^([a-z][a-z +()]*?)\s+[\d.]+$", out, flags=re.M))
    assert {"fits", "bootstrap fits", "figures", "total (wall)"} <= phases, phases
    fits = pd.read_csv(tmp_path / "analysis" / "fits.csv")
    assert set(zip(fits["B_p"], fits["n"])) == cells
    assert (fits["status"] == "ok").all(), fits[["B_p", "n", "status"]]
    figures = int(re.search(r"^(\d+) figure files", out, flags=re.M).group(1))
    assert figures > 0 and figures == len(list((tmp_path / "analysis" / "figures").iterdir()))
    assert "no target (quick)" in out


@pytest.mark.engine  # verl's trainer and Ray (tests/conftest.py: the engine tests)
def test_backends_agree_quick_trains_both_backends_on_the_same_problems(tmp_path, tiny_stages):
    """Two local runs and one verl session (minutes) on the session's tiny study, whose data
    stages are the benchmark's (`--study`; without it the benchmark builds them itself). (verl
    0.9.1 patches trl's value-head model whenever trl is importable and fails on trl 1.16: the
    project's venv must not hold trl, which is why the TRL benchmark takes a venv of its own.)"""
    # the experiment whose data it reads from --study (results/tinyverl), and --quick's sizes, given explicitly
    experiment, quick = "tinyverl", {"bp": 2, "n": 2, "steps": 2, "val_problems": 8, "samples": 4}
    study = seed_study(make_study_dir(tmp_path / "study"), tiny_stages, experiment)
    report = tmp_path / "runs.json"
    sizes = [a for k, v in quick.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    out = run_benchmark("bench_backends_agree.py", "--quick", *sizes, "--study", str(study), "--work", str(tmp_path),
                        "--out", str(report), timeout=1800)
    assert not (study / "data_stages.log").exists()     # it trained on the seeded data, built none of its own
    for part in ("(1) loss terms", "(2) step-0 validation", "(3) training reward per step",
                 "(4) learning rate of the first updates"):
        assert part in out, out
    got = json.loads(report.read_text())
    # The same learning rate at every update (verl's logged rate is the next update's), and update 1
    # moves the policy on both backends (the benchmark exits 1 otherwise: run_benchmark checks it).
    for r, check in zip(got["runs"], got["schedule"]):
        assert check["lr_ok"] and check["update_1_moved"], (r["backend"], check)
    assert {int(k) for k in got["schedule"][-1]["update_lr"]} == set(range(2, quick["steps"] + 2))
    assert [(r["backend"], r["seed"]) for r in got["runs"]] == [("local", 0), ("local", 1), ("verl", 0)]
    for r in got["runs"]:
        assert len(r["rewards"]) == quick["steps"] and all(0 <= x <= 1 for x in r["rewards"]), r["rewards"]
        assert r["B"] == quick["bp"] * quick["n"]
        step0 = r["step0"]  # every validation problem, with eval.samples samples each
        assert step0["problems"] == quick["val_problems"], (r["backend"], step0["problems"])
        assert step0["samples"] == quick["val_problems"] * quick["samples"]
        assert 0 <= step0["avg"] <= 1
    problems = [set(r["step0"]["per_problem"]) for r in got["runs"]]
    assert all(p == problems[0] for p in problems)                  # the same validation file
    losses = got["losses"]
    assert all(v <= losses["tolerance"] for d in losses["max_abs_diff"].values() for v in d.values()), losses


def _rates(table: pd.DataFrame) -> list[str]:
    """The 0/1 rate columns of bench_coverage's table (those with a count and an interval)."""
    return [c for c in table.columns if f"{c}_n" in table.columns and f"{c}_lo" in table.columns]


def test_coverage_quick_rates_are_rates_and_a_null_truth_has_every_n_right(tmp_path):
    out = run_benchmark("bench_coverage.py", "--quick", "--seeds", "2", "--truths", "null_3", "step",
                        "--schedules", "matched", "--out", str(tmp_path / "coverage.csv"))
    assert re.search(r"^truth\s+schedule\s+bias\s+F band", out, flags=re.M), out
    assert re.search(r"^\d+ of 2 rows fail a criterion", out, flags=re.M), out
    table = pd.read_csv(tmp_path / "coverage.csv")
    assert list(table["truth"]) == ["null_3", "step"] and (table["seeds"] == 2).all()
    assert table["schedule"].str.startswith("matched").all()
    for key in _rates(table):
        counted = table[table[f"{key}_n"] > 0]
        assert (counted[f"{key}_n"] <= 2).all(), key
        assert ((counted[f"{key}_lo"] <= counted[key]) & (counted[key] <= counted[f"{key}_hi"])).all(), key
        assert counted[key].between(0, 1).all() and counted[f"{key}_lo"].ge(0).all(), key
    null = table.set_index("truth").loc["null_3"]
    assert null["n_star_right"] == 1.0          # every n lies on the one curve: any n* is right
    assert null["L_cover_n"] == 0               # and there is no law to cover
    assert 0 <= null["false_claim"] <= 1


@pytest.mark.parametrize("truth", ["crossover", "null"])
def test_frontier_bias_quick_regret_is_never_negative_and_zero_on_the_null(tmp_path, truth):
    methods = {"paper", "noise", "per-run", "oracle"}          # the benchmark's (its docstring names them)
    out = run_benchmark("bench_frontier_bias.py", "--quick", "--truth", truth, "--out", str(tmp_path / "t.csv"))
    assert re.search(r"^method\s+schedule\s+sigma\s+evals", out, flags=re.M), out
    assert "done-when (noise method, every 10 steps, sigma 0.03): |bias|" in out
    table = pd.read_csv(tmp_path / "t.csv")
    assert set(table["method"]) == methods and table.groupby("method").size().eq(2).all()   # x 2 schedules
    assert len(table) == len(methods) * 2 and (table["seeds"] == 4).all() and (table["sigma"] == 0.03).all()
    assert table.groupby("schedule")["evals"].nunique().eq(1).all()    # every method fits the same studies
    assert table["right_n_star"].between(0, 1).all() and (table["right_min"] <= table["right_n_star"]).all()
    assert (table["regret"] >= 0).all()         # nothing beats the true frontier
    if truth == "null":                         # every n on one curve: any choice is optimal
        assert (table["right_n_star"] == 1).all() and (table["regret"] == 0).all(), table


def test_grader_adversarial_quick_grades_every_kind_as_its_policy_says(tmp_path):
    from isocompute.grading import adversarial

    out = run_benchmark("bench_grader_adversarial.py", "--quick", "--out", str(tmp_path / "calls.json"))
    assert re.search(r"^adversarial: total [\d.]+ s", out, flags=re.M), out
    got = json.loads((tmp_path / "calls.json").read_text())
    calls = got["calls"]
    assert sorted(c["kind"] for c in calls) == sorted(adversarial.KINDS)     # one of each kind
    by_kind = {c["kind"]: (c["correct"], c["reason"]) for c in calls}
    assert by_kind["control characters"] == (False, "control character")
    assert by_kind["1M characters"] == (False, "too long")
    assert by_kind["unicode digits"] == (True, "numeric")
    assert got["bound_s"] > got["timeout_s"] == 0.25
    # "\boxed{i % 1000}" against "i % 997": correct exactly where the two agree
    ordinary = got["ordinary"]
    assert ordinary["correct"] == sum(i % 1000 == i % 997 for i in range(ordinary["completions"]))
    assert f"{ordinary['correct']:,} graded correct" in out


def test_grader_load_quick_counts_every_pair_and_never_passes_a_tower(tmp_path):
    out = run_benchmark("bench_grader_load.py", "--quick", "--out", str(tmp_path / "load.json"))
    assert re.search(r"^graded 22 pairs in [\d.]+ s", out, flags=re.M), out
    got = json.loads((tmp_path / "load.json").read_text())
    assert got["pairs"] == 20 and got["towers"] == 2 and got["burners"] == 0
    assert sum(got["honest"].values()) == 20 and sum(got["towers_verdicts"].values()) == 2
    assert "correct" not in got["towers_verdicts"]  # timed out or wrong, within its budgets
    assert got["timeouts"] == got["honest"].get("timed out", 0) + got["towers_verdicts"].get("timed out", 0)


def test_check_analysis_tables_passes_on_its_own_tables_and_fails_on_a_changed_one(tmp_path):
    work = tmp_path / "synthetic"
    out = run_benchmark("check_analysis_tables.py", "synthetic", "--quick", "--reference-src", str(REPO / "src"),
                        "--work", str(work))
    (case,) = re.findall(r"^(\w+): \d+ tables compared, 0 differ$", out, flags=re.M)   # --quick: one case
    reference = work / case / "reference"
    tables = sorted(p.name for p in reference.glob("*.csv") if p.name != "timings.csv")
    assert f"total: {len(tables)} tables compared exactly, 0 differ" in out and len(tables) > 10, out

    # The study mode on a copy of the case, its settings given as a config's analysis section.
    split = tmp_path / "study" / "easy"
    split.mkdir(parents=True)
    for name in ("evals.parquet", "train_pass_rates.parquet"):
        shutil.copy(work / case / name, split / name)
    shutil.copytree(reference, split / "tables")
    options = json.loads((work / case / "analyze_options.json").read_text())   # the case's analyze options
    flags = {"--bootstrap": ("bootstrap", int), "--grid-points": ("grid_points", int), "--pool": ("pool", str),
             "--min-compute": ("min_compute", float)}
    assert set(options[::2]) == set(flags), options   # the case's options, all translated below
    analysis = {flags[k][0]: flags[k][1](v) for k, v in zip(options[::2], options[1::2])}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"analysis": analysis}))
    out = run_benchmark("check_analysis_tables.py", "study", str(split), "--config", str(config))
    assert f"easy: {len(tables)} tables compared, 0 differ" in out, out

    # One number changed in fits.csv, and a table the code no longer writes: both named, exit status 1.
    fits = (split / "tables" / "fits.csv").read_text().splitlines()
    header, first = fits[0].split(","), fits[1].split(",")
    first[header.index("A")] = repr(float(first[header.index("A")]) + 1e-6)
    (split / "tables" / "fits.csv").write_text("\n".join([fits[0], ",".join(first), *fits[2:]]) + "\n")
    shutil.copy(split / "tables" / "records.csv", split / "tables" / "dropped.csv")
    out = run_benchmark("check_analysis_tables.py", "study", str(split), "--config", str(config), returncode=1)
    assert f"easy: {len(tables) + 1} tables compared, 2 differ" in out, out
    assert re.search(r"^  fits\.csv: ", out, flags=re.M) and "  dropped.csv: missing" in out, out


def test_analyze_scale_quick_compares_two_checkouts_table_by_table(tmp_path):
    """Given the same src/ as 'before', the two runs' tables are identical, and each row says
    its rows, runs, seeds, wall and CPU seconds and peak RSS."""
    from isocompute.analysis.fits.synthetic import scale_study, scale_study_shape

    out = run_benchmark("bench_analyze_scale.py", "--quick", "--bootstrap", "4", "--before", str(REPO / "src"),
                        "--keep", str(tmp_path))
    rows = len(scale_study(2e3))       # --quick: one table of about 2,000 rows
    seeds = scale_study_shape(2e3)["seeds"]
    found = re.findall(rf"^\s+{rows}\s+(\d+)\s+{seeds}\s+(after|before)\s+([\d.]+)\s+([\d.]+)\s+(\d+)[ ]*(.*)$",
                       out, flags=re.M)
    assert [f[1] for f in found] == ["after", "before"], out
    assert found[1][5] == "identical", out
    assert all(int(f[0]) == 32 * seeds and float(f[4]) > 0 for f in found), out
    assert sorted(p.name for p in tmp_path.glob("analysis_*")) == ["analysis_2000_after", "analysis_2000_before"]
