"""The checks that keep the house in order, run by `make test`: imports go one
way (import-linter contracts in pyproject.toml), the workflow passes
`snakemake --lint` and `snakefmt --check`, and no module outgrows one reader."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MAX_MODULE_LINES = 400


def run(*cmd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)


def test_imports_go_one_way():
    proc = run(str(BIN / "lint-imports"), "--no-cache")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_snakemake_lint_is_clean():
    proc = run(str(BIN / "snakemake"), "--lint", "--cores", "1")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "Lints for" not in proc.stdout + proc.stderr, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_workflow_is_snakefmt_formatted():
    proc = run(str(BIN / "snakefmt"), "--check", "Snakefile", "rules")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


@pytest.mark.parametrize("module", sorted((REPO / "src" / "isocompute").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(REPO / "src")))
def test_no_module_over_the_limit(module):
    lines = len(module.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module.name}: {lines} lines; split it along its seams"
