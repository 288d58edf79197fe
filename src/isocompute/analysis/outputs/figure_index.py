"""The figure index (docs/figures.md) as one HTML page for `snakemake --report`, and the
order in which the report lists a split's analysis figures.

docs/figures.md is the one home of which config, rule and file produce each of
the paper's figures; the `figure_index` rule renders it here (markdown-it-py,
CommonMark with tables) so the report carries the same table.
"""

from __future__ import annotations

import html

# A split's analysis figures (isocompute.analysis.plots.plot_all) in the paper's order, each
# with the paper figure it draws: the report sorts them by this order, not by file name.
ANALYSIS_FIGURES = (
    ("fig5_record_points", "Fig. 5"),
    ("fig6_frontier", "Fig. 6"),
    ("fig7_n_star", "Fig. 7"),
    ("fig8_metric_optima", "Fig. 8"),
    ("fig9_fixed_batch", "Fig. 9"),
    ("fig10_sensitivity", "Fig. 10"),
    ("fig11_interference", "Fig. 11"),
    ("mechanism_zero_variance", "ours"),
    ("appendix_frontiers_fixed_bp", "appendix"),
    ("appendix_n_star_fixed_bp", "appendix"),
    ("appendix_n_star_laws", "appendix"),
    ("appendix_frontiers_fixed_batch", "appendix"),
    ("appendix_joint", "ours"),
    ("appendix_tokens_frontier", "appendix"),
    ("appendix_n_star_laws_tokens", "appendix"),
    ("appendix_best_worst_frontiers", "Fig. 20"),
)
_ORDER = {name: (i + 1, paper) for i, (name, paper) in enumerate(ANALYSIS_FIGURES)}

STYLE = ("body{font-family:sans-serif;font-size:14px;margin:1.5em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}th{background:#eee}")


def figure_labels(name: str) -> dict[str, str]:
    """The report's columns of one analysis figure: `order` first (the report sorts by it as
    text, hence zero-padded), the paper figure and the file's name. A figure this table does
    not know yet goes last, under its name."""
    order, paper = _ORDER.get(name, (99, ""))
    return {"order": f"{order:02d}", "paper": paper, "figure": name}


def markdown_html(text: str, *, title: str = "Figure index") -> str:
    """A whole HTML page from the Markdown of docs/figures.md."""
    from markdown_it import MarkdownIt   # here: the Snakefile imports this module for figure_labels

    body = MarkdownIt("commonmark").enable("table").render(text)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n")
