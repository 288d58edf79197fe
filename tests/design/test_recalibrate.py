"""The recalibration of a simulated assurance (isocompute.design.recalibrate): a map fitted on rows
drawn from a known map finds it within its bootstrap interval; one fitted where the raw shares are
already calibrated is near the identity (nothing happens where nothing is wrong); the map keeps
order and keeps 0 of N and N of N finite; a map that would reverse the order is refused; the
tool's table carries the raw share beside the recalibrated one, its interval mapped alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from isocompute.design.assurance import summarise
from isocompute.design.chain import rate
from isocompute.design.power import Design
from isocompute.design.recalibrate import IDENTITY, Recalibration, fit, fit_map
from isocompute.design.reliability import repredicted

STUDIES = 20


def _rows(a: float, b: float, pilots: int = 300, seed: int = 1) -> pd.DataFrame:
    """Rows of a reliability study whose outcomes follow expit(a + b logit(raw)): raw shares k / 20."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, STUDIES + 1, size=pilots) / STUDIES
    edge = 1 / (2 * STUDIES + 2)
    q = expit(a + b * logit(np.clip(raw, edge, 1 - edge)))
    return pd.DataFrame({"truth_seed": np.arange(pilots), "claim": "determined", "predicted": raw,
                         "successes": (rng.random(pilots) < q).astype(int), "outcomes": 1, "studies": STUDIES})


@pytest.mark.parametrize("a, b", [(-0.6, 0.6), (0.0, 1.0), (0.8, 1.5)],
                         ids=["over-confident", "calibrated", "under-confident"])
def test_the_maps_intervals_cover_known_maps(a, b):
    """Over 40 reliability studies drawn from a known map (the calibrated one: nothing to correct), the
    bootstrap interval of each of a and b holds it about 95% of the time."""
    got = pd.concat([fit(_rows(a, b, pilots=150, seed=s), column="predicted", boot=100, seed=s) for s in range(40)])
    for name, truth in (("a", a), ("b", b)):
        covered = ((got[f"{name}_lo"] <= truth) & (truth <= got[f"{name}_hi"])).mean()
        assert covered >= 0.85, f"{name}: {covered:.2f}"
    assert abs(got["a"].mean() - a) < 0.1 and abs(got["b"].mean() - b) < 0.1


def test_over_confident_shares_are_told_apart():
    assert fit(_rows(-0.6, 0.6, pilots=300), column="predicted", boot=100).iloc[0]["b_hi"] < 1.0


def test_the_map_keeps_order_and_the_ends_finite():
    maps = Recalibration({"determined": (-0.5, 0.7)}, "hand-made")
    p = np.linspace(0, 1, STUDIES + 1)
    q = maps("determined", p, STUDIES)
    assert np.all(np.diff(q) > 0) and 0 < q[0] and q[-1] < 1
    assert maps("rises", 0.3, STUDIES) == 0.3              # a claim without a map passes through
    assert np.isnan(maps("determined", np.nan, STUDIES))
    assert IDENTITY("determined", 0.95, STUDIES) == 0.95


def test_a_map_that_reverses_the_order_is_refused():
    rows = _rows(0.0, 1.0, pilots=100)
    with pytest.raises(ValueError, match="no increasing map"):
        fit_map(rows["predicted"], 1 - rows["successes"], rows["outcomes"], rows["studies"])


def test_rows_are_judged_under_a_map_from_their_raw_shares():
    rows = _rows(0.0, 1.0, pilots=5).assign(predicted_raw=lambda f: f["predicted"], predicted=0.5)
    raw = repredicted(rows)
    assert list(raw["predicted"]) == list(rows["predicted_raw"])
    maps = Recalibration({"determined": (-1.0, 1.0)}, "hand-made")
    assert list(repredicted(rows, maps)["predicted"]) == pytest.approx(
        [maps("determined", p, STUDIES) for p in rows["predicted_raw"]])


def test_the_table_carries_raw_and_recalibrated_assurance():
    d = Design("pilot", B_p=(8,), n=(2, 4), c_max=2.0 ** 10, problems=100, per_doubling=2, seeds=1)
    runs = [{"kind": "assurance", "rises": float(i < 19), "falls": 0.0, "determined": 1.0, "U": 0.0,
             "truth_rises": 1.0} for i in range(STUDIES)]
    maps = Recalibration({"determined": (-1.0, 0.8)}, "hand-made")
    row = summarise(d, runs, {"cost": 1.0}, maps, STUDIES)
    assert row["determined_raw"] == 1.0 and row["determined"] == pytest.approx(maps("determined", 1.0, STUDIES))
    assert row["determined_lo"] == pytest.approx(maps("determined", rate([1.0] * STUDIES)[2], STUDIES))
    assert row["rises"] == row["rises_raw"] == 0.95       # no map for rises: unchanged

