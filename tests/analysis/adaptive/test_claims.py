"""summary.csv's claims and the n*(C) law, sweep against grid against truth (issue 52, item 7):
the truth's own claims on a null and a crossover truth, identical studies agreeing, and one
replayed study end to end."""

from __future__ import annotations

import numpy as np
import pytest

from isocompute.analysis.adaptive.claims import (CLAIMS, PAIRS, VALUES, claim_category, claims_summary,
                                                 compare_claims, truth_claims)
from isocompute.analysis.adaptive.replay import replay
from isocompute.analysis.adaptive.scoring import study
from isocompute.analysis.adaptive.strata import B_PS, C_MAX, SPAN_DOUBLINGS, draw_truth
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.frontier.claims import NO_EFFECT, RISES, n_star_claim

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")   # Gaussian tables: one error for all evaluations


def test_a_null_truth_claims_no_effect_and_no_rise():
    truth = draw_truth("null", 0)
    summ = truth_claims(truth, study(truth, 0, 0), AnalysisSettings())["summary"]
    assert list(summ["B_p"]) == list(B_PS)
    assert (summ["law_claim"] == NO_EFFECT).all() and (summ["model"] == "common").all()
    assert summ["n_star_claim"].str.startswith("undetermined: no effect").all()


def test_a_crossover_truth_claims_a_rise():
    truth = draw_truth("early", 0)
    out = truth_claims(truth, study(truth, 0, 0), AnalysisSettings())
    summ, laws = out["summary"], out["laws"]
    assert (summ["law_claim"] == RISES).all() and (summ["model"] == "runs").all()
    assert summ["n_star_claim"].map(lambda t: claim_category("n_star_claim", t) == "determined").all()
    assert (laws["U"] > laws["L"]).all() and laws["status"].isin(["ok"]).all()
    front = out["frontier"]
    assert front["compute"].min() == pytest.approx(C_MAX / 2 ** SPAN_DOUBLINGS) and front["compute"].max() <= C_MAX


def test_claim_categories_read_the_claims_texts():
    assert claim_category("n_star_claim", n_star_claim(64, 32, 128)[1]) == "determined"
    assert claim_category("n_star_claim", n_star_claim(64, 8, 512)[1]) == "undetermined"
    assert claim_category("n_star_claim", n_star_claim(64, 8, 512, no_effect=True)[1]) == "no effect"
    assert claim_category("n_star_claim", n_star_claim(64, np.nan, np.nan)[1]) == "no interval"
    assert claim_category("law_claim", RISES) == "rises" and claim_category("law_claim", NO_EFFECT) == "no effect"
    assert claim_category("n_effect", "common") == "no effect" and claim_category("n_effect", "trend") == "effect"
    assert claim_category("law_claim", None) == "missing"


def test_identical_studies_make_the_same_claims():
    truth = draw_truth("mid", 0)
    evals = study(truth, 0, 0)
    out = compare_claims(truth, evals, evals, resamples=4)
    assert not out["claims"]["sweep_vs_grid_differs"].any()
    assert (out["claims"]["sweep"] == out["claims"]["grid"]).all()
    diff = out["values"]["sweep_minus_grid"].to_numpy()
    assert np.all((diff == 0) | np.isnan(diff))


def test_a_replayed_study_end_to_end():
    truth = draw_truth("early", 1000)
    evals = study(truth, 1000, 0)
    res = replay(evals, c_max=C_MAX, params=None, probes=np.geomspace(C_MAX / 2 ** SPAN_DOUBLINGS, C_MAX, 20),
                 eval_rollouts=1200)
    out = compare_claims(truth, evals, res["evals"], resamples=4)
    claims, values = out["claims"], out["values"]
    assert len(claims) == len(B_PS) * len(CLAIMS) and len(values) == len(B_PS) * len(VALUES)
    assert set(claims["claim"]) == set(CLAIMS) and set(values["value"]) == set(VALUES)
    for a, b in PAIRS:
        flags = claims[f"{a}_vs_{b}_differs"]
        assert flags.dtype == bool
        assert (flags == (claims[f"{a}_category"] != claims[f"{b}_category"])).all()
    assert not claims[[f"{s}_category" for s in ("grid", "sweep", "truth")]].isin(["missing"]).any().any()
    top = values[values["value"].isin(["log2_n_star", "reward"])]
    assert np.isfinite(top[["grid", "sweep", "truth"]].to_numpy()).all()
    law = values[values["value"].isin(["L", "U"])]
    assert np.isfinite(law["truth"]).all()
    assert out["seconds"] > 0 and set(out["summaries"]) == {"grid", "sweep", "truth"}
    summ = claims_summary(claims.assign(stratum="early"))
    assert list(summ["stratum"]) == ["early"] and summ["claims"].iloc[0] == len(claims)
    for a, b in PAIRS:
        name = f"{a}_vs_{b}"
        assert summ[f"{name}_lo"].iloc[0] <= summ[name].iloc[0] <= summ[f"{name}_hi"].iloc[0]
    per_claim = claims_summary(claims.assign(stratum="early"), by=("stratum", "claim"))
    assert len(per_claim) == len(CLAIMS) and (per_claim["claims"] == len(B_PS)).all()
