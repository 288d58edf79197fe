"""`isocompute design PILOT` end to end on a tiny finished study (a simulated evaluation table with two
seeds per cell, analysed by the analysis pipeline and written as `isocompute analyze` writes it), and
the pilots it refuses, with one line naming what is missing."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.pipeline import run_analysis, write_analysis
from isocompute.cli import main
from isocompute.design.power import Design, simulate


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """results/<experiment>/analysis of a tiny study: easy, B_p 8, n 2-8, C_max 2^13, 2 seeds per cell."""
    root = tmp_path_factory.mktemp("tiny") / "analysis"
    evals = simulate(Design("tiny", B_p=(8,), n=(2, 4, 8), c_max=2.0 ** 13, problems=200, seeds=2), "rise", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = run_analysis(evals, AnalysisSettings(bootstrap=10))
    write_analysis(results, root / "easy" / "tables", figures=False)
    evals.to_parquet(root / "easy" / "evals.parquet")
    return root


def test_design_prints_assurance_false_claims_and_cost(study, tmp_path, capsys):
    out = tmp_path / "design.csv"
    assert main(["design", str(study), "--designs", "pilot", "C=2^14 val=400", "--draws", "2",
                 "--bootstrap", "10", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    head = next(line for line in printed.out.splitlines() if line.startswith("design "))
    for column in ("rises", "n* det", "U", "raw r/d/U", "false", "cost"):
        assert column in head
    assert printed.out.splitlines()[1].startswith("assurance recalibrated")      # the maps, named
    assert "run-to-run sd" in printed.out and "measured from" in printed.out     # two seeds per cell
    assert "easy B_p 8 n 2-8 C 2^13 val 200 x2/dbl seeds 2" in printed.out.splitlines()[0]   # the pilot's design
    assert "simulated studies" in printed.err                                   # the progress bar
    table = pd.read_csv(out)
    assert list(table["design"]) == ["pilot", "C=2^14 val=400"]
    for rate in ("rises", "determined", "U", "rises_raw", "determined_raw", "U_raw", "false_claim", "truth_rises"):
        assert table[rate].between(0, 1).all()
    assert (table["rises_n"] == 2).all() and (table["false_claim_n"] == 2).all()
    assert (table["cost"] > 0).all() and (table["cost_unit"] == "CPU-h").all()
    assert table["cost"].iloc[1] > table["cost"].iloc[0]
    studies = pd.read_csv(tmp_path / "design_studies.csv")
    assert len(studies) == 8 and set(studies["kind"]) == {"assurance", "fitted_null"}


def test_a_pilot_without_bootstrap_fits_is_refused_naming_the_file(study, tmp_path, capsys):
    tables = tmp_path / "analysis" / "easy" / "tables"
    tables.mkdir(parents=True)
    (tables / "fits.csv").write_text((study / "easy" / "tables" / "fits.csv").read_text())
    assert main(["design", str(tmp_path / "analysis"), "--draws", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"isocompute design: error: {tables / 'bootstrap_fits.csv'}: missing: run the analysis "
                       "with analysis.bootstrap > 0")


def test_a_missing_pilot_is_refused(tmp_path, capsys):
    assert main(["design", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such file or folder" in capsys.readouterr().err
