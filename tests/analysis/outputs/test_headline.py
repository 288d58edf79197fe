"""The report's headline (isocompute.analysis.outputs.headline, rule `headline`): what it says follows
the claims of summary.csv, from an established law to no effect of n, and the tables it
shows are the advisor's; `isocompute headline` writes the page, its short form and the tables."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pandas as pd
from support import REPO
from docutils.core import publish_parts
from jinja2 import Environment

from isocompute.analysis.frontier import claims
from isocompute.analysis.outputs import headline
from isocompute.cli import main


def _summary(n_star, lo, hi, *, model="trend", p=1e-6, compute=(1e2, 1e3, 1e4)) -> pd.DataFrame:
    """summary.csv of one B_p (8) through the analysis's own claims, from a three-point frontier."""
    frontier = pd.DataFrame({"B_p": 8, "compute": compute, "n_star": n_star, "n_star_lo": lo, "n_star_hi": hi,
                             "comparable": True, "reward": [0.2, 0.4, 0.6], "reward_lo": [0.1, 0.3, 0.5],
                             "reward_hi": [0.3, 0.5, 0.7]})
    fits = pd.DataFrame({"B_p": 8, "n": [2, 8, 32], "model": model, "n_effect_p": p})
    laws = pd.DataFrame({"B_p": [8], "L": [1.0], "U": [5.0], "U_lo": [4.5], "U_hi": [5.5]})
    frontier = claims.frontier_claims(frontier, fits)
    return claims.summary_table(frontier, claims.law_claims(laws, frontier, fits), fits)


def test_an_established_law_is_said_with_its_band():
    summary = _summary([2, 8, 32], [2, 4, 16], [2, 16, 64])
    assert summary["law_claim"].iloc[0] == claims.RISES
    said = headline.verdict(summary)
    assert said.startswith("At every B_p (8): n* rises with compute (established; the law's log2 n* tends to "
                           "5.000 [4.500, 5.500]), n* = 32 [16, 64] at C = 10,000.")
    assert "<td>8</td><td>10,000</td><td>0.600 [0.500, 0.700]</td>" in headline.summary_html(summary, brief=True)


def test_no_effect_of_n_singles_out_no_n_star():
    summary = _summary([2, 8, 32], [2, 4, 16], [2, 16, 64], model="common", p=0.4)
    said = headline.verdict(summary)
    assert "no effect of n detected" in said and "rises" not in said and "n* = " not in said
    assert "yes (0.4)" in headline.summary_html(summary)


def test_an_undetermined_n_star_names_its_band():
    summary = _summary([2, 4, 8], [2, 2, 2], [4, 16, 64])
    said = headline.verdict(summary)
    assert "n* undetermined at C = 10,000 (its band [2, 64] spans more than two doublings of n)" in said
    assert "not established" in said


def test_b_p_that_differ_are_said_one_by_one():
    rise = _summary([2, 8, 32], [2, 4, 16], [2, 16, 64])
    flat = _summary([2, 8, 32], [2, 4, 16], [2, 16, 64], model="common", p=0.4).assign(B_p=16)
    said = headline.verdict(pd.concat([rise, flat], ignore_index=True))
    assert "At every B_p" not in said
    assert re.search(r"B_p = 8: n\* rises .* B_p = 16: no effect of n detected", said)


RECS = pd.DataFrame({"budget": [1e3, 4e4], "extrapolation": [1.0, 4.0], "direction": ["inside", "above"],
                     "B_p": [8, 8], "n_star": [8.0, 32.0], "n_star_lo": [4.0, 8.0], "n_star_hi": [16.0, 128.0],
                     "n_star_claim": ["n* = 8 [4, 16]", "undetermined: [8, 128]"], "n": [8, 8], "M": [16, 625],
                     "reward": [0.4, 0.7], "reward_lo": [0.3, 0.5], "reward_hi": [0.5, 0.8], "frontier_n_star": [8, 32]})


