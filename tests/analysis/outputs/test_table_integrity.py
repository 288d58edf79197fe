"""The analysis side never answers from broken tables: `analyze` writes a manifest of its
tables folder last, and every reader of the folder (recommend, figures, headline,
compare) refuses a file changed since, by name; a folder without one is read with a
warning and its advisor tables checked column by column (one line naming the file,
column and line); garbled CSVs and params.json are one line naming the file."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil

import pandas as pd
import pytest

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import synthetic_evals
from isocompute.analysis.outputs.folder import MANIFEST_FILE
from isocompute.analysis.pipeline import run_analysis, write_analysis
from isocompute.atomic import OUTPUT_MARK
from isocompute.cli import main

B_PS = (8, 16)


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    """results/x/analysis/easy/{evals.parquet, tables/}: a small synthetic study with a bootstrap."""
    where = tmp_path_factory.mktemp("results") / "x" / "analysis" / "easy"
    where.mkdir(parents=True)
    evals = synthetic_evals(B_ps=B_PS, ns=(4, 16, 64), points=12, noise=0.01, seed=3)
    evals.to_parquet(where / "evals.parquet")
    with pytest.warns(UserWarning):   # no problems column: one standard error for all
        write_analysis(run_analysis(evals, AnalysisSettings(bootstrap=6, grid_points=30)), where / "tables",
                       figures=False)
    return where


@pytest.fixture
def tables(analysis, tmp_path):
    """A copy of the tables folder, to break."""
    return shutil.copytree(analysis / "tables", tmp_path / "tables")


@pytest.fixture
def hand_made(tables):
    """The same tables without their manifest (an older study, or one made by hand)."""
    (tables / MANIFEST_FILE).unlink()
    return tables


def _recommend(capsys, folder, budget=1000000):
    rc = main(["recommend", str(folder), "--budget", str(budget), "--json"])
    out = capsys.readouterr()
    return rc, out


def _error(capsys, argv) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    return err[0]


def _cut(path, keep: float = 0.6, *, mid_row: bool = True) -> None:
    """`path` cut short: at `keep` of its bytes, mid-row or at the row boundary before."""
    data = path.read_bytes()
    cut = int(len(data) * keep)
    if not mid_row:
        cut = data.rindex(b"\n", 0, cut) + 1
    path.write_bytes(data[:cut])


def test_the_manifest_holds_every_table_and_changes_none(analysis):
    folder = analysis / "tables"
    manifest = json.loads((folder / MANIFEST_FILE).read_text())["files"]
    on_disk = {p.name for p in folder.iterdir()} - {MANIFEST_FILE, OUTPUT_MARK}
    assert set(manifest) == on_disk and "fits.csv" in on_disk and "params.json" in on_disk
    for name, entry in manifest.items():
        assert entry["sha256"] == hashlib.sha256((folder / name).read_bytes()).hexdigest()
        if name.endswith(".csv") and (folder / name).stat().st_size > 1:
            assert entry["rows"] == len(pd.read_csv(folder / name)), name


@pytest.mark.parametrize("name", ["fits.csv", "n_star_fit.csv", "bootstrap_fits.csv", "n_star_fit_draws.csv"])
def test_recommend_refuses_a_table_changed_since_analyze(tables, capsys, name):
    assert _recommend(capsys, tables)[0] == 0
    _cut(tables / name, mid_row=False)   # whole rows: only the manifest can tell
    line = _error(capsys, ["recommend", str(tables), "--budget", "1000000"])
    assert f"{tables / name}: changed since analyze wrote it" in line and "re-run `isocompute analyze`" in line


def test_a_table_analyze_wrote_that_is_gone_or_one_it_did_not_write(tables, capsys):
    (tables / "n_star_fit_draws.csv").unlink()
    line = _error(capsys, ["recommend", str(tables), "--budget", "1000000"])
    assert "n_star_fit_draws.csv: missing, but analyze wrote it" in line


def test_every_reader_of_the_folder_checks_it(analysis, tables, tmp_path, capsys):
    """figures, headline and compare read the same folder through the same check."""
    _cut(tables / "frontier.csv", mid_row=False)
    _cut(tables / "summary.csv", mid_row=False)
    line = _error(capsys, ["figures", "--evals", str(analysis / "evals.parquet"), "--tables", str(tables),
                           "--out", str(tmp_path / "figs")])
    assert "changed since analyze wrote it" in line and not (tmp_path / "figs").exists()
    line = _error(capsys, ["headline", f"easy={tables}", "--experiment", "x", "--out", str(tmp_path / "h.html"),
                           "--brief", str(tmp_path / "b.html"), "--tables-out", str(tmp_path / "ht")])
    assert "summary.csv: changed since analyze wrote it" in line
    results = tmp_path / "results" / "y"
    shutil.copytree(analysis, results / "analysis" / "easy", ignore=shutil.ignore_patterns("tables"))
    shutil.copytree(tables, results / "analysis" / "easy" / "tables")
    line = _error(capsys, ["compare", f"y={results}", "--splits", "easy", "--out", str(tmp_path / "cmp")])
    assert "changed since analyze wrote it" in line


def test_a_folder_without_a_manifest_is_read_with_a_warning(hand_made, capsys, caplog):
    with caplog.at_level(logging.WARNING, logger="isocompute"):
        rc, out = _recommend(capsys, hand_made)
    assert rc == 0, out.err
    assert sum(MANIFEST_FILE in r.getMessage() for r in caplog.records) == 1
    assert sorted(c["B_p"] for c in json.loads(out.out)["candidates"]) == list(B_PS)


@pytest.mark.parametrize("name", ["n_star_fit.csv", "fits.csv", "bootstrap_fits.csv", "n_star_fit_draws.csv"])
def test_a_table_cut_mid_row_is_refused_not_answered_from(hand_made, capsys, name):
    path = hand_made / name
    data = path.read_bytes()
    path.write_bytes(data[:data.rindex(b",") + 1])   # the last row stops after a comma
    line = _error(capsys, ["recommend", str(hand_made), "--budget", "1000000"])
    assert f"{path}: ends mid-row" in line


@pytest.mark.parametrize("name, column, value, said", [
    ("n_star_fit.csv", "status", "", "column 'status', line 3: expected one of"),
    ("n_star_fit.csv", "status", "cons", "column 'status', line 3: expected one of"),
    ("n_star_fit.csv", "L", "", "column 'L', line 3: missing value (status"),
    ("fits.csv", "C_mid", "0.5x", "column 'C_mid', line 4: expected a number, got '0.5x'"),
    ("fits.csv", "compute_max", "", "column 'compute_max', line 4: missing value"),
    ("fits.csv", "B_p", "8.5", "column 'B_p', line 4: expected a whole number"),
    ("bootstrap_fits.csv", "replicate", "", "column 'replicate', line 4: missing value"),
])
def test_the_columns_recommend_reads_are_checked(hand_made, capsys, name, column, value, said):
    path = hand_made / name
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[2 if name != "n_star_fit.csv" else 1, column] = value
    df.to_csv(path, index=False)
    line = _error(capsys, ["recommend", str(hand_made), "--budget", "1000000"])
    assert f"{path}: {said}" in line


def test_a_missing_column_and_a_short_replicate(hand_made, capsys):
    boot = pd.read_csv(hand_made / "bootstrap_fits.csv")
    boot.iloc[:-1].to_csv(hand_made / "bootstrap_fits.csv", index=False)   # a whole row less
    line = _error(capsys, ["recommend", str(hand_made), "--budget", "1000000"])
    assert "bootstrap_fits.csv: replicate" in line and "cut short?" in line
    pd.read_csv(hand_made / "n_star_fit.csv").drop(columns="c0").to_csv(hand_made / "n_star_fit.csv", index=False)
    line = _error(capsys, ["recommend", str(hand_made), "--budget", "1000000"])
    assert "n_star_fit.csv: no column 'c0'" in line


@pytest.mark.parametrize("garble", [b'B_p,n\n1,2\n"3,4\n', b"B_p,n\n1,2,3,4\n", b"\xff\xfe\x00B\x00_\x00p\n"])
def test_a_garbled_csv_is_one_line_naming_it(hand_made, capsys, garble):
    (hand_made / "fits.csv").write_bytes(garble)
    line = _error(capsys, ["recommend", str(hand_made), "--budget", "1000000"])
    assert str(hand_made / "fits.csv") in line


def test_binary_bytes_in_a_table_analyze_wrote_are_one_line(tables, capsys):
    # With a manifest the changed file is said to be changed (its rows then, and that it is no CSV
    # text now: no UnicodeDecodeError from counting them); without one, not a readable CSV table.
    (tables / "fits.csv").write_bytes(bytes(range(256)) * 4 + b"\n")   # ends a row: not refused as cut short
    line = _error(capsys, ["recommend", str(tables), "--budget", "1000000"])
    assert f"{tables / 'fits.csv'}: changed since analyze wrote it" in line and "not CSV text now" in line
    (tables / MANIFEST_FILE).unlink()
    line = _error(capsys, ["recommend", str(tables), "--budget", "1000000"])
    assert f"{tables / 'fits.csv'}: not a readable CSV table" in line


@pytest.mark.parametrize("garble", ['{"ci": 0.95', '["a"]', '{"ci": "most"}', '{"fit_grid": {"x": 1}}'])
def test_a_garbled_params_json_is_one_line_naming_it(hand_made, capsys, garble):
    (hand_made / "params.json").write_text(garble)
    line = _error(capsys, ["recommend", str(hand_made), "--budget", "1000000"])
    assert str(hand_made / "params.json") in line


def test_a_flat_fit_has_no_rise_or_midpoint_and_is_read(hand_made, capsys):
    # A flat curve (status 'flat': A = R0) leaves B and C_mid empty, as the fits write it;
    # the same holes in an 'ok' row are refused.
    path = hand_made / "fits.csv"
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[2, ["status", "A", "B", "C_mid"]] = ["flat", df.loc[2, "R0"], "", ""]
    df.to_csv(path, index=False)
    rc, out = _recommend(capsys, hand_made)
    assert rc == 0, out.err
    df.loc[2, "status"] = "ok"
    df.to_csv(path, index=False)
    line = _error(capsys, ["recommend", str(hand_made), "--budget", "1000000"])
    assert f"{path}: column 'B', line 4: missing value (status 'ok')" in line
