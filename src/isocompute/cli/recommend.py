"""`isocompute recommend`: the allocation advisor on a finished analysis.

Finds a split's tables (a tables folder, a split's analysis folder, or a
study's `analysis/` folder with `--split`), reads them and prints
`isocompute.analysis.frontier.recommend.recommend`'s advice, as text or JSON. Not a
pipeline stage: the report's table is written by `analyze` (recommendations.csv).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from isocompute.cli.common import json_text
from isocompute.config import schema_defaults
from isocompute.errors import InputError
from isocompute.layout import ANALYSIS_TABLES

DESCRIPTION = """\
What to train at a sampling budget of C rollouts, from a finished analysis
(`isocompute analyze`, or the pipeline's results/<experiment>/analysis/):

  B_p  the smallest B_p whose fixed-B_p frontier at C is within the noise of
       the best B_p's (the bootstrap interval of their difference reaches 0),
       as the paper prescribes: n from n*(C), the smallest stable B_p, the
       rest of the budget to steps;
  n*   that B_p's fitted law log2 n* = L + (U - L) / (1 + exp(-k (log10 C - c0)))
       at C, with the interval of the bootstrap replicates' laws at C; n is n*
       snapped to the nearest n the study ran at that B_p;
  M    C / (B_p n), rounded to whole steps;
  the predicted reward: that B_p's frontier at C, with its bootstrap band.

ANALYSIS_DIR is a folder of analysis tables (fits.csv, n_star_fit.csv, and
from a bootstrap n_star_fit_draws.csv, bootstrap_fits.csv), a split's
analysis folder holding tables/, or a study's analysis folder holding one
<split>/tables/ per split (then --split chooses, unless there is one).

A budget outside the studied compute range is extrapolated from the fitted
curves and the law, and the factor is printed; beyond --max-extrapolation
(analysis.max_extrapolation) times it is refused unless --allow-extrapolation.
A bad budget, a folder without fits, a split not studied, a table changed
since analyze wrote it (its MANIFEST.json) or one with a missing, empty or
non-numeric value where the advice needs one stops with one line and exit
status 2; a folder without MANIFEST.json is read with a warning.
"""

POWER = re.compile(r"\s*([0-9.]+)\s*(?:\^|\*\*)\s*([0-9.]+)\s*")


def register(sub) -> None:
    d = schema_defaults("analysis")
    p = sub.add_parser("recommend", help="B_p, n, M and the predicted reward at a budget, from a finished analysis.",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("analysis_dir", metavar="ANALYSIS_DIR", type=Path,
                   help="analysis tables, a split's analysis folder, or a study's analysis folder")
    p.add_argument("--budget", required=True, metavar="C",
                   help="sampling budget in rollouts: 4194304, 4.2e6 or 2^22")
    p.add_argument("--split", default=None, help="the split, when ANALYSIS_DIR holds several")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--allow-extrapolation", action="store_true",
                   help="go on when C lies more than --max-extrapolation times outside the studied range")
    p.add_argument("--max-extrapolation", default=None, metavar="F",
                   help=f"refuse budgets more than F times outside the studied compute range "
                        f"(default: analysis.max_extrapolation, {d['max_extrapolation']:g})")
    p.set_defaults(func=cmd_recommend)


def parse_budget(text: str) -> float:
    """A budget as written: a number (4194304, 4.2e6) or a power (2^22, 2**22); InputError otherwise."""
    from isocompute.analysis.frontier.recommend import check_budget

    power = POWER.fullmatch(text)
    if power:
        try:
            return check_budget(float(power.group(1)) ** float(power.group(2)))
        except (ValueError, OverflowError):
            pass
    return check_budget(text)


def _max_extrapolation(text: str | None) -> float:
    if text is None:
        return float(schema_defaults("analysis")["max_extrapolation"])
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 1:
        raise InputError(f"--max-extrapolation: expected a factor >= 1, got {text!r}")
    return value


def _recorded_splits(tables: Path) -> list[str]:
    """The splits a tables folder was analysed on: records.csv's split column, else params.json's."""
    from isocompute.analysis.outputs.folder import TablesFolder

    folder = TablesFolder(tables)
    records = folder.table("records")
    if records is not None and "split" in records.columns:
        return sorted(map(str, records["split"].dropna().unique()))
    split = (folder.params() or {}).get("split")
    return [] if split is None else [str(split)]


def find_tables(root: Path, split: str | None) -> tuple[Path, str | None]:
    """(the tables folder, its split) for ANALYSIS_DIR and --split; InputError naming what is missing."""
    from isocompute.analysis.outputs.folder import table_file

    fits = table_file("fits")
    if not root.is_dir():
        raise InputError(f"{root}: no such analysis directory")
    if (root / fits).is_file():
        recorded = _recorded_splits(root)
        if split is not None and recorded and split not in recorded:
            raise InputError(f"split {split!r} was not studied in {root} (its tables hold: {', '.join(recorded)})")
        return root, split if split is not None else (recorded[0] if len(recorded) == 1 else None)
    if (root / ANALYSIS_TABLES / fits).is_file():
        studied = {root.name: root / ANALYSIS_TABLES}
    else:
        studied = {d.name: d / ANALYSIS_TABLES for d in sorted(root.iterdir())
                   if (d / ANALYSIS_TABLES / fits).is_file()}
    if not studied:
        raise InputError(f"{root}: no fits here (no {fits}, {ANALYSIS_TABLES}/{fits} or <split>/{ANALYSIS_TABLES}/"
                         f"{fits}); is it an analysis written by `isocompute analyze`?")
    if split is None:
        if len(studied) > 1:
            raise InputError(f"{root}: several splits were studied ({', '.join(studied)}); choose one with --split")
        split = next(iter(studied))
    if split not in studied:
        raise InputError(f"split {split!r} was not studied in {root} (have: {', '.join(studied)})")
    return studied[split], split


def cmd_recommend(args: argparse.Namespace) -> int:
    from isocompute.analysis.fits.settings import AnalysisSettings
    from isocompute.analysis.frontier.recommend import recommend
    from isocompute.analysis.outputs.folder import read_tables, settings_from_params

    budget = parse_budget(args.budget)
    max_extrapolation = _max_extrapolation(args.max_extrapolation)
    tables_dir, split = find_tables(args.analysis_dir, args.split)
    tables, params = read_tables(tables_dir, ("fits", "n_star_fit", "n_star_fit_draws", "bootstrap_fits"))
    # The settings the tables were computed with (no params.json: the schema's).
    s = settings_from_params(params, tables_dir) if params else AnalysisSettings()
    advice = recommend(tables, budget, extrapolate=not s.observed_range, ci=s.ci, max_extrapolation=max_extrapolation,
                       allow_extrapolation=args.allow_extrapolation)
    context = {"split": split, "analysis_dir": str(tables_dir), "metric": s.metric, "method": s.method,
               "max_extrapolation": max_extrapolation}
    if args.json:
        print(json_text({**context, **advice.as_dict()}))
    else:
        print(advice_text(advice, context))
    return 0


def _band(value: float, lo: float, hi: float, fmt: str = "{:.3f}") -> str:
    inner = "no interval" if lo != lo or hi != hi else f"{fmt.format(lo)}, {fmt.format(hi)}"
    return f"{fmt.format(value)} [{inner}]"


def advice_text(a, context: dict) -> str:
    """The advice as a person reads it: what to run, then why, then the caveats."""
    from isocompute.analysis.frontier.recommend import rollouts_text as r

    where = "inside it" if a.direction == "inside" else f"{a.extrapolation:.3g}x {a.direction} it (extrapolation)"
    lines = [
        f"Allocation for C = {r(a.budget)} rollouts (split {context['split'] or '?'}, {context['metric']}, "
        f"method {context['method']}, {100 * a.ci:g}% intervals; {context['analysis_dir']})",
        f"  studied compute  {r(a.compute_lo)} to {r(a.compute_hi)} rollouts; C is {where}",
        f"  B_p = {a.B_p:<9}  {a.B_p_rule}",
    ]
    for c in a.candidates:
        gap = ("" if c["best"] or c["gap_lo"] != c["gap_lo"] else
               f"; best - this [{c['gap_lo']:+.3f}, {c['gap_hi']:+.3f}]")
        mark = ("best" if c["best"] else "not the best; no bootstrap to tell the noise" if c["gap_lo"] != c["gap_lo"]
                else "within the noise" if c["within"] else "below the best")
        lines.append(f"      B_p {c['B_p']:>6}: frontier {_band(c['reward'], c['reward_lo'], c['reward_hi'])}{gap}"
                     f" ({mark})")
    cell = ("" if a.cell_reward != a.cell_reward else
            f"; the fitted curve of (B_p {a.B_p}, n {a.n}) at C: {a.cell_reward:.3f}")
    lines += [
        f"  n*(C){a.n_star_claim[2:] if a.n_star_claim.startswith('n* =') else ' ' + a.n_star_claim}  "
        + (f"the fitted n* law of B_p = {a.B_p} at C"
           + ("" if a.n_star_lo != a.n_star_lo else " (interval: its bootstrap replicates' laws at C)")
           if a.n_star_source == "law" else f"the B_p = {a.B_p} frontier's n* at C (interval: its bootstrap band)"),
        f"  n = {a.n:<11}  "
        + (f"n* snapped to the nearest n studied at B_p = {a.B_p} ({', '.join(map(str, a.n_grid))}), in log2"
           if a.n_star_claim.startswith("n* =") else
           f"the smallest n studied at B_p = {a.B_p} ({', '.join(map(str, a.n_grid))}) inside the band"),
        f"  M = {r(a.M):<11}  C / (B_p n) = {r(a.budget)} / {r(a.B_p * a.n)}, rounded to whole steps "
        f"(uses {r(a.compute_used)} rollouts)",
        f"  reward {_band(a.reward, a.reward_lo, a.reward_hi)}  predicted {context['metric']} at C: the "
        f"B_p = {a.B_p} frontier (attained there by n = {r(a.frontier_n_star)}){cell}",
    ]
    lines += [f"  note: {note}" for note in a.notes]
    return "\n".join(lines)
