"""`make run` as a newcomer types it: in a fresh shell, without the venv activated."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support import REPO, TINY_CONFIG, VENV_BIN, make_study_dir, require_slow, write_config


@pytest.mark.slow
def test_make_run_works_without_an_activated_venv(tmp_path: Path):
    """The rules call the `isocompute` console script; `make run` must find it
    even when the venv's bin is not on the caller's PATH."""
    work = make_study_dir(tmp_path)
    cfg = write_config(work, TINY_CONFIG)
    # Without the test's venv, or any other folder that holds an isocompute script (another
    # checkout's venv on the caller's PATH).
    venv_bin = VENV_BIN.resolve()
    scrubbed = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                               if p and Path(p).resolve() != venv_bin and not (Path(p) / "isocompute").exists())
    assert shutil.which("isocompute", path=scrubbed) is None  # else the test could not fail
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = scrubbed
    args = f"results/tiny/data/pool.parquet --directory {work} --configfile {cfg}"
    require_slow("runs `make run` (a real stage and the report)")
    proc = subprocess.run(["make", "-C", str(REPO), "run", "CORES=1", f"SNAKEMAKE_ARGS={args}"],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (work / "results" / "tiny" / "data" / "pool.parquet").is_file()
    assert (work / "results" / "report.html").stat().st_size > 10_000


def _make_copy(tmp_path: Path) -> Path:
    """The Makefile in a scratch folder with results, Snakemake state, a built conda
    environment and files clean-results must leave alone."""
    work = tmp_path / "repo"
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, work / name)
    for path in ("results/embedded/data/pool.parquet", "results/tiny/runs/x", "results/report.html",
                 ".snakemake/metadata/abc", ".snakemake/locks/0.input.lock", ".snakemake/conda/1a2b/bin/python",
                 ".snakemake/conda/1a2b.yaml", "data/guru/math.parquet", "config/mine.yaml"):
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text("x")
    return work


def _make(work: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "-C", str(work), *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)


def test_clean_results_names_what_it_deletes_and_asks(tmp_path: Path):
    work = _make_copy(tmp_path)
    proc = _make(work, "clean-results")    # no terminal: nothing to ask, so nothing is deleted
    assert proc.returncode != 0
    out = proc.stdout
    assert "results/ (" in out and "embedded" in out and "tiny" in out
    assert ".snakemake/metadata/" in out and ".snakemake/locks/" in out
    assert "keeps .snakemake/conda" in out and "ENVS=1" in out and "YES=1" in out
    assert (work / "results" / "report.html").is_file() and (work / ".snakemake" / "metadata").is_dir()

    proc = _make(work, "clean-results", "YES=1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (work / "results").exists()
    assert sorted(p.name for p in (work / ".snakemake").iterdir()) == ["conda"]   # the built env stays
    for kept in ("Makefile", "data/guru/math.parquet", "config/mine.yaml", ".snakemake/conda/1a2b/bin/python"):
        assert (work / kept).is_file(), kept

    proc = _make(work, "clean-results", "YES=1", "ENVS=1")
    assert proc.returncode == 0 and not (work / ".snakemake").exists()
    assert (work / "data" / "guru" / "math.parquet").is_file()
    assert "nothing to delete" in _make(work, "clean-results").stdout


def test_make_report_runs_snakemake_report(tmp_path: Path):
    work = _make_copy(tmp_path)
    proc = _make(work, "-n", "report", "SNAKEMAKE_ARGS=--configfile config/mine.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "snakemake --cores 1 --report results/report.html --configfile config/mine.yaml" in proc.stdout
