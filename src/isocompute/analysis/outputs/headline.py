"""The report's headline: what the study found, per split, read from its analysis tables.

The `headline` rule (rules/figures.smk) builds it from each split's summary.csv (what the
analysis may say per B_p at the top of its compute range: isocompute.analysis.frontier.claims) and
recommendations.csv (the allocation advisor's table, `isocompute recommend`); `snakemake
--report` opens on it. Pure functions from tables to HTML: nothing here reads or writes.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from isocompute.analysis.frontier.claims import ESTABLISHED, FALLS, NO_EFFECT

# Scoped to the headline's own class: its brief form is embedded in the report's landing page.
STYLE = (".isocompute-headline{font-family:sans-serif;font-size:13px;line-height:1.4}"
         ".isocompute-headline table{border-collapse:collapse;margin:0.4em 0 1em}"
         ".isocompute-headline td,.isocompute-headline th{border:1px solid #ccc;padding:2px 6px;"
         "text-align:right;vertical-align:top}"
         ".isocompute-headline th{background:#eee}.isocompute-headline td.text{text-align:left}")


def _num(value: float, digits: int = 3) -> str:
    return "" if not np.isfinite(value) else f"{value:.{digits}f}"


def _count(value: float) -> str:
    """A compute or a step count: 8,192."""
    return "" if not np.isfinite(value) else f"{value:,.0f}"


def _band(value: float, lo: float, hi: float) -> str:
    if not np.isfinite(lo) or not np.isfinite(hi):
        return _num(value)
    return f"{_num(value)} [{_num(lo)}, {_num(hi)}]"


def _text(value) -> str:
    """A text cell of a table read back from CSV, where an empty cell is NaN."""
    return value if isinstance(value, str) else ""


def finding(row: pd.Series | dict) -> str:
    """What may be said about n* of one B_p (a summary.csv row), in one phrase."""
    claim, law = _text(row.get("n_star_claim")), _text(row.get("law_claim"))
    at = f"at C = {_count(float(row['compute']))}"
    if law == NO_EFFECT or claim.startswith("undetermined: no effect"):
        return "no effect of n detected (F-test): the runs of every n share one curve, so the data single out no n*"
    if law in ESTABLISHED:
        way = "falls" if law == FALLS else "rises"
        U = _band(float(row["U"]), float(row.get("U_lo", np.nan)), float(row.get("U_hi", np.nan)))
        return f"n* {way} with compute (established; the law's log2 n* tends to {U}), {claim} {at}"
    if claim.startswith("undetermined"):
        return (f"n* undetermined {at} (its band {claim.removeprefix('undetermined: ')} spans more than two "
                "doublings of n); whether it rises or falls with compute is not established")
    return f"{claim} {at}; whether n* rises or falls with compute is {law or 'not established'}"


def verdict(summary: pd.DataFrame) -> str:
    """The split's finding about n*: one phrase when every B_p says the same, else one per B_p."""
    if summary.empty:
        return "No frontier: the analysis has no B_p with a fitted frontier."
    found = [finding(row) for _, row in summary.iterrows()]
    bps = [int(b) for b in summary["B_p"]]
    if len(set(found)) == 1:
        return f"At every B_p ({', '.join(map(str, bps))}): {found[0]}."
    return " ".join(f"B_p = {b}: {f}." for b, f in zip(bps, found))


def to_train(recs: pd.DataFrame) -> str:
    """What the advisor says to train at the largest budget inside the studied range."""
    inside = recs[recs["direction"] == "inside"] if "direction" in recs.columns else recs
    if inside.empty:
        return ""
    r = inside.sort_values("budget").iloc[-1]
    return (f"To train at C = {_count(float(r['budget']))}: B_p = {int(r['B_p'])}, n = {int(r['n'])}, "
            f"M = {_count(float(r['M']))} steps ({r['n_star_claim']}); reward "
            f"{_band(float(r['reward']), float(r['reward_lo']), float(r['reward_hi']))}.")


def _table(head: list[str], rows: list[list[str]], text_cols: set[int]) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        cells = [f"<td class=\"text\">{html.escape(c)}</td>" if i in text_cols else f"<td>{html.escape(c)}</td>"
                 for i, c in enumerate(row)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out + ["</table>"])


