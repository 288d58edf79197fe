"""Studies side by side (config `compare`, paper Figs. 12 and 13): finished
analyses of two tiny synthetic experiments drawn in one figure, by the command
and by the rule; a missing experiment stops the workflow by name before any job."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import make_study_dir, run_snakemake, write_config
from isocompute.analysis.compare import check_comparisons
from isocompute.analysis.pipeline import run_analysis, write_analysis
from isocompute.analysis.settings import AnalysisSettings
from isocompute.analysis.synthetic import synthetic_evals
from isocompute.cli import main
from isocompute.config import check_config
from isocompute.errors import ConfigError

SPLITS = ("easy", "hard")


@pytest.fixture(scope="module")
def analyses(tmp_path_factory) -> Path:
    """results/{a,b}/analysis/{easy,hard}/: two experiments' analyses (tables only, cheap)."""
    root = tmp_path_factory.mktemp("finished") / "results"
    for exp, scale in (("a", 2000.0), ("b", 6000.0)):
        for split in SPLITS:
            evals = synthetic_evals(B_ps=(8,), ns=(4, 16, 64), points=10, c_mid_scale=scale)
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


def test_compare_rule_draws_the_figure_and_rejects_a_missing_experiment(analyses, tmp_path):
    workdir = make_study_dir(tmp_path / "study")
    shutil.copytree(analyses, workdir / "results")
    entry = {"figure": "frontiers", "splits": list(SPLITS), "title": "base models",
             "experiments": [{"label": "Qwen", "experiment": "a"},
                             {"label": "Llama", "results": "results/b"}]}
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
