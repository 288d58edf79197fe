"""Subcommand of rules/compare.smk: `compare`, studies side by side (config
`compare`; paper Figs. 12 and 13). Also a tool: any finished analyses, named
as LABEL=RESULTS (an experiment's results folder), drawn in one figure.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from isocompute.cli.common import add_stage_parser
from isocompute.errors import InputError

log = logging.getLogger("isocompute")


def register(sub) -> None:
    p = add_stage_parser(sub, "compare", cmd_compare,
                         "Draw several finished experiments' frontiers in one figure (studies side by side).",
                         params=False)
    p.add_argument("experiments", nargs="+", metavar="LABEL=RESULTS",
                   help="a label and an experiment's results folder (results/{experiment}, holding "
                        "analysis/{split}/evals.parquet and tables/), in panel order")
    p.add_argument("--splits", nargs="+", required=True, help="the splits drawn (one row each)")
    p.add_argument("--figure", choices=("frontiers", "overlay"), default="frontiers",
                   help="frontiers: a panel per experiment and split; overlay: one panel per split")
    p.add_argument("--bp", dest="B_p", type=int, default=None,
                   help="the fixed B_p drawn (default: each analysis's smallest)")
    p.add_argument("--title", default=None)
    p.add_argument("--out", required=True, metavar="STEM", help="writes STEM.png and STEM.pdf")


def comparison_spec(args) -> dict:
    """The config `compare` entry the command line describes."""
    experiments = []
    for item in args.experiments:
        label, sep, results = item.rpartition("=")
        if not sep or not label or not results:
            raise InputError(f"expected LABEL=RESULTS, got {item!r}")
        experiments.append({"label": label, "results": results})
    return {"experiments": experiments, "splits": args.splits, "figure": args.figure, "B_p": args.B_p,
            "title": args.title}


def cmd_compare(args) -> int:
    from isocompute.analysis.compare import check_comparisons, comparison_sources, load_comparison
    from isocompute.analysis.plots.compare import plot_comparison

    spec = comparison_spec(args)
    check_comparisons({"compare": {"cli": spec}})
    loaded = load_comparison(comparison_sources(spec))
    stem = Path(args.out)
    stem.parent.mkdir(parents=True, exist_ok=True)
    # Drawn beside the outputs, then moved into place: a failed draw leaves none behind.
    tmp = Path(tempfile.mkdtemp(prefix=f".{stem.name}.", dir=stem.parent))
    try:
        paths = plot_comparison(loaded, tmp / stem.name, figure=spec["figure"], B_p=spec["B_p"],
                                title=spec["title"])
        for path in paths:
            os.replace(path, stem.parent / path.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("compare: %d panels of %d experiments -> %s.{png,pdf}", len(loaded), len(spec["experiments"]), stem)
    return 0
