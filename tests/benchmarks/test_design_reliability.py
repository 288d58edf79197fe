"""benchmarks/bench_design_reliability.py in its quick mode, run as a user runs it: one synthetic pilot
per shape, each candidate's predicted assurance against its outcome on the known truth, printed as
the reliability table (every claim x bin), the pooled calibration and the verdict."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from support import run_benchmark
from isocompute.design.assurance import CLAIMS
from isocompute.design.reliability import BINS, SHAPES

pytestmark = pytest.mark.slow   # runs a benchmark


def test_quick_prints_the_reliability_table_of_every_shape(tmp_path):
    out = run_benchmark("bench_design_reliability.py", "--quick", "--jobs", "1",
                        "--out", str(tmp_path / "r.csv")).stdout
    rows = pd.read_csv(tmp_path / "r.csv", keep_default_na=False, na_values=[""])   # "null" is a shape
    assert sorted(rows["shape"].unique()) == sorted(SHAPES) and rows["truth_seed"].nunique() == len(SHAPES)
    took = rows[rows["refused"].isna()]
    assert took["successes"].isin([0, 1]).all() and took["outcomes"].eq(1).all()
    assert took["predicted_raw"].isin([0.0, 0.5, 1.0]).all()                    # --quick: 2 draws
    assert not took["predicted"].isin([0.0, 0.5, 1.0]).all()                    # printed: recalibrated
    # two tables: as the tool printed its assurance (recalibrated), and the raw shares
    assert "# As the tool printed it" in out and "# Raw: the share of the simulated studies" in out
    lines = re.findall(r"^\| (rises|determined|U) \| \[[\d.]+, [\d.]+[)\]] \| (\d+) \|", out, flags=re.M)
    assert len(lines) == 2 * len(CLAIMS) * (len(BINS) - 1), out
    for claim in CLAIMS:
        assert sum(int(n) for c, n in lines if c == claim) == 2 * (took["claim"] == claim).sum()
    assert re.search(rf"pilots refused by the tool \(or with no truth drawn\): \d+ of {len(SHAPES)}", out), out
    assert "judged bins (>= 20 designs): 0 of 15" in out                      # too few designs to judge any
    # rows of two runs judged together, one written before the raw share was kept beside the printed one
    rows.drop(columns=["predicted_raw"]).assign(predicted=rows["predicted_raw"]).to_csv(tmp_path / "old.csv",
                                                                                          index=False)
    both = run_benchmark("bench_design_reliability.py", "--from-rows",
                         f"{tmp_path / 'r.csv'},{tmp_path / 'old.csv'}", "--bar", "5").stdout
    assert re.search(r"latent within-pilot correlation 0\.49 \(rho 0\.7\): passes the bar in [\d.]+ of studies", both)
    raw = both[both.index("# Raw"):]
    lines = re.findall(r"^\| (rises|determined|U) \| \[[\d.]+, [\d.]+[)\]] \| (\d+) \|", raw, flags=re.M)
    assert sum(int(n) for c, n in lines[:len(BINS) - 1]) == 2 * (took["claim"] == "rises").sum(), raw
    # under given maps, the bar is read for the predictions those maps print, not the rows' own
    given = run_benchmark("bench_design_reliability.py", "--from-rows", str(tmp_path / "r.csv"),
                          "--maps", "rises:0:1:1", "--bar", "5").stdout
    assert given.index("# Under assurance recalibrated") < given.index("with these predictions (under the given maps")


def test_the_null_diagnosis_prints_what_the_pilot_reads_as_noise():
    out = run_benchmark("bench_design_null.py", "--seeds", "3005", "--outcomes", "1", "--jobs", "1").stdout
    row = re.search(r"^\| 3005 \| ([\d.]+) \| ([\d.]+) \| (\d+) \| 5 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| "
                    r"([\d.]+) \| ([\d.]+) \| 1 \|", out, flags=re.M)
    assert row, out
    run_sd, measured, over, spread, boot_sd, pilot_determined, predicted, observed = row.groups()
    assert 0.005 <= float(run_sd) <= 0.02 and float(spread) >= 0 and float(boot_sd) >= 0
    assert pilot_determined in ("0.000", "1.000") and observed in ("0.000", "1.000")
    assert 0 <= float(predicted) <= 1
    assert re.search(r"1 null truths: predicted determined [\d.]+, observed [\d.]+ \[[\d.]+, [\d.]+\] over 1 runs",
                     out), out


def test_the_run_level_test_prints_its_level_on_null_truths_and_its_power_on_the_others():
    out = run_benchmark("bench_design_null.py", "--n-effect", "20", "--jobs", "1").stdout
    found = dict(re.findall(r"^\| (\w+) \| 20 \| ([\d.]+) \| [\d.]+ \| [\d.]+ \| [\d.]+ \|", out, flags=re.M))
    assert sorted(found) == sorted(SHAPES), out
    assert float(found["null"]) <= 0.25                  # its level, 5%: P(> 5 of 20) ~ 0.0003
    assert float(found["late"]) > float(found["null"])   # the winner ahead in the pilot's range already
    # more seeds per cell: more power on the truths where n matters (docs: 36-60% with 2, 84-92% with 8)
    out8 = run_benchmark("bench_design_null.py", "--n-effect", "20", "--jobs", "1", "--pilot-seeds", "8").stdout
    found8 = dict(re.findall(r"^\| (\w+) \| 20 \| ([\d.]+) \| [\d.]+ \| [\d.]+ \| [\d.]+ \|", out8, flags=re.M))
    assert sorted(found8) == sorted(SHAPES), out8
    assert sum(float(found8[s]) for s in SHAPES if s != "null") > sum(float(found[s]) for s in SHAPES if s != "null")


def test_the_pilot_and_its_candidates_take_the_seeds_asked_for(tmp_path):
    out = run_benchmark("bench_design_reliability.py", "--quick", "--shapes", "null", "--pilot-seeds", "3",
                        "--jobs", "1", "--out", str(tmp_path / "r.csv")).stdout
    assert "x2/dbl seeds 3, analysed with" in out
    rows = pd.read_csv(tmp_path / "r.csv", keep_default_na=False, na_values=[""])
    assert rows["describe"].str.endswith("seeds 3").all() and rows["design"].nunique() == 4
