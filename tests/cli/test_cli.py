"""The `isocompute` command as a newcomer meets it: `--version`, `python -m isocompute`,
`--help` listing the tools apart from the pipeline's stage commands, and logs that carry
isocompute's messages without other libraries' INFO lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

import pytest

import isocompute
from isocompute.cli import STAGE_TITLE, USER_TITLE, build_parser, command_groups, main
from support import REPO

TOOLS = {"check-config", "doctor", "plan", "verl-command", "verl-merge", "analyze", "replay-adaptive", "design",
         "recommend", "ship-base-model"}
# Every subcommand a rule runs with --params (analyze and verl-merge are also rules' commands,
# but a person runs them by hand on their own tables and runs, so they are tools).
STAGES = {"pool", "base-model", "difficulty", "difficulty-merge", "splits", "fig-difficulty", "check-grid",
          "train-options", "train", "score", "cross-eval", "adaptive-decide", "collect", "figures",
          "collect-variants", "variant-figures", "figure-index", "compare", "headline"}


def _python_m(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "isocompute", *args], capture_output=True, text=True,
                          cwd=REPO, **kw)


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"isocompute {isocompute.__version__}"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    # One place for the version: pyproject reads it from the package.
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "isocompute.__version__"}


def test_python_m_isocompute_is_the_command():
    proc = _python_m("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: isocompute [-h] [--version] COMMAND ...")
    proc = _python_m("--version")
    assert (proc.returncode, proc.stdout.strip()) == (0, f"isocompute {isocompute.__version__}")
    proc = _python_m("plan")
    assert proc.returncode == 2 and "plan: error: the following arguments are required: config" in proc.stderr


def _subparsers(parser):
    return next(a for a in parser._actions if a.dest == "command")


def test_help_lists_tools_apart_from_stage_commands(capsys):
    parser = build_parser()
    groups = {title: [name for name, _ in rows] for title, rows in command_groups(_subparsers(parser)).items()}
    assert set(groups[USER_TITLE]) == TOOLS
    assert set(groups[STAGE_TITLE]) == STAGES
    assert groups[USER_TITLE][:3] == ["check-config", "doctor", "plan"]   # what a newcomer runs first
    assert groups[STAGE_TITLE][:2] == ["pool", "base-model"]            # the stages in DAG order
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    user_at, stage_at = text.index(f"\n{USER_TITLE}:\n"), text.index(f"\n{STAGE_TITLE}:\n")
    assert user_at < stage_at
    listed = re.findall(r"^  ([a-z][a-z-]+)  ", text, flags=re.M)
    assert sorted(listed) == sorted(TOOLS | STAGES)        # each command once, none in argparse's flat list
    assert all(user_at < text.index(f"\n  {name} ") < stage_at for name in TOOLS)
    assert all(text.index(f"\n  {name} ") > stage_at for name in STAGES)
    assert "{" not in text.split("\n", 1)[0]                 # the usage line names COMMAND, not 26 choices


def test_stage_commands_still_parse():
    args = build_parser().parse_args(["pool", "--params", "{}", "--out", "x.parquet"])
    assert args.command == "pool" and args._stage


LOG_SNIPPET = """
import logging
from isocompute.cli.common import setup_logging
setup_logging()
logging.getLogger("matplotlib.category").info("third-party info")
logging.getLogger("matplotlib.font_manager").warning("third-party warning")
logging.getLogger("isocompute").info("own info")
logging.getLogger("isocompute.analysis.pipeline").info("own module info")
"""


def test_logging_keeps_isocompute_info_and_only_others_warnings():
    proc = subprocess.run([sys.executable, "-c", LOG_SNIPPET], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "third-party info" not in proc.stderr
    for line in ("WARNING matplotlib.font_manager: third-party warning", "INFO isocompute: own info",
                 "INFO isocompute.analysis.pipeline: own module info"):
        assert line in proc.stderr


def test_analyze_log_carries_no_matplotlib_info(tmp_path):
    """`analyze` with figures: matplotlib logs INFO lines (categorical units, the font cache on
    a fresh MPLCONFIGDIR) that used to fill every analyze and figures log."""
    from isocompute.analysis.fits.synthetic import synthetic_evals

    synthetic_evals(B_ps=(32,), ns=(8, 16), points=20, noise=0.005, seed=1).to_csv(tmp_path / "evals.csv",
                                                                                   index=False)
    proc = _python_m("analyze", str(tmp_path / "evals.csv"), "--out", str(tmp_path / "out"), "--bootstrap", "2",
                     "--grid-points", "10", env={**os.environ, "MPLCONFIGDIR": str(tmp_path / "mpl")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "out" / "figures").is_dir()
    assert " INFO isocompute" in proc.stderr
    assert not [line for line in proc.stderr.splitlines() if " INFO " in line and " INFO isocompute" not in line]
