"""The `isocompute` command: one subcommand per Snakemake rule, plus tools that
work outside Snakemake (`analyze`, `recommend`, `plan`, `verl-command`,
`verl-merge`).

The modules mirror the rule files: data, train, evaluate, sweep, analysis, compare, cluster;
recommend is a tool on a finished analysis.
Each exposes `register(subparsers)`. Stage subcommands take the config sections
they read as `--params JSON` and their files as named options; tools take a
config or table path. User-caused errors (ConfigError, InputError) exit with
status 2 and one line, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from isocompute.errors import ConfigError, InputError

SUBCOMMAND_MODULES = ["data", "train", "evaluate", "sweep", "analysis", "compare", "cluster", "recommend"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="isocompute",
        description="Compute-optimal scaling studies of LLM RL (IsoCompute Playbook).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(sub)
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
