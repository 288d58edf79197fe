"""`isocompute recommend`, the allocation advisor: on an analysis of a synthetic
study (known curves with a crossover) its n*, B_p, M and reward agree with the
law, draws and frontier tables it was computed from; extrapolation is stated,
refused beyond the factor and allowed on request; bad input stops in one line."""

import json
from functools import partial

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import CrossoverTruth, EvalNoise, crossover_params, synthetic_study
from isocompute.analysis.frontier.nstar import n_star_sigmoid
from isocompute.analysis.frontier.recommend import default_budgets, recommend, snap_n
from isocompute.analysis.pipeline import run_analysis, write_analysis
from isocompute.cli import main
from isocompute.schedule import compute_schedule_steps

C_MAX = 2.0 ** 18
N_BOOT = 40
B_PS, NS = (8, 16, 32), (4, 8, 16, 32, 64)


def _study(params=partial(crossover_params, truth=CrossoverTruth(c_mid_ref=2e3)), seed=1):
    steps = partial(compute_schedule_steps, points=13, c_max=C_MAX)
    evals = synthetic_study(B_PS, NS, c_max=C_MAX, eval_steps=lambda B, M: steps(B, M), params=params,
                            noise=EvalNoise(problems=300, seed=seed))
    return evals.assign(split="easy")


def _analyse(path, evals, n_boot=N_BOOT):
    results = run_analysis(evals, AnalysisSettings(bootstrap=n_boot, grid_points=40))
    write_analysis(results, path, figures=False)
    return results


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A study's analysis folder as the pipeline lays it out: <root>/easy/tables."""
    root = tmp_path_factory.mktemp("analysis")
    results = _analyse(root / "easy" / "tables", _study())
    return root, root / "easy" / "tables", results


