"""The docs a newcomer reads cite what is in the repository: every methods citation
names docs/methods.md and its links reach a section, no issue tracker numbers (they mean
nothing to a reader of the repository), the `hf` command the project's huggingface_hub
ships, a licence and a guide to the config folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

READER_FILES = sorted({*REPO.glob("*.md"), *(REPO / "docs").glob("*.md"), *(REPO / "config").rglob("*.yaml"),
                       *(REPO / "config").glob("*.md"), *(REPO / "src").rglob("*.py"),
                       *(REPO / "src").rglob("*.yaml"), *(REPO / "rules").glob("*.smk"),
                       REPO / "Snakefile", REPO / "Makefile", *(REPO / "benchmarks").glob("*.py")})


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def methods_sections() -> dict[str, str]:
    """{section number: anchor} of docs/methods.md."""
    text = (REPO / "docs" / "methods.md").read_text()
    return {m.group(1): _slug(m.group(0)[3:]) for m in re.finditer(r"^## (\d+)\. .+$", text, flags=re.M)}


def test_methods_page_keeps_the_section_numbers_the_code_cites():
    assert list(methods_sections()) == [str(i) for i in range(1, 13)]
    cited = set()
    for path in READER_FILES:
        for m in re.finditer(r"docs/methods\.md,? sections? (\d+)(?:-(\d+))?", path.read_text()):
            cited.update(str(i) for i in range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    assert cited and cited <= set(methods_sections())


@pytest.mark.parametrize("path", READER_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_citation_of_an_absent_file_or_an_issue(path: Path):
    text = path.read_text()
    assert not re.search(r"METHODS(\.md)?\s+(sections?\s+)?\d", text), "cite docs/methods.md, section N"
    assert not re.search(r"\bissues?\s+#?\d", text, flags=re.I), "issue numbers mean nothing to a reader"
    assert "huggingface-cli" not in text, "the project's huggingface_hub ships `hf` (hf download, hf auth login)"


def test_markdown_links_to_methods_reach_a_section():
    anchors = set(methods_sections().values())
    links = [(md, m.group(1)) for md in READER_FILES if md.suffix == ".md"
             for m in re.finditer(r"\]\((?:docs/)?methods\.md#([^)]+)\)", md.read_text())]
    assert links
    for md, anchor in links:
        assert anchor in anchors, f"{md.relative_to(REPO)}: methods.md#{anchor}"


def test_licence_and_config_guide_exist():
    assert (REPO / "LICENSE").read_text().lstrip().startswith("Apache License\n")
    guide = (REPO / "config" / "README.md").read_text()
    for path in (REPO / "config").rglob("*.yaml"):
        assert str(path.relative_to(REPO / "config")) in guide, f"config/README.md does not describe {path.name}"


def test_every_test_the_fault_table_cites_exists():
    # docs/reliability.md holds each case to a test; a renamed or deleted test would leave
    # the table citing nothing.
    text = (REPO / "docs" / "reliability.md").read_text()
    cited = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", text)
    assert len(cited) > 30
    for path, name in cited:
        source = REPO / path
        assert source.is_file(), path
        if name:
            assert re.search(rf"^def {name}\(", source.read_text(), re.M), f"{path}::{name}"


def _floor(spec: str) -> tuple[int, int]:
    """The (major, minor) of a Requires-Python's `>=X.Y` clause."""
    m = re.search(r">=\s*(\d+)\.(\d+)", spec)
    assert m, f"no >= clause in {spec!r}"
    return int(m.group(1)), int(m.group(2))


def test_python_floor_is_one_and_covers_the_dependencies():
    # The README's "Python X.Y+" is pyproject's requires-python, and no pinned dependency
    # (Snakemake 9.27 needs 3.11) asks for a newer Python than the project states.
    import tomllib
    from importlib.metadata import PackageNotFoundError, metadata

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    floor = _floor(project["requires-python"])
    stated = re.findall(r"\bPython (\d+)\.(\d+)\+", (REPO / "README.md").read_text())
    assert stated and {(int(a), int(b)) for a, b in stated} == {floor}, (stated, floor)
    for requirement in project["dependencies"]:
        name = re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0)
        try:
            needs = metadata(name).get("Requires-Python")
        except PackageNotFoundError:
            continue
        if needs and ">=" in needs:
            assert _floor(needs) <= floor, f"{name} needs Python {needs}, the project states {floor}"
