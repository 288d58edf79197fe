"""Studies side by side (config `compare`, paper Figs. 12 and 13): finished
analyses of two tiny synthetic experiments drawn in one figure, by the command
and by the rule; a missing experiment stops the workflow by name before any job."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import GrowthTruth, synthetic_evals
from isocompute.analysis.outputs.compare import check_comparisons, comparison_sources
from isocompute.analysis.pipeline import run_analysis, write_analysis
from isocompute.cli import main
from isocompute.config import check_config
from isocompute.errors import ConfigError
from support import make_study_dir, run_snakemake, write_config

SPLITS = ("easy", "hard")


@pytest.fixture(scope="module")
def analyses(tmp_path_factory) -> Path:
    """results/{a,b}/analysis/{easy,hard}/: two experiments' analyses (tables only, cheap)."""
    root = tmp_path_factory.mktemp("finished") / "results"
    for exp, scale in (("a", 2000.0), ("b", 6000.0)):
        for split in SPLITS:
            evals = synthetic_evals(B_ps=(8,), ns=(4, 16, 64), points=10, truth=GrowthTruth(c_mid_scale=scale))
            where = root / exp / "analysis" / split
            where.mkdir(parents=True)
            evals.to_parquet(where / "evals.parquet")
            with pytest.warns(UserWarning):   # no problems column: one standard error for all
                write_analysis(run_analysis(evals, AnalysisSettings(bootstrap=0)), where / "tables", figures=False)
    return root


def test_compare_command_draws_panels_and_overlay(analyses, tmp_path):
    out = tmp_path / "fig"
    assert main(["compare", "Qwen=results/a", f"Llama={analyses}/b", "--splits", *SPLITS,
                 "--out", str(out / "fig12")]) == 2   # relative to the wrong folder: rejected
    assert main(["compare", f"Qwen={analyses}/a", f"Llama={analyses}/b", "--splits", *SPLITS,
                 "--out", str(out / "fig12")]) == 0
    assert main(["compare", f"D = 6k={analyses}/a", f"D = 500={analyses}/b", "--splits", "easy",
                 "--figure", "overlay", "--bp", "8", "--out", str(out / "fig13")]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["fig12.pdf", "fig12.png", "fig13.pdf", "fig13.png"]   # nothing left behind
    assert all((out / n).stat().st_size > 1000 for n in names)


@pytest.mark.slow
def test_compare_rule_draws_the_figure_and_rejects_a_missing_experiment(analyses, tmp_path):
    workdir = make_study_dir(tmp_path / "study")
    shutil.copytree(analyses, workdir / "results")
    (workdir / "results" / "b").rename(workdir / "results" / "b=lr2")   # '=' in a label and a path
    entry = {"figure": "frontiers", "splits": list(SPLITS), "title": "base models",
             "experiments": [{"label": "Qwen", "experiment": "a"},
                             {"label": "Llama = 2", "results": "results/b=lr2"}]}
    cfg = write_config(workdir, {"experiment": "cmp", "compare": {"base_models": entry}})
    run_snakemake(workdir, "-c1", "--configfile", str(cfg))
    out = workdir / "results" / "cmp" / "compare"
    assert {p.name for p in out.iterdir()} == {"base_models.png", "base_models.pdf"}
    assert not (workdir / "results" / "cmp" / "data").exists()   # a compare-only config builds no data

    entry["experiments"].append({"label": "missing", "experiment": "gone"})
    cfg = write_config(workdir, {"experiment": "cmp", "compare": {"base_models": entry}})
    proc = run_snakemake(workdir, "-n", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    assert "compare.base_models.experiments[2] ('missing')" in proc.stderr and "'gone'" in proc.stderr


def test_compare_entries_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="compare.x.experiments"):
        check_config({"compare": {"x": {"splits": ["easy"], "experiments": [{"label": "no source"}]}}})
    with pytest.raises(ConfigError, match="compare.x.splits"):
        check_config({"compare": {"x": {"splits": [], "experiments": [{"label": "a", "experiment": "a"}]}}})
    twice = check_config({"compare": {"x": {"splits": ["easy"], "experiments": [
        {"label": "a", "experiment": "a"}, {"label": "a", "experiment": "b"}]}}})
    with pytest.raises(ConfigError, match="labels must differ"):
        check_comparisons(twice, root=str(tmp_path))


def test_a_b_p_the_experiment_never_ran_is_refused_by_name(analyses, tmp_path, capsys):
    """A fixed B_p no run of an experiment has would draw an empty panel: refused, with the B_p it has."""
    spec = {"splits": ["easy"], "B_p": 64, "experiments": [{"label": "a", "experiment": "a"}]}
    cfg = check_config({"compare": {"x": spec}})
    with pytest.raises(ConfigError, match=r"compare\.x\.B_p: experiment 'a' has no runs at B_p = 64 on split "
                                          r"'easy' \(its B_p: 8\)"):
        check_comparisons(cfg, root=str(analyses))
    own = check_config({"compare": {"x": {**spec, "experiments": [{"label": "own", "experiment": "own"}]}}})
    made = {p: {16, 32} for s in comparison_sources(own["compare"]["x"], root=str(analyses))
            for p in (s.evals, s.tables)}   # this workflow's analyses, with the B_p its grid trains
    with pytest.raises(ConfigError, match=r"compare\.x\.B_p: .*'own'.*\(its B_p: 16, 32\)"):
        check_comparisons(own, root=str(analyses), made_here=made)
    check_comparisons(check_config({"compare": {"x": {**spec, "B_p": 8}}}), root=str(analyses))
    rc = main(["compare", f"a={analyses}/a", "--splits", "easy", "--bp", "64", "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--bp: 'a'" in err[0] and "(its B_p: 8)" in err[0], err
    assert not list(tmp_path.iterdir())


def test_a_results_path_holding_an_equals_sign(analyses, tmp_path):
    where = tmp_path / "lr=1e-6"
    shutil.copytree(analyses / "a", where)
    assert main(["compare", f"D = 6k={where}", "--splits", "easy", "--out", str(tmp_path / "one")]) == 0
    assert main(["compare", "--experiment", "x=y", str(where), "--splits", "easy", "--out", str(tmp_path / "two")]) == 0
    assert main(["compare", f"D={tmp_path}/nowhere=1", "--splits", "easy", "--out", str(tmp_path / "three")]) == 2
    assert {p.name for p in tmp_path.iterdir()} == {"lr=1e-6", "one.png", "one.pdf", "two.png", "two.pdf"}
