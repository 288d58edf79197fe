"""The figure index (docs/figures.md) as one HTML page for `snakemake --report`.

docs/figures.md is the one home of which config, rule and file produce each of
the paper's figures; the `figure_index` rule renders it here so the report
carries the same table. Only what that page uses: headings, paragraphs, pipe
tables, `code`, **bold** and [links](...).
"""

from __future__ import annotations

import html
import re

_INLINE = [
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
    (re.compile(r"\*\*([^*]+)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)"), r'<a href="\2">\1</a>'),
]


def _inline(text: str) -> str:
    out = html.escape(text, quote=False)
    for pattern, repl in _INLINE:
        out = pattern.sub(repl, out)
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    head, rows = _cells(lines[0]), [_cells(l) for l in lines[2:]]   # lines[1]: the |---| rule
    out = ["<table>", "<thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead>", "<tbody>"]
    out += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows]
    return "\n".join(out + ["</tbody>", "</table>"])


def markdown_html(text: str, *, title: str = "Figure index") -> str:
    """A whole HTML page from the Markdown of docs/figures.md."""
    blocks, body = [], []
    for line in text.splitlines() + [""]:
        if line.strip() and (not body or body[0].startswith("|") == line.startswith("|")):
            body.append(line)
            continue
        if body:
            blocks.append(body)
        body = [line] if line.strip() else []
    parts = []
    for block in blocks:
        if block[0].startswith("|"):
            parts.append(_table(block))
        elif block[0].startswith("#"):
            level = len(block[0]) - len(block[0].lstrip("#"))
            parts.append(f"<h{level}>{_inline(block[0].lstrip('#').strip())}</h{level}>")
            if block[1:]:
                parts.append(f"<p>{_inline(' '.join(block[1:]))}</p>")
        else:
            parts.append(f"<p>{_inline(' '.join(block))}</p>")
    style = ("body{font-family:sans-serif;font-size:14px;margin:1.5em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}th{background:#eee}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head>\n<body>\n" + "\n".join(parts) + "\n</body></html>\n")