def test_body_is_a_scoped_fragment_with_the_advisor_table():
    summary = _summary([2, 8, 32], [2, 4, 16], [2, 16, 64])
    body = headline.headline_body("demo<1>", {"easy": (summary, RECS)})
    assert "<html" not in body and "demo&lt;1&gt;" in body
    rules = re.findall(r"([^{}]+)\{", re.search(r"<style>(.*?)</style>", body).group(1))
    assert rules and all(r.startswith(".isocompute-headline") for sel in rules for r in sel.split(","))
    table = body.split("What to train")[1]
    assert table.count("<tr>") == len(RECS) + 1
    assert "<td>40,000</td><td>8</td><td>8</td><td>625</td>" in table and "4x above" in table


def test_brief_gives_the_top_budget_inside_the_range():
    summary = _summary([2, 8, 32], [2, 4, 16], [2, 16, 64])
    brief = headline.headline_body("demo", {"easy": (summary, RECS)}, brief=True)
    assert "What to train" not in brief and "F-test p" not in brief and brief.count("<tr>") == 2
    assert "To train at C = 1,000: B_p = 8, n = 8, M = 16 steps (n* = 8 [4, 16]); reward 0.400 [0.300, 0.500]." in brief


def test_cli_writes_page_brief_and_tables(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    _summary([2, 8, 32], [2, 4, 16], [2, 16, 64]).assign(resampled="points").to_csv(tables / "summary.csv",
                                                                                      index=False)
    RECS.to_csv(tables / "recommendations.csv", index=False)
    out = tmp_path / "report"
    args = ["headline", f"easy={tables}", "--experiment", "demo", "--out", str(out / "headline.html"),
            "--brief", str(out / "headline_brief.html"), "--tables-out", str(out / "tables")]
    assert main(args) == 0
    page = (out / "headline.html").read_text()
    brief = (out / "headline_brief.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<html" not in brief and "To train at C = 1,000" in brief
    assert "do not hold run-to-run variation" in page
    recs = (out / "tables" / "easy" / "recommendations.html").read_text()
    assert recs.count("<tr") == len(RECS) + 1 and "undetermined: [8, 128]" in recs
    assert "<td>40000</td>" in recs and "<td>0.4</td>" in recs   # a budget in full, not 4e+04


def test_cli_names_a_missing_table(tmp_path, capsys):
    (tmp_path / "tables").mkdir()
    args = ["headline", f"easy={tmp_path / 'tables'}", "--experiment", "demo", "--out", str(tmp_path / "h.html"),
            "--brief", str(tmp_path / "b.html"), "--tables-out", str(tmp_path / "t")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("summary.csv: no such table (isocompute analyze writes it)") and "\n" not in err
    assert not (tmp_path / "h.html").exists()


def _landing(files) -> str:
    """workflow.rst as `snakemake --report` renders the landing page: Jinja, then docutils."""
    text = (REPO / "workflow" / "report" / "workflow.rst").read_text()
    rst = Environment(trim_blocks=True, lstrip_blocks=True).from_string(text).render(
        snakemake=SimpleNamespace(config={"experiment": "demo"}), files=files, categories={})
    return publish_parts(rst, writer="html")["html_body"]


def test_landing_page_embeds_the_brief_when_the_report_has_a_headline(tmp_path):
    (tmp_path / "headline.html").write_text("<p>page</p>")
    (tmp_path / "headline_brief.html").write_text('<div class="isocompute-headline">n* = 4 [2, 8]</div>')
    page = _landing([SimpleNamespace(path=tmp_path / "other.png"), SimpleNamespace(path=tmp_path / "headline.html")])
    assert '<div class="isocompute-headline">n* = 4 [2, 8]</div>' in page
    assert page.index("isocompute-headline") < page.index("About this study")
    assert "isocompute-headline" not in _landing([]) and "About this study" in _landing([])
