"""`isocompute analyze` end to end: CSV, parquet and verl JSONL in; malformed
input out with exit status 2 and nothing written."""

import json

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import synthetic_evals
from isocompute.analysis.inputs.read import parse_verl_jsonl
from isocompute.analysis.pipeline import run_analysis, write_analysis
from isocompute.atomic import OUTPUT_MARK
from isocompute.cli import main

OPTIONS = ["--metric", "--bin-width", "--ema", "--min-compute", "--grid-points", "--bootstrap", "--seed",
           "--extrapolate-fraction", "--train-table", "--bp", "--n", "--out", "--data-source", "--split"]


@pytest.fixture(scope="module")
def evals():
    return synthetic_evals(B_ps=(32, 64), ns=(8, 16, 32), points=40, noise=0.005, seed=1)


@pytest.fixture
def csv(tmp_path, evals):
    path = tmp_path / "evals.csv"
    evals.to_csv(path, index=False)
    return path


def _leftovers(parent):
    return [p.name for p in parent.iterdir() if p.name.startswith(".")]


def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for option in OPTIONS:
        assert option in text
    assert "meta.json" in text and "records.csv" in text


def test_csv_end_to_end_with_figures(tmp_path, csv):
    out = tmp_path / "analysis"
    assert main(["analyze", str(csv), "--out", str(out), "--bootstrap", "8", "--grid-points", "30"]) == 0
    for name in ("records.csv", "fits.csv", "frontier.csv", "n_star_fit.csv", "extrapolation.csv",
                 "frontier_fixed_batch.csv", "frontier_joint.csv", "optima.csv", "frontier_metrics.csv",
                 "sensitivity.csv", "params.json", "frontier_tokens.csv", "n_star_fit_tokens.csv"):
        assert (out / name).is_file(), name
    fits = pd.read_csv(out / "fits.csv")
    assert fits.columns[:9].tolist() == ["B_p", "n", "R0", "A", "B", "C_mid", "sse", "n_points", "status"]
    assert len(fits) == 6 and (fits["status"] == "ok").all()
    records = pd.read_csv(out / "records.csv")
    assert {"B_p", "n", "step", "compute", "avg@4", "bin"} <= set(records.columns)
    frontier = pd.read_csv(out / "frontier.csv")
    assert frontier.columns[:4].tolist() == ["B_p", "compute", "n_star", "reward"]
    assert len(frontier) == 60
    law = pd.read_csv(out / "n_star_fit.csv")
    assert {"B_p", "L", "U", "k", "c0", "L_lo", "L_hi", "U_lo", "U_hi", "k_lo", "k_hi", "c0_lo",
            "c0_hi"} <= set(law.columns)
    assert json.loads((out / "params.json").read_text())["bootstrap"] == 8
    # The n* law with compute in tokens, fitted to the tokens frontier's running average.
    law_tok = pd.read_csv(out / "n_star_fit_tokens.csv")
    assert {"B_p", "L", "U", "k", "c0", "status"} <= set(law_tok.columns) and len(law_tok) == 2
    assert "log2_n_star_avg" in pd.read_csv(out / "frontier_tokens.csv").columns
    figures = {p.name for p in (out / "figures").iterdir()}
    for stem in ("fig5_record_points", "fig6_frontier", "fig7_n_star", "fig8_metric_optima", "fig9_fixed_batch",
                 "fig10_sensitivity", "appendix_frontiers_fixed_bp", "appendix_tokens_frontier",
                 "appendix_n_star_laws_tokens", "appendix_best_worst_frontiers"):
        assert {f"{stem}.png", f"{stem}.pdf"} <= figures, stem
    assert _leftovers(tmp_path) == []


def test_parquet_tables_only_with_train_table(tmp_path, evals):
    path = tmp_path / "evals.parquet"
    evals.to_parquet(path)
    rng = np.random.default_rng(0)
    train = evals[evals["step"] > 0][["B_p", "n", "step", "compute"]].copy()
    train = train.loc[train.index.repeat(3)].assign(problem_id=np.tile([0, 1, 2], len(train)))
    train["pass_rate"] = rng.random(len(train))
    train.to_csv(tmp_path / "train.csv", index=False)
    out = tmp_path / "out"
    rc = main(["analyze", str(path), "--out", str(out), "--bootstrap", "0", "--no-figures",
               "--train-table", str(tmp_path / "train.csv"), "--ema", "0.5"])
    assert rc == 0
    assert not (out / "figures").exists()
    hist = pd.read_csv(out / "interference.csv")
    assert set(hist["n"]) == {8, 16, 32} and (hist.groupby(["B_p", "n"])["count"].sum() == 3).all()
    assert "smoothed" in pd.read_csv(out / "records.csv").columns


