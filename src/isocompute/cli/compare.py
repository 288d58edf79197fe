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
    p.add_argument("experiments", nargs="*", metavar="LABEL=RESULTS",
                   help="a label and an experiment's results folder (results/{experiment}, holding "
                        "analysis/{split}/evals.parquet and tables/), in panel order; split at the '=' "
                        "after which RESULTS is a folder, since either may hold one")
    p.add_argument("--experiment", dest="labelled", nargs=2, action="append", default=[],
                   metavar=("LABEL", "RESULTS"),
                   help="the same, unambiguous (the rule's form), after the LABEL=RESULTS ones")
    p.add_argument("--splits", nargs="+", required=True, help="the splits drawn (one row each)")
    p.add_argument("--figure", choices=("frontiers", "overlay"), default="frontiers",
                   help="frontiers: a panel per experiment and split; overlay: one panel per split")
    p.add_argument("--bp", dest="B_p", type=int, default=None,
                   help="the fixed B_p drawn (default: each analysis's smallest)")
    p.add_argument("--title", default=None)
    p.add_argument("--out", required=True, metavar="STEM", help="writes STEM.png and STEM.pdf")


def split_labelled(item: str) -> tuple[str, str]:
    """(LABEL, RESULTS) of LABEL=RESULTS, where either may hold '=' ('D = 500', a folder
    lr=1e-6): at the one '=' after which RESULTS is an existing folder; InputError when none
    or several are."""
    cuts = [i for i, ch in enumerate(item) if ch == "="]
    readings = [(item[:i], item[i + 1:]) for i in cuts if item[:i] and item[i + 1:]]
    if not readings:
        raise InputError(f"expected LABEL=RESULTS, got {item!r}")
    found = [r for r in readings if os.path.isdir(r[1])]
    if len(found) == 1:
        return found[0]
    tried = ", ".join(repr(r[1]) for r in (found or readings))
    if found:
        raise InputError(f"{item!r}: ambiguous, several readings name a results folder ({tried}); "
                         "give it as --experiment LABEL RESULTS")
    raise InputError(f"{item!r}: no results folder after any '=' (tried {tried}); give an experiment's "
                     "results folder, or --experiment LABEL RESULTS")


def comparison_spec(args) -> dict:
    """The config `compare` entry the command line describes."""
    pairs = [split_labelled(item) for item in args.experiments] + [tuple(p) for p in args.labelled]
    if not pairs:
        raise InputError("expected at least one LABEL=RESULTS or --experiment LABEL RESULTS")
    experiments = [{"label": label, "results": results} for label, results in pairs]
    return {"experiments": experiments, "splits": args.splits, "figure": args.figure, "B_p": args.B_p,
            "title": args.title}


def cmd_compare(args) -> int:
    from isocompute.analysis.outputs.compare import check_comparisons, comparison_sources, load_comparison
    from isocompute.analysis.plots.compare import plot_comparison

    spec = comparison_spec(args)
    check_comparisons({"compare": {"cli": {**spec, "B_p": None}}})   # the B_p: by load_comparison, as --bp
    loaded = load_comparison(comparison_sources(spec), B_p=spec["B_p"], key="--bp")
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