def _advise(capsys, *args):
    rc = main(["recommend", *map(str, args), "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def _error(capsys, *args):
    rc = main(["recommend", *map(str, args)])
    out = capsys.readouterr()
    assert rc == 2 and out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("isocompute recommend: error: ")
    return lines[0]


def test_the_analysis_keeps_the_replicates_behind_its_intervals(study):
    _, tables, results = study
    for name in ("bootstrap_fits.csv", "n_star_fit_draws.csv", "recommendations.csv"):
        assert (tables / name).is_file(), name
    draws = pd.read_csv(tables / "n_star_fit_draws.csv")
    laws = pd.read_csv(tables / "n_star_fit.csv")
    assert draws.groupby("B_p")["replicate"].nunique().to_dict() == {B_p: N_BOOT for B_p in B_PS}
    for _, law in laws.iterrows():
        good = draws[(draws["B_p"] == law["B_p"]) & draws["status"].isin(["ok", "constant"])]
        assert len(good) == law["n_boot"]
        for p in ("L", "U", "k", "c0"):   # n_star_fit.csv's intervals are percentiles of these draws
            assert np.isclose(np.percentile(good[p], 2.5), law[f"{p}_lo"])
            assert np.isclose(np.percentile(good[p], 97.5), law[f"{p}_hi"])
    boot = pd.read_csv(tables / "bootstrap_fits.csv")
    assert len(boot) == N_BOOT * len(B_PS) * len(NS)


def test_advice_agrees_with_the_law_and_the_frontier(study, capsys):
    root, tables, _ = study
    frontier = pd.read_csv(tables / "frontier.csv")
    laws = pd.read_csv(tables / "n_star_fit.csv").set_index("B_p")
    draws = pd.read_csv(tables / "n_star_fit_draws.csv")
    for C in (C_MAX, float(frontier.loc[frontier["B_p"] == 8, "compute"].iloc[30])):
        _check_advice(_advise(capsys, root, "--budget", repr(C)), C, frontier, laws, draws)


def _check_advice(a, C, frontier, laws, draws):
    assert a["split"] == "easy" and a["direction"] == "inside" and a["extrapolation"] == 1.0
    # Each candidate's frontier and band at C are frontier.csv's where C is on that B_p's grid.
    on_grid = 0
    for c in a["candidates"]:
        rows = frontier[(frontier["B_p"] == c["B_p"]) & np.isclose(frontier["compute"], C, rtol=1e-12)]
        on_grid += len(rows)
        for col, name in (("reward", "reward"), ("reward_lo", "reward_lo"), ("reward_hi", "reward_hi"),
                          ("frontier_n_star", "n_star")):
            for value in rows[name]:
                assert c[col] == pytest.approx(value, rel=1e-9, abs=1e-12), (c["B_p"], col)
    assert on_grid >= 1
    best = max(a["candidates"], key=lambda c: c["reward"])
    assert best["best"] and best["gap_lo"] == 0
    chosen = min(c["B_p"] for c in a["candidates"] if c["within"])
    assert a["B_p"] == chosen and "smallest B_p" in a["B_p_rule"]
    assert all(c["within"] == (c["best"] or c["gap_lo"] <= 0) for c in a["candidates"])
    pick = next(c for c in a["candidates"] if c["B_p"] == a["B_p"])
    assert (a["reward"], a["reward_lo"], a["reward_hi"]) == (pick["reward"], pick["reward_lo"], pick["reward_hi"])
    assert a["reward_lo"] <= a["reward"] <= a["reward_hi"]
    # n* is the chosen B_p's law at C; its interval the percentiles of its replicates' laws at C.
    law = laws.loc[a["B_p"]]
    assert a["n_star"] == pytest.approx(2 ** n_star_sigmoid(np.log10(C), law["L"], law["U"], law["k"], law["c0"]))
    good = draws[(draws["B_p"] == a["B_p"]) & draws["status"].isin(["ok", "constant"])]
    at_c = 2 ** n_star_sigmoid(np.log10(C), good["L"], good["U"], good["k"], good["c0"])
    assert (a["n_star_lo"], a["n_star_hi"]) == pytest.approx((np.percentile(at_c, 2.5), np.percentile(at_c, 97.5)))
    assert a["n_grid"] == list(NS) and a["n"] == snap_n(a["n_star"], NS)
    assert abs(np.log2(a["n"]) - np.log2(a["n_star"])) <= 0.5 + 1e-9
    assert a["M"] == np.floor(C / (a["B_p"] * a["n"]) + 0.5) and a["compute_used"] == a["B_p"] * a["n"] * a["M"]


def test_smallest_b_p_is_skipped_when_clearly_below_the_best(tmp_path, capsys):
    def params(B_p, n):
        p = crossover_params(B_p, n, CrossoverTruth(c_mid_ref=2e3))
        return {**p, "A": p["A"] - (0.08 if B_p == 8 else 0.0)}     # B_p = 8 plateaus 0.08 lower

    _analyse(tmp_path, _study(params))
    a = _advise(capsys, tmp_path, "--budget", C_MAX)
    by_bp = {c["B_p"]: c for c in a["candidates"]}
    assert not by_bp[8]["within"] and by_bp[8]["gap_lo"] > 0
    assert a["B_p"] == min(B_p for B_p, c in by_bp.items() if c["within"]) > 8


def test_the_report_table_is_the_command_at_its_budgets(study, capsys):
    root, tables, _ = study
    table = pd.read_csv(tables / "recommendations.csv")
    fits = pd.read_csv(tables / "fits.csv")
    lo, hi = fits["compute_min"].min(), fits["compute_max"].max()
    assert table["budget"].tolist() == default_budgets(lo, hi, max_extrapolation=4)
    assert table["budget"].iloc[-1] == 4 * hi and table["extrapolation"].iloc[-1] == pytest.approx(4)
    assert (table["direction"].iloc[:-1] == "inside").all()
    for _, row in table.iterrows():
        a = _advise(capsys, root, "--budget", repr(row["budget"]))
        for col in ("B_p", "n", "M", "n_star", "n_star_lo", "n_star_hi", "reward", "reward_lo", "reward_hi"):
            assert a[col] == pytest.approx(row[col], rel=1e-9), col


def test_text_output_says_what_and_why(study, capsys):
    root, _, _ = study
    assert main(["recommend", "--budget", "2^16", str(root)]) == 0
    text = capsys.readouterr().out
    for phrase in ("C = 65,536 rollouts", "split easy", "inside it", "B_p = ", "smallest B_p", "n*(C) = ",
                   "snapped to the nearest n studied", "M = ", "rounded to whole steps", "reward "):
        assert phrase in text, phrase


def test_extrapolation_is_stated_refused_beyond_the_factor_and_allowed_on_request(study, capsys):
    root, tables, _ = study
    a = _advise(capsys, root, "--budget", 2 * C_MAX)
    assert (a["direction"], a["extrapolation"]) == ("above", 2.0)
    assert any("2x above the studied compute range" in note for note in a["notes"])
    assert a["reward_lo"] <= a["reward"] <= a["reward_hi"]
    lo = pd.read_csv(tables / "fits.csv")["compute_min"].min()
    assert _advise(capsys, root, "--budget", lo / 3)["direction"] == "below"
    line = _error(capsys, root, "--budget", 8 * C_MAX)
    assert "8x above the studied compute range" in line and "--allow-extrapolation" in line
    assert "below" in _error(capsys, root, "--budget", lo / 5)
    assert _advise(capsys, root, "--budget", 8 * C_MAX, "--allow-extrapolation")["extrapolation"] == 8.0
    assert _advise(capsys, root, "--budget", 8 * C_MAX, "--max-extrapolation", "10")["direction"] == "above"
    assert "--max-extrapolation" in _error(capsys, root, "--budget", C_MAX, "--max-extrapolation", "0.5")


@pytest.mark.parametrize("budget", ["abc", "-1", "0", "inf", "nan", ""])
def test_a_budget_that_is_not_a_positive_number(study, capsys, budget):
    line = _error(capsys, study[0], "--budget", budget)
    assert "--budget: expected a positive number of rollouts" in line and repr(budget) in line


def test_a_folder_without_fits_and_a_split_not_studied(study, tmp_path, capsys):
    root, tables, _ = study
    assert "no fits here" in _error(capsys, tmp_path, "--budget", 1000)
    assert "no such analysis directory" in _error(capsys, tmp_path / "missing", "--budget", 1000)
    line = _error(capsys, root, "--budget", 1000, "--split", "hard")
    assert "split 'hard' was not studied" in line and "easy" in line
    assert "split 'hard' was not studied" in _error(capsys, tables, "--budget", 1000, "--split", "hard")
    assert _advise(capsys, tables, "--budget", 1000, "--split", "easy")["split"] == "easy"
    assert _advise(capsys, root / "easy", "--budget", 1000)["split"] == "easy"
    (tmp_path / "hard" / "tables").mkdir(parents=True)
    (tmp_path / "hard" / "tables" / "fits.csv").write_text("")
    (tmp_path / "easy").symlink_to(tables.parent)
    assert "several splits were studied (easy, hard)" in _error(capsys, tmp_path, "--budget", 1000)
    assert "no fits" in _error(capsys, tmp_path, "--budget", 1000, "--split", "hard")


def test_without_a_bootstrap_the_advice_says_it_has_no_intervals(tmp_path, study):
    evals = _study()
    results = run_analysis(evals, AnalysisSettings(bootstrap=0, grid_points=40))
    a = recommend(results, C_MAX, extrapolate=False, ci=0.95, max_extrapolation=4)
    assert np.isnan(a.n_star_lo) and np.isnan(a.reward_lo)
    assert a.B_p == max(a.candidates, key=lambda c: c["reward"])["B_p"] and "no bootstrap" in a.B_p_rule
    assert any("n* has no interval" in note for note in a.notes)
    assert a.as_dict()["n_star_lo"] is None


def test_a_law_with_nan_parameters_is_refused_by_name():
    from isocompute.errors import InputError

    fits = pd.DataFrame({"B_p": [8, 8], "n": [2, 4], "R0": 0.4, "A": [0.6, 0.65], "B": 1.5, "C_mid": [1e3, 2e3],
                         "status": "ok", "compute_min": 16.0, "compute_max": 8192.0})
    laws = pd.DataFrame({"B_p": [8], "L": [np.nan], "U": [2.0], "k": [1.0], "c0": [3.0], "status": ["ok"]})
    with pytest.raises(InputError, match="n_star_fit.csv.*non-finite"):
        recommend({"fits": fits, "n_star_fit": laws}, 4096, extrapolate=False, ci=0.95, max_extrapolation=4)
