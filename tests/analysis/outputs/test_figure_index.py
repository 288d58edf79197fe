"""The figure index (docs/figures.md): every paper figure has a row, the files it
names are the ones the code draws, and the `figure_index` rule renders it for
the report; the report lists a split's figures in the paper's order, each with its
own caption, and no caption turns x@y into a mail link."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from support import REPO, run_snakemake
from docutils.core import publish_parts
from jinja2 import Environment

from isocompute.analysis.outputs.figure_index import ANALYSIS_FIGURES, figure_labels, markdown_html

DOC = REPO / "docs" / "figures.md"


def _rows() -> list[list[str]]:
    lines = [l for l in DOC.read_text().splitlines() if l.startswith("|")]
    return [[c.strip() for c in l.strip("|").split("|")] for l in lines[2:]]


def test_every_paper_figure_has_a_row():
    figs = [r[0] for r in _rows()]
    for number in [*map(str, range(2, 15)), "20"]:
        assert any(number in re.split(r"[^0-9]+", f) for f in figs), f"Fig. {number} has no row"
    text = " ".join(r[1] for r in _rows())
    for topic in ("AIME24", "decoupled baseline", "tokens", "fixed `B`", "Extremely Hard"):
        assert topic in text, topic


def test_named_files_are_drawn_by_the_code():
    source = "\n".join(p.read_text() for p in (REPO / "src" / "isocompute").rglob("*.py"))
    for row in _rows():
        for stem in re.findall(r"figures/([a-z0-9_]+)`", row[2]):
            assert re.search(rf'[/"]{stem}\b', source), f"{stem} (Fig. {row[0]}) is drawn by no code"


def test_markdown_html_renders_the_table():
    page = markdown_html("# T\n\nSome `code` and **bold**.\n\n| a | b |\n|---|---|\n| `x<y` | [l](u.md) |\n")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<h1>T</h1>" in page and "<code>code</code>" in page and "<strong>bold</strong>" in page
    assert re.search(r"<th>a</th>\s*<th>b</th>", page) and "<td><code>x&lt;y</code></td>" in page
    assert '<a href="u.md">l</a>' in page
    assert markdown_html(DOC.read_text()).count("<tr>") == len(_rows()) + 1


def _drawn_figures() -> list[str]:
    source = (REPO / "src" / "isocompute" / "analysis" / "plots" / "__init__.py").read_text()
    return re.findall(r'fig_dir / "([a-z0-9_]+)"', source)


def test_report_lists_the_figures_in_paper_order():
    drawn = _drawn_figures()
    assert drawn and set(drawn) <= {name for name, _ in ANALYSIS_FIGURES}, "a figure plot_all draws has no place"
    # The report sorts by the first label as text: that order must be the paper's, fig5 ... fig11 first.
    listed = sorted((name for name, _ in ANALYSIS_FIGURES), key=lambda n: figure_labels(n)["order"])
    assert listed[:7] == ["fig5_record_points", "fig6_frontier", "fig7_n_star", "fig8_metric_optima",
                          "fig9_fixed_batch", "fig10_sensitivity", "fig11_interference"]
    assert listed[7] == "mechanism_zero_variance" and all(n.startswith("appendix_") for n in listed[8:])
    assert figure_labels("fig99_new")["order"] > max(figure_labels(n)["order"] for n in listed)


def _caption(name: str, text: str, wildcards: dict) -> str:
    """A caption as `snakemake --report` renders it: Jinja (trim and lstrip blocks), then docutils."""
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    snakemake = SimpleNamespace(wildcards=SimpleNamespace(**wildcards), config={
        "experiment": "demo", "analysis": {"metric": None, "method": "noise"}, "eval": {"k": 4}})
    rst = env.from_string(text).render(snakemake=snakemake, files=[], categories={})
    return publish_parts(rst, writer="html")["body"]


def test_every_figure_has_its_own_caption():
    text = (REPO / "workflow" / "report" / "figures.rst").read_text()
    captions = {name: _caption(name, text, {"name": name, "split": "easy"}) for name, _ in ANALYSIS_FIGURES}
    firsts = {name: c.split("</p>")[0] for name, c in captions.items()}
    assert len(set(firsts.values())) == len(firsts), "two figures share a caption"
    for name, first in firsts.items():
        assert "<strong>easy</strong>" in first and ".csv" in first, name
    assert "avg&#64;4" in captions["fig6_frontier"] + captions["fig5_record_points"]
    assert "fig99_new" in _caption("fig99_new", text, {"name": "fig99_new", "split": "easy"})


@pytest.mark.parametrize("rst", sorted((REPO / "workflow" / "report").glob("*.rst")), ids=lambda p: p.name)
def test_no_caption_renders_a_mail_link(rst):
    text = rst.read_text()
    wildcards = {"name": "fig5_record_points", "split": "easy", "table": "summary"}
    for table in ("summary", "recommendations"):
        page = _caption(rst.stem, text, {**wildcards, "table": table})
        assert "mailto:" not in page, f"{rst.name}: an x@y outside ``literal`` is rendered as a mail link"


@pytest.mark.slow
def test_figure_index_rule_renders_the_doc(workdir):
    run_snakemake(workdir, "--cores", "1", "results/embedded/figure_index.html")
    page = (workdir / "results" / "embedded" / "figure_index.html").read_text()
    assert "fig6_frontier" in page and page.count("<tr>") == len(_rows()) + 1
