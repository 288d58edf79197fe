"""The power analysis' truth from a finished study's fits (isocompute.design.truth): the fitted
curves come back as fitted, an untrained n follows the study's trend in log2 n, the null is one
curve, and the overtaking compute of n = 8 over 4 is where the curves cross, with its interval
over bootstrap replicates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support import run_benchmark
from isocompute.analysis.fits.sigmoid import sigmoid_reward
from isocompute.design import power
from isocompute.design.truth import FittedTruth, overtake, overtake_interval

NS = (2, 4, 8, 16)


def _curve(n: int, shift: float = 0.0) -> dict:
    # A rises by 0.02 per doubling of n, C_mid doubles with n: n = 8 overtakes 4 late
    d = np.log2(n)
    return {"R0": 0.4, "A": 0.6 + 0.02 * d + shift, "B": 1.5, "C_mid": 500.0 * 2.0 ** d}


def _fits(shift: float = 0.0, status: str = "ok") -> pd.DataFrame:
    rows = [{"B_p": b, "n": n, **_curve(n, shift), "status": status} for b in (4, 16) for n in NS]
    return pd.DataFrame(rows)


@pytest.fixture
def tables(tmp_path):
    where = tmp_path / "analysis" / "easy" / "tables"          # a finished study's layout
    where.mkdir(parents=True)
    _fits().to_csv(where / "fits.csv", index=False)
    boot = pd.concat([_fits(shift=s).assign(replicate=k) for k, s in enumerate(np.linspace(-0.004, 0.004, 9))])
    boot.loc[(boot["replicate"] == 0) & (boot["n"] == 8), "A"] = 0.5     # one replicate where 8 never overtakes
    boot.to_csv(where / "bootstrap_fits.csv", index=False)
    return where


def test_fitted_truth_returns_the_fits_and_extrapolates_along_the_trend(tables):
    truth = FittedTruth.from_tables(tables)
    assert truth.params(4, 8) == pytest.approx(_curve(8))
    assert truth.params(16, 32) == pytest.approx(_curve(32))           # linear in log2 n: the trend is exact
    assert truth.params(8, 4) == pytest.approx(_curve(4))               # an untrained B_p: the nearest in log2
    null = truth.truth("null")
    assert all(null(4, n) == truth.params(4, 4) for n in (2, 8, 64))
    assert list(power.true_n_star("easy", [1e1, 1e9], truth.params, 4, ns=NS)) == [2, 16]
    with pytest.raises(ValueError, match="unknown truth kind"):
        truth.truth("sideways")


def test_fitted_truth_says_which_file_is_missing_or_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="fits.csv"):
        FittedTruth.from_tables(tmp_path)
    _fits().drop(columns="C_mid").to_csv(tmp_path / "fits.csv", index=False)
    with pytest.raises(ValueError, match="'C_mid'"):
        FittedTruth.from_tables(tmp_path)
    _fits(status="failed").to_csv(tmp_path / "fits.csv", index=False)
    with pytest.raises(ValueError, match="no usable fit"):
        FittedTruth.from_tables(tmp_path)


def test_overtake_is_where_the_curves_cross_for_good():
    low, high = _curve(4), _curve(8)
    at = overtake(low, high)
    assert sigmoid_reward(at * 1.01, **high) > sigmoid_reward(at * 1.01, **low)
    assert sigmoid_reward(at / 1.01, **high) < sigmoid_reward(at / 1.01, **low)
    assert overtake(high, low) == np.inf                                  # a lower asymptote never stays ahead
    assert overtake(low, {**low, "A": low["A"] + 0.01}) == 0.0            # ahead from the start


def test_overtake_interval_counts_the_replicates_that_never_overtake(tables):
    boot = pd.read_csv(tables / "bootstrap_fits.csv")
    iv = overtake_interval(boot, 4, 4, 8)
    point = np.log2(overtake(_curve(4), _curve(8)))
    assert iv["replicates"] == 9 and iv["never"] == pytest.approx(1 / 9)
    assert iv["log2_lo"] <= point <= iv["log2_median"] + 1e-9 and iv["log2_hi"] == np.inf
    assert overtake_interval(boot, 32, 4, 8)["replicates"] == 0


def test_a_flat_fit_is_a_constant_curve_and_its_replicates_count(tables):
    """The fits' usable statuses are the analysis' own (ok and flat): a replicate whose n = 4 never
    rose (flat: A = R0, no B or midpoint) has n = 8 ahead from the start, and is counted."""
    boot = pd.read_csv(tables / "bootstrap_fits.csv")
    flat = boot["replicate"].isin([3, 5]) & (boot["n"] == 4) & (boot["B_p"] == 4)
    boot.loc[flat, ["A", "B", "C_mid", "status"]] = [0.4, np.nan, np.nan, "flat"]
    iv = overtake_interval(boot, 4, 4, 8)
    assert iv["replicates"] == 9 and iv["never"] == pytest.approx(1 / 9) and iv["log2_lo"] == 0.0
    assert overtake({"R0": 0.4, "A": 0.4, "B": np.nan, "C_mid": np.nan}, _curve(8)) == 0.0


@pytest.mark.slow   # runs a benchmark
def test_power_table_judges_designs_on_the_fitted_truth_too(tables, tmp_path):
    """benchmarks/power_nstar.py, run as a user runs it, on the fitted truth of a finished study."""
    analysis = tables.parent.parent
    out = tmp_path / "power.csv"
    proc = run_benchmark("power_nstar.py", "--designs", "E1", "--seeds", "1", "--bootstrap", "10",
                         "--truth-from", str(analysis), "--out", str(out))
    table = pd.read_csv(out)
    assert list(table["truth"]) == ["fitted", "hand-made"]
    assert table["beyond4"].between(0, 1).all() and (table["beyond4"] <= table["power"]).all()
    text = proc.stdout
    assert "easy B_p 8: n = 8 overtakes 4 at" not in text and "easy B_p 4: n = 8 overtakes 4 at 2^" in text
    assert "power beyond n = 4" in text
    proc = run_benchmark("power_nstar.py", "--truth-from", str(tmp_path / "nowhere"), returncode=2)
    assert "--truth-from" in proc.stderr