def summary_html(summary: pd.DataFrame, *, brief: bool = False) -> str:
    """summary.csv as a table: per B_p, the frontier at the top of its range with its band, and the
    claims; `brief` leaves out the F-test (the verdict says what it found)."""
    head = ["B_p", "C (rollouts)", "frontier reward [band]", "n*", "n*(C) law", "runs share one curve (F-test p)"]
    rows = [[str(int(r["B_p"])), _count(float(r["compute"])),
             _band(float(r["reward"]), float(r["reward_lo"]), float(r["reward_hi"])),
             str(r["n_star_claim"]), str(r["law_claim"]),
             f"{'yes' if r['model'] == 'common' else 'no'} ({float(r['n_effect_p']):.2g})"]
            for _, r in summary.iterrows()]
    if brief:
        return _table(head[:5], [row[:5] for row in rows], {3, 4})
    return _table(head, rows, {3, 4, 5})


def recommendations_html(recs: pd.DataFrame) -> str:
    """recommendations.csv as a table: what to train at each budget C."""
    head = ["C (rollouts)", "B_p", "n", "M (steps)", "n* [band]", "reward [band]", "studied range"]
    rows = []
    for _, r in recs.iterrows():
        where = "inside" if r["direction"] == "inside" else f"{float(r['extrapolation']):g}x {r['direction']}"
        rows.append([_count(float(r["budget"])), str(int(r["B_p"])), str(int(r["n"])), _count(float(r["M"])),
                     str(r["n_star_claim"]), _band(float(r["reward"]), float(r["reward_lo"]), float(r["reward_hi"])),
                     where])
    return _table(head, rows, {4, 6})


def split_html(split: str, summary: pd.DataFrame, recs: pd.DataFrame, *, ci: float = 0.95,
               brief: bool = False) -> str:
    """One split's part of the headline: the verdict, the frontier and claims per B_p, and what to
    train; `brief` (the landing page, which must fit one screen) gives the top budget's advice
    instead of the advisor's whole table."""
    parts = [f"<h2>Split {html.escape(split)}</h2>", f"<p><strong>{html.escape(verdict(summary))}</strong></p>"]
    if brief:
        parts += [summary_html(summary, brief=True), f"<p>{html.escape(to_train(recs))}</p>"]
        return "\n".join(parts)
    resampled = set(summary["resampled"].dropna()) if "resampled" in summary.columns else set()
    note = (" With one seed per cell (resampled: points) the bands do not hold run-to-run variation."
            if "points" in resampled else "")
    parts += [f"<p>At the top of the compute range, per B_p ({ci:.0%} bootstrap bands; summary.csv).{note}</p>",
              summary_html(summary)]
    if len(recs):
        parts += ["<p>What to train at a budget C (recommendations.csv, as <code>isocompute recommend "
                  "--budget C</code>): the smallest B_p within the noise of the best, n from n*, M = C / (B_p n)."
                  "</p>", recommendations_html(recs)]
    return "\n".join(parts)


def headline_body(experiment: str, splits: dict[str, tuple[pd.DataFrame, pd.DataFrame]], *, ci: float = 0.95,
                  brief: bool = False) -> str:
    """The headline as an HTML fragment (its own <style>, scoped to its class): `splits` maps a
    split's name to its (summary, recommendations) tables; `brief`: the landing page's form."""
    parts = [f"<div class=\"isocompute-headline\"><style>{STYLE}</style>",
             f"<h1>Headline: study {html.escape(experiment)}</h1>"]
    parts += [split_html(name, summary, recs, ci=ci, brief=brief) for name, (summary, recs) in splits.items()]
    if not splits:
        parts.append("<p>No split of this study has an analysis.</p>")
    return "\n".join(parts + ["</div>"])


def page(body: str, *, title: str) -> str:
    """A whole HTML page around a fragment (what the report shows in its frame)."""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>\n"
            f"<body>\n{body}\n</body></html>\n")


def _cell(value: float) -> str:
    """A float of a table page: whole numbers (budgets, steps, n) in full, others to 4 digits."""
    return f"{value:.0f}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:.4g}"


def table_page(table: pd.DataFrame, *, title: str) -> str:
    """A table as a whole HTML page, every column as written (the CSV, viewable in the report)."""
    body = (f"<div class=\"isocompute-headline\"><style>{STYLE}</style><h2>{html.escape(title)}</h2>\n"
            + table.to_html(index=False, na_rep="", float_format=_cell, border=0) + "\n</div>")
    return page(body, title=title)
