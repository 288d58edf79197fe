"""`make run` as a newcomer types it: in a fresh shell, without the venv activated."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import REPO, TINY_CONFIG, VENV_BIN, make_study_dir, write_config


def test_make_run_works_without_an_activated_venv(tmp_path: Path):
    """The rules call the `isocompute` console script; `make run` must find it
    even when the venv's bin is not on the caller's PATH."""
    work = make_study_dir(tmp_path)
    cfg = write_config(work, TINY_CONFIG)
    venv_bin = VENV_BIN.resolve()
    scrubbed = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                               if p and Path(p).resolve() != venv_bin)
    assert shutil.which("isocompute", path=scrubbed) is None  # else the test could not fail
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = scrubbed
    args = f"results/tiny/data/pool.parquet --directory {work} --configfile {cfg}"
    proc = subprocess.run(["make", "-C", str(REPO), "run", "CORES=1", f"SNAKEMAKE_ARGS={args}"],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (work / "results" / "tiny" / "data" / "pool.parquet").is_file()
    assert (work / "results" / "report.html").stat().st_size > 10_000
