"""Atomic outputs (isocompute.atomic): a folder appears whole or not at all, and an output
folder replaces only a folder this tool made: never a study, the working folder or an input."""

from __future__ import annotations

import pandas as pd
import pytest

from isocompute import atomic
from isocompute.cli import main
from isocompute.errors import InputError


def test_an_output_folder_replaces_only_what_it_made(tmp_path):
    out = tmp_path / "out"
    with atomic.atomic_dir(out) as tmp:
        (tmp / "a.csv").write_text("1")
    assert (out / atomic.OUTPUT_MARK).is_file()
    with atomic.atomic_dir(out) as tmp:  # ours: replaced
        (tmp / "b.csv").write_text("2")
    assert not (out / "a.csv").exists() and (out / "b.csv").is_file()
    study = tmp_path / "study"
    (study / "runs").mkdir(parents=True)
    (study / "runs" / "run.json").write_text("{}")
    with pytest.raises(InputError, match="did not write"):
        with atomic.atomic_dir(study):
            raise AssertionError("no work may start")
    assert (study / "runs" / "run.json").is_file()
    table = tmp_path / "evals.csv"
    table.write_text("x")
    with pytest.raises(InputError, match="not a folder"):
        with atomic.atomic_dir(table):
            pass
    assert table.read_text() == "x"
    (tmp_path / "empty").mkdir()
    with atomic.atomic_dir(tmp_path / "empty") as tmp:
        (tmp / "c.csv").write_text("3")
    assert (tmp_path / "empty" / "c.csv").is_file()


@pytest.mark.parametrize("target", [".", "evals.csv", "study"])
def test_analyze_never_deletes_a_folder_or_file_it_did_not_make(tmp_path, monkeypatch, capsys, target):
    """`isocompute analyze --out .`, `--out` naming its input and `--out` a study's folder used
    to be swapped out and deleted, exit 0."""
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"B_p": [2] * 3, "n": [2] * 3, "step": [0, 1, 2], "compute": [0, 4, 8],
                  "avg@4": [0.1, 0.2, 0.3], "best@4": [0.2, 0.3, 0.4], "worst@4": [0.0, 0.1, 0.2]}
                 ).to_csv("evals.csv", index=False)
    (tmp_path / "study" / "runs").mkdir(parents=True)
    (tmp_path / "study" / "runs" / "run.json").write_text("{}")
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert main(["analyze", "evals.csv", "--out", target, "--no-figures", "--bootstrap", "0"]) == 2
    assert "refusing to replace" in capsys.readouterr().err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


def test_outputs_get_the_modes_of_a_plain_write_not_a_temporarys(tmp_path):
    import os
    import stat

    from isocompute import atomic

    old = os.umask(0o027)
    try:
        assert atomic.current_umask() == 0o027
        written = atomic.write_text(tmp_path / "table.csv", "a,b\n")
        with atomic.atomic_dir(tmp_path / "model") as d:
            (d / "weights").write_text("w")
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.stat().st_mode) == 0o640        # not mkstemp's 0600
    assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o750   # not mkdtemp's 0700
