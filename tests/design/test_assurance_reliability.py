"""The reliability of assurance (isocompute.design.reliability): predicted assurance in bins against
what the designs do on the known truths, each bin's interval over the outcomes, only bins with enough
designs judged; a pilot the tool refuses is reported, not dropped; end to end on two tiny pilots,
each outcome the real chain's verdict on a fresh study."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isocompute.design import reliability
from isocompute.design.assurance import CLAIMS
from isocompute.design.chain import rate
from isocompute.design.recalibrate import MEASURED
from isocompute.errors import InputError


def _rows(claim: str, predicted: float, designs: int, successes: int) -> list[dict]:
    return [{"truth_seed": 3000 + i, "shape": "mid", "design": "pilot", "claim": claim, "predicted": predicted,
             "successes": int(i < successes), "outcomes": 1, "truth_rises": 1.0, "refused": ""}
            for i in range(designs)]


def test_the_table_bins_predictions_and_judges_only_full_bins():
    rows = pd.DataFrame(_rows("rises", 0.1, 25, 2) + _rows("rises", 0.9, 20, 10) + _rows("rises", 0.5, 3, 3)
                        + _rows("U", 1.0, 2, 2) + _rows("determined", 0.2, 1, 0)
                        + [{"truth_seed": 3999, "shape": "null", "refused": "truth 3999: fewer than 3 usable runs"}])
    table = reliability.reliability_table(rows)
    assert list(table["claim"]) == [c for c in CLAIMS for _ in range(5)]
    assert list(table["bin"][:5]) == ["[0.0, 0.2)", "[0.2, 0.4)", "[0.4, 0.6)", "[0.6, 0.8)", "[0.8, 1.0]"]
    got = table.set_index(["claim", "bin"])
    assert list(got.loc["rises", "designs"]) == [25, 0, 3, 0, 20]        # the refused pilot is in no bin
    assert got.loc[("U", "[0.8, 1.0]"), "designs"] == 2                   # 1.0 closes the last bin
    assert got.loc[("determined", "[0.2, 0.4)"), "designs"] == 1          # a bin's lower edge is in it
    low, high = got.loc[("rises", "[0.0, 0.2)")], got.loc[("rises", "[0.8, 1.0]")]
    observed, outcomes, lo, hi = rate([1] * 2 + [0] * 23)                # Clopper-Pearson over the outcomes
    assert (low["observed"], low["outcomes"], low["lo"], low["hi"]) == pytest.approx((observed, outcomes, lo, hi))
    assert low["judged"] and low["inside"]                                # 0.10 in [0.01, 0.26]
    assert high["judged"] and not high["inside"] and high["observed"] == 0.5
    assert not got.loc[("rises", "[0.4, 0.6)"), "judged"] and got.loc[("rises", "[0.4, 0.6)"), "inside"] is None
    said = reliability.verdict(table)
    assert said.startswith("judged bins (>= 20 designs): 2 of 15; mean prediction inside the observed 95% "
                           "interval in 1")
    assert "rises [0.8, 1.0] (predicted 0.90, observed 0.50" in said
    pooled = reliability.calibration(rows).set_index("claim")
    assert pooled.loc["rises", "designs"] == 48
    # Brier score: each outcome scored against its prediction
    expect = (2 * 0.9 ** 2 + 23 * 0.1 ** 2 + 10 * 0.1 ** 2 + 10 * 0.9 ** 2 + 3 * 0.5 ** 2) / 48
    assert pooled.loc["rises", "brier"] == pytest.approx(expect)
    assert list(reliability.refusals(rows)["truth_seed"]) == [3999]
    assert "| claim | bin | designs |" in reliability.markdown(table)


def test_a_refused_pilot_is_counted_with_the_tools_reason(monkeypatch):
    def refuse(*args, **kwargs):
        raise InputError("truth 3000 (early): fewer than 3 usable runs in B_p 8")

    monkeypatch.setattr(reliability, "synthetic_pilot", refuse)
    rows = pd.DataFrame(reliability.pilot_rows((reliability.Study(pilots=1), 3000)))
    assert len(rows) == 1 and "fewer than 3 usable runs" in rows["refused"].iloc[0]
    assert reliability.refusals(rows)["shape"].tolist() == ["early"]
    assert reliability.reliability_table(rows)["designs"].sum() == 0


def test_a_study_refuses_what_it_cannot_simulate():
    for bad in ({"shapes": ("unstable",)}, {"draws": 0}, {"pilot_bootstrap": 1}, {"outcomes": 101}):
        with pytest.raises(ValueError):
            reliability.Study(**bad)
    assert reliability.Study().shape(3003) == "late" and reliability.Study().shape(3005) == "null"


def test_two_tiny_pilots_end_to_end():
    # early (3000) and mid (3001): each pilot analysed, four candidates assessed, each run once on its truth
    study = reliability.Study(pilots=2, draws=2, bootstrap=4, pilot_bootstrap=4)
    rows = reliability.run_study(study, jobs=1)
    assert (rows["refused"] == "").all(), rows["refused"]
    assert len(rows) == 2 * 4 * len(CLAIMS)
    assert set(rows["design"]) == {"pilot", "C_x4", "val_x4", "C_x4_val_x4"}
    assert rows["outcomes"].eq(1).all() and rows["successes"].isin([0, 1]).all()
    assert rows["predicted_raw"].isin([0.0, 0.5, 1.0]).all() and rows["studies"].eq(2).all()   # 2 draws each
    # what the tool prints: the raw share through the measured map of its claim
    assert rows["predicted"].tolist() == pytest.approx(
        [MEASURED(c, p, 2) for c, p in zip(rows["claim"], rows["predicted_raw"])])
    assert ((rows["run_sd"] >= 0.005) & (rows["run_sd"] <= 0.02)).all() and rows["run_sd_measured"].notna().all()
    # an outcome is the chain's verdict on a fresh study of the known truth, reproduced here
    params, run_sd, _ = reliability.known_truth("mid", 3001)
    pilot = reliability.synthetic_pilot(study.pilot, params, run_sd, 3001, study.pilot_bootstrap, "again")
    d = reliability.candidates(pilot.design)[3]
    again = reliability.outcome(d, params, run_sd, reliability.outcome_seed(3001, 3, 0), study.bootstrap)
    mine = rows[(rows["truth_seed"] == 3001) & (rows["design"] == d.name)].set_index("claim")
    assert {c: int(again[c]) for c in CLAIMS} == mine["successes"].to_dict()
    table = reliability.reliability_table(rows)
    assert len(table) == len(CLAIMS) * (len(reliability.BINS) - 1)
    assert (table.groupby("claim")["designs"].sum() == 8).all() and not table["judged"].any()
    assert np.isfinite(reliability.calibration(rows)["brier"]).all()


def test_the_pilot_bootstrap_counts_a_pilots_designs_as_one_draw():
    # 20 pilots of 4 designs each, every design of a pilot failing or succeeding together: 80 outcomes
    # but 20 independent draws, so the interval over pilots is wider than Clopper-Pearson's over outcomes
    rows = pd.DataFrame([{"truth_seed": p, "claim": "determined", "design": d, "predicted": 0.5,
                          "successes": int(p % 2 == 0), "outcomes": 1, "refused": ""}
                         for p in range(20) for d in ("pilot", "C_x4", "val_x4", "C_x4_val_x4")])
    pilots, lo, hi = reliability.pilot_interval(rows)
    _, _, cp_lo, cp_hi = rate(rows["successes"])
    assert pilots == 20 and lo <= 0.5 <= hi and hi - lo > 1.5 * (cp_hi - cp_lo)
    got = reliability.reliability_table(rows).set_index(["claim", "bin"]).loc[("determined", "[0.4, 0.6)")]
    assert (got["pilots"], got["pilots_lo"], got["pilots_hi"]) == (20, lo, hi)
