"""The figure index (docs/figures.md): every paper figure has a row, the files it
names are the ones the code draws, and the `figure_index` rule renders it for
the report."""

from __future__ import annotations

import re

from conftest import REPO, run_snakemake

from isocompute.analysis.figure_index import markdown_html

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
    assert "<h1>T</h1>" in page and "<code>code</code>" in page and "<strong>bold</strong>" in page
    assert "<th>a</th><th>b</th>" in page and "<td><code>x&lt;y</code></td>" in page and '<a href="u.md">l</a>' in page
    assert markdown_html(DOC.read_text()).count("<tr>") == len(_rows()) + 1


def test_figure_index_rule_renders_the_doc(workdir):
    run_snakemake(workdir, "--cores", "1", "results/embedded/figure_index.html")
    page = (workdir / "results" / "embedded" / "figure_index.html").read_text()
    assert "fig6_frontier" in page and page.count("<tr>") == len(_rows()) + 1
