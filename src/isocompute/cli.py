"""The `isocompute` command: one subcommand per pipeline stage, plus tools
(`analyze`, `plan`, `verl-command`) that work outside Snakemake.

Each stage module exposes `register(subparsers)`, which adds its subcommand and
sets `func`; user-caused errors (ConfigError, InputError) exit non-zero with one
line, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from isocompute.errors import ConfigError, InputError

# Modules that register subcommands; a module missing here is simply skipped
# so that partial installs still give a working CLI.
SUBCOMMAND_MODULES = [
    "isocompute.stages",
    "isocompute.train_stages",
    "isocompute.analysis.cli",
    "isocompute.analysis.study_cli",
    "isocompute.cluster.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="isocompute",
        description="Compute-optimal scaling studies of LLM RL (IsoCompute Playbook).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue
            raise
        module.register(sub)
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
