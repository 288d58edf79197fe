"""The `isocompute` command: one subcommand per Snakemake rule, plus tools that
work outside Snakemake (`analyze`, `recommend`, `plan`, `verl-command`,
`verl-merge`).

The modules mirror the rule files: data, train, evaluate, sweep, analysis, compare, cluster;
recommend is a tool on a finished analysis.
Each exposes `register(subparsers)`. Stage subcommands take the config sections
they read as `--params JSON` and their files as named options; tools take a
config or table path. User-caused errors (ConfigError, InputError) exit with
status 2 and one line, no traceback.

`--help` lists the commands a person types first and the stage commands the
rules run after them: argparse lists subcommands in one flat list, so the
listing is built here (`command_groups`) and the flat one is hidden.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import textwrap

from isocompute import __version__
from isocompute.errors import ConfigError, InputError

# In the order `--help` lists them: the cluster tools first, as a newcomer meets them
# (check-config, doctor, plan), then the stages in DAG order.
SUBCOMMAND_MODULES = ["cluster", "data", "train", "evaluate", "sweep", "analysis", "compare", "recommend", "design"]
USER_TITLE = "commands"
STAGE_TITLE = "pipeline stages (the Snakemake rules run these, with --params)"


def command_groups(sub: argparse._SubParsersAction) -> dict[str, list[tuple[str, str]]]:
    """{title: [(command, one-line help)]}: the tools first, in the order they were
    registered, then the stage commands (those built by `common.add_stage_parser`)."""
    groups: dict[str, list[tuple[str, str]]] = {USER_TITLE: [], STAGE_TITLE: []}
    for action in sub._choices_actions:   # the (name, help) pairs argparse's own listing uses
        stage = sub.choices[action.dest].get_default("_stage")
        groups[STAGE_TITLE if stage else USER_TITLE].append((action.dest, action.help or ""))
    return groups


def _format_groups(groups: dict[str, list[tuple[str, str]]]) -> str:
    width = max(40, min(shutil.get_terminal_size().columns, 100) - 2)
    indent = 2 + max(len(name) for rows in groups.values() for name, _ in rows) + 2
    blocks = []
    for title, rows in groups.items():
        lines = [f"{title}:"]
        for name, help_ in rows:
            lines.append(textwrap.fill(help_, width, initial_indent=f"  {name:<{indent - 4}}  ",
                                       subsequent_indent=" " * indent))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks + ["`isocompute COMMAND --help` describes a command and its options."])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="isocompute",
        usage="%(prog)s [-h] [--version] COMMAND ...",
        description="Compute-optimal scaling studies of LLM RL (IsoCompute Playbook).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    parser.epilog = _format_groups(command_groups(sub))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ConfigError, InputError) as exc:
        print(f"isocompute {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