def _verl_lines(values, *, sources=("math",), length=500.0):
    """A verl file-logger log: validation every 2 steps, training metrics every step."""
    lines = []
    for step, value in enumerate(values):
        data = {}
        if step > 0:
            data.update({"response_length/mean": length, "actor/pg_loss": 0.1, "training/global_step": step})
        if step % 2 == 0:
            for ds in sources:
                data.update({f"val-core/{ds}/reward/mean@4": value, f"val-aux/{ds}/reward/std@4": 0.1,
                             f"val-core/{ds}/reward/best@4/mean": min(1.0, value + 0.2),
                             f"val-aux/{ds}/reward/worst@4/mean": value / 2,
                             f"val-aux/{ds}/reward/best@4/std": 0.01})
        lines.append(json.dumps({"step": step, "data": data}))
    return lines


def test_parse_verl_jsonl():
    values = np.linspace(0.3, 0.7, 9)
    df = parse_verl_jsonl(_verl_lines(values), B_p=4, n=8)
    assert df.columns.tolist() == ["B_p", "n", "step", "compute", "avg@4", "tokens"]
    assert df["step"].tolist() == [0, 2, 4, 6, 8]
    assert df["compute"].tolist() == [0, 64, 128, 192, 256]
    assert df["avg@4"].tolist() == pytest.approx(values[::2])
    assert df["tokens"].tolist() == [0, 2 * 500 * 32, 4 * 500 * 32, 6 * 500 * 32, 8 * 500 * 32]
    both = parse_verl_jsonl(_verl_lines(values), B_p=4, n=8, verl_best_worst=True)
    assert {"best@4", "worst@4"} <= set(both.columns)


def test_jsonl_with_sidecar_and_with_flags(tmp_path):
    values = 0.3 + 0.4 * (1 - np.exp(-np.arange(61) / 15.0))
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(_verl_lines(values)) + "\n")
    out = tmp_path / "a"
    assert main(["analyze", str(log), "--out", str(out), "--bootstrap", "0", "--no-figures"]) == 2
    assert not out.exists()
    (tmp_path / "run.jsonl.meta.json").write_text(json.dumps({"B_p": 16, "n": 8}))
    assert main(["analyze", str(log), "--out", str(out), "--bootstrap", "0", "--no-figures"]) == 0
    fits = pd.read_csv(out / "fits.csv")
    assert fits[["B_p", "n"]].values.tolist() == [[16, 8]] and fits["status"].iloc[0] == "ok"
    out2 = tmp_path / "b"
    assert main(["analyze", str(log), "--bp", "32", "--n", "4", "--out", str(out2), "--bootstrap", "0",
                 "--no-figures"]) == 0
    assert pd.read_csv(out2 / "fits.csv")[["B_p", "n"]].values.tolist() == [[32, 4]]


def test_jsonl_with_several_data_sources_needs_a_choice(tmp_path, capsys):
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(_verl_lines(np.linspace(0.3, 0.6, 21), sources=("math", "aime24"))))
    out = tmp_path / "out"
    assert main(["analyze", str(log), "--bp", "4", "--n", "8", "--out", str(out), "--no-figures"]) == 2
    assert "--data-source" in capsys.readouterr().err
    assert main(["analyze", str(log), "--bp", "4", "--n", "8", "--data-source", "aime24", "--out", str(out),
                 "--bootstrap", "0", "--no-figures"]) == 0


def _break(evals, how):
    df = evals.copy()
    if how == "missing column":
        return df.drop(columns="avg@4"), "avg@4"
    if how == "nan":
        df.loc[5, "compute"] = np.nan
        return df, "compute"
    if how == "negative compute":
        df.loc[5, "compute"] = -1.0
        return df, "compute"
    if how == "duplicate":
        return pd.concat([df, df.iloc[[3]]], ignore_index=True), "step"
    if how == "non-numeric":
        df["n"] = df["n"].astype(object)
        df.loc[2, "n"] = "eight"
        return df, "'n'"
    if how == "metric out of range":
        df.loc[4, "avg@4"] = 1.5
        return df, "avg@4"
    raise ValueError(how)


@pytest.mark.parametrize("how", ["missing column", "nan", "negative compute", "duplicate", "non-numeric",
                                 "metric out of range"])
