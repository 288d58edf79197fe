"""What the analysis may say about n* (analysis/frontier/claims.py), and the intervals it rests on."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.analysis.fits.synthetic import EvalNoise, crossover_params, synthetic_study
from isocompute.analysis.frontier.bootstrap import frontier_reward_band
from isocompute.analysis.frontier.claims import (FALLS, NO_EFFECT, NOT_ESTABLISHED, RISES, direction, law_established,
                                                 n_star_claim)
from isocompute.analysis.frontier.recommend import recommend
from isocompute.analysis.pipeline import run_analysis
from isocompute.schedule import compute_schedule_steps

NS = (8, 16, 32, 64, 128)
C_MAX = 2.0 ** 21


def test_n_star_claim_follows_the_band():
    assert n_star_claim(8, 4, 16) == (True, "n* = 8 [4, 16]")
    assert n_star_claim(8, 2, 64) == (False, "undetermined: [2, 64]")
    assert n_star_claim(8, np.nan, np.nan) == (False, "n* = 8 (no interval)")
    assert n_star_claim(8, 8, 8, no_effect=True) == (False, "undetermined: no effect of n detected [8, 8]")


def _bands(lo_first, hi_first, lo_last, hi_last, comparable_from=1):
    # row 0 lies below where every run has data (comparable False by default)
    f = pd.DataFrame({"compute": [1.0, 2.0, 4.0, 8.0], "n_star_lo": [1.0, lo_first, 8, lo_last],
                      "n_star_hi": [1.0, hi_first, 16, hi_last]})
    f["comparable"] = f.index >= comparable_from
    return f


def test_direction_needs_disjoint_bands_where_every_run_can_enter():
    assert direction(_bands(8, 16, 32, 64)) == RISES
    assert direction(_bands(32, 64, 8, 16)) == FALLS
    assert direction(_bands(8, 32, 32, 64)) == NOT_ESTABLISHED
    assert direction(_bands(8, 16, 8, 16)) == NOT_ESTABLISHED
    # counted from where only the small n had data (row 0: n* = 1 by default), it would "rise"
    assert direction(_bands(8, 16, 8, 16, comparable_from=0)) == RISES
    assert direction(_bands(8, 16, 32, 64), no_effect=True) == NO_EFFECT
    assert law_established({"claim": RISES}) and not law_established({"claim": NOT_ESTABLISHED})
    assert law_established({})          # tables from before the claims


def _study(params, seed=0):
    steps = lambda B, M: compute_schedule_steps(B, M, 41, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    return synthetic_study((32,), NS, c_max=C_MAX, eval_steps=steps, params=params,
                           noise=EvalNoise(problems=60, seed=seed))


@pytest.fixture(scope="module")
def identical():
    """Three seeds of identical curves. The common-curve F-test is a 5% test: a seed may reject it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [run_analysis(_study(lambda B_p, n: crossover_params(B_p, 32), seed=s), AnalysisSettings(bootstrap=30))
                for s in range(3)]


def _kept_common(results):
    kept = [r for r in results if (r["fits"]["model"] == "common").all()]
    assert len(kept) >= 2
    return kept


def test_identical_curves_are_undetermined_and_no_law_rises(identical):
    for res in _kept_common(identical):
        front, law = res["frontier"], res["n_star_fit"].iloc[0]
        assert not front["determined"].any()
        assert front["claim"].str.startswith("undetermined").all()
        assert law["claim"] == NO_EFFECT and not law_established(law)
        end = front.iloc[-1]
        assert (end["n_star_lo"], end["n_star_hi"]) == (NS[0], NS[-1])     # every n is optimal
        truth = sigmoid_reward(end["compute"], **crossover_params(32, 32))
        assert end["reward_lo"] <= truth <= end["reward_hi"]
        rec = res["recommendations"]
        assert rec["n_star_claim"].str.startswith("undetermined").all()
        assert (rec["n"] == NS[0]).all()          # the smallest n in the band
        assert res["summary"]["law_claim"].tolist() == [NO_EFFECT]


def test_recommend_says_undetermined_and_why(identical):
    res = _kept_common(identical)[0]
    tables = {k: res[k] for k in ("fits", "n_star_fit", "n_star_fit_draws", "bootstrap_fits")}
    a = recommend(tables, C_MAX / 2, extrapolate=False, ci=0.95, max_extrapolation=4)
    assert a.n_star_source == "frontier" and a.n_star_claim.startswith("undetermined")
    assert any("smallest studied n in the band" in note for note in a.notes)


def test_a_real_rise_is_established():
    # the benchmark's crossover at its scale (n 8..512, C_max 2^22), 4 evaluations per doubling
    c_max, ns = 2.0 ** 22, (8, 16, 32, 64, 128, 256, 512)
    steps = lambda B, M: compute_schedule_steps(B, M, 41, min_compute=c_max / 2 ** 10, c_max=c_max)  # noqa: E731
    evals = synthetic_study((32,), ns, c_max=c_max, eval_steps=steps, params=crossover_params,
                            noise=EvalNoise(problems=60))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_analysis(evals, AnalysisSettings(bootstrap=30))
    assert (res["fits"]["model"] != "common").all()
    assert res["n_star_fit"].iloc[0]["claim"] == RISES
    assert res["frontier"]["determined"].any()


def test_frontier_band_holds_the_maximum_of_tied_runs():
    # one curve for 4 runs fitted apart: the percentile band of their maximum sits above the truth,
    # the selection-aware band holds it
    rng = np.random.default_rng(0)
    grid = np.array([1e5, 1e6])
    truth = sigmoid_reward(grid, 0.4, 0.7, 1.5, 1e5)
    rows, boot = [], []
    for n in (8, 16, 32, 64):
        A = 0.7 + 0.01 * rng.standard_normal()
        rows.append({"B_p": 32, "n": n, "R0": 0.4, "A": A, "B": 1.5, "C_mid": 1e5, "status": "ok",
                     "compute_min": 1e3, "compute_max": 1e7})
        for r in range(200):
            boot.append({**rows[-1], "replicate": r, "A": A + 0.01 * rng.standard_normal()})
    fits, boot = pd.DataFrame(rows), pd.DataFrame(boot)
    lo, hi = frontier_reward_band(boot, fits, grid, extrapolate=False)
    point = np.max([sigmoid_reward(grid, 0.4, r["A"], 1.5, 1e5) for r in rows], axis=0)
    assert np.all(lo <= point) and np.all(point <= hi)
    assert np.all(lo <= truth) and np.all(truth <= hi)


def test_cli_on_identical_curves_says_undetermined(tmp_path, capsys):
    """`isocompute analyze` and `recommend` on a table of identical curves: n* undetermined, no law drawn."""
    from isocompute.cli import main

    kept = 0
    for seed in range(3):     # the common-curve test is a 5% test: a seed may reject it
        path = tmp_path / f"evals{seed}.csv"
        _study(lambda B_p, n: crossover_params(B_p, 32), seed=seed).to_csv(path, index=False)
        out = tmp_path / f"out{seed}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["analyze", str(path), "--out", str(out), "--bootstrap", "20", "--no-figures"]) == 0
        said = capsys.readouterr().out
        summary = pd.read_csv(out / "summary.csv")
        if summary["model"].iloc[0] != "common":
            continue
        kept += 1
        assert "undetermined: no effect of n detected" in said and NO_EFFECT in said
        assert main(["recommend", "--budget", "2^20", str(out)]) == 0
        text = capsys.readouterr().out
        assert "undetermined" in text and "the smallest n studied at B_p = 32" in text
    assert kept >= 2