def test_malformed_table_exits_2_and_writes_nothing(tmp_path, evals, capsys, how):
    broken, column = _break(evals, how)
    path = tmp_path / "evals.csv"
    broken.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["analyze", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("isocompute analyze: error:")
    assert column in err
    assert not out.exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize("name, content", [("evals.parquet", b"not a parquet file"), ("evals.csv", None),
                                           ("evals.txt", b"B_p,n\n")])
def test_unreadable_or_missing_file_exits_2(tmp_path, capsys, name, content):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    out = tmp_path / "out"
    assert main(["analyze", str(path), "--out", str(out)]) == 2
    assert str(path) in capsys.readouterr().err
    assert not out.exists()


def test_failure_leaves_an_existing_output_untouched(tmp_path, evals, csv):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("old")
    (out / OUTPUT_MARK).write_text("")  # an earlier output of the tool's (a foreign folder is refused)
    broken, _ = _break(evals, "nan")
    bad = tmp_path / "bad.csv"
    broken.to_csv(bad, index=False)
    assert main(["analyze", str(bad), "--out", str(out)]) == 2
    assert (out / "keep.txt").read_text() == "old"
    assert main(["analyze", str(csv), "--out", str(out), "--bootstrap", "0", "--no-figures"]) == 0
    assert not (out / "keep.txt").exists() and (out / "fits.csv").is_file()
    assert _leftovers(tmp_path) == []


def test_library_entry_points(tmp_path, evals):
    results = run_analysis(evals, AnalysisSettings(bootstrap=0, grid_points=20))
    assert {"records", "fits", "frontier", "n_star_fit", "extrapolation", "optima", "sensitivity"} <= set(results)
    assert results["settings"] == AnalysisSettings(bootstrap=0, grid_points=20) and results["split"] is None
    assert all(isinstance(v, pd.DataFrame) for k, v in results.items() if k not in ("settings", "split"))
    written = write_analysis(results, tmp_path / "lib", figures=False)
    assert (tmp_path / "lib" / "fits.csv") in written
    assert (tmp_path / "lib" / "fits.csv").is_file()


def test_split_column_needs_a_choice(tmp_path, evals, capsys):
    both = pd.concat([evals.assign(split="easy"), evals.assign(split="hard")], ignore_index=True)
    path = tmp_path / "evals.csv"
    both.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["analyze", str(path), "--out", str(out), "--no-figures"]) == 2
    assert "split" in capsys.readouterr().err
    assert main(["analyze", str(path), "--out", str(out), "--split", "hard", "--bootstrap", "0",
                 "--no-figures"]) == 0


def test_params_missing_a_key_is_one_line_naming_it(tmp_path, csv, capsys):
    # --params is a job's config: a section without the key the analysis reads is refused by name,
    # not answered with a default or a KeyError traceback.
    out = tmp_path / "out"
    assert main(["analyze", str(csv), "--out", str(out), "--params", '{"analysis": {}}']) == 2
    err = capsys.readouterr().err.strip()
    assert "config key 'analysis." in err and "was not given" in err and "\n" not in err
    assert not out.exists()


def test_an_evaluation_the_grader_left_undecided_is_refused_naming_run_and_step(tmp_path, evals, capsys):
    """grading.max_timeout_share: an evaluation with a larger share of timed-out samples (scored
    as wrong, not decided) stops the analysis with one line naming the run, step and share."""
    from isocompute.analysis.inputs.check import check_timeout_shares

    table = evals.assign(problems=100, samples=4, timeouts=0)
    table["run"] = "bp" + table["B_p"].astype(str) + "_n" + table["n"].astype(str)
    at = table.index[(table["B_p"] == 64) & (table["n"] == 16)][5]
    table.loc[at, "timeouts"] = 4  # 1% of 400 samples: at the default share, not above it
    check_timeout_shares(table, 0.01)
    table.loc[at, "timeouts"] = 5
    path = tmp_path / "evals.parquet"
    table.to_parquet(path)
    out = tmp_path / "out"
    assert main(["analyze", str(path), "--out", str(out), "--no-figures", "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err.strip()
    step = table.loc[at, "step"]
    assert len(err.splitlines()) == 1 and f"run bp64_n16 step {step}: 5 of 400 graded pairs timed out" in err
    assert "grading.max_timeout_share = 0.01" in err and not out.exists()
    check_timeout_shares(table, 0.02)  # a looser share lets it through
    check_timeout_shares(table.drop(columns="timeouts"), 0.0)  # tables from before the column: no check
