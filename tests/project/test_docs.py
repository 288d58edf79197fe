"""The docs a newcomer reads cite what is in the repository: every methods citation
names docs/methods.md and its links reach a section, no issue tracker numbers (they mean
nothing to a reader of the repository), the `hf` command the project's huggingface_hub
ships, a licence and a guide to the config folder. The README stays a front page, every
docs page is in the site's nav, and the strict site build fails on a broken link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support import REPO

READER_FILES = sorted({*REPO.glob("*.md"), *(REPO / "docs").rglob("*.md"), *(REPO / "config").rglob("*.yaml"),
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


def test_every_test_file_the_docs_and_the_code_cite_exists():
    # A moved or renamed test module would leave its citations naming nothing.
    cited = {(str(path.relative_to(REPO)), m.group(1)) for path in READER_FILES
             for m in re.finditer(r"(?<![\w/])(tests/[\w/]+\.py)\b", path.read_text())}
    assert len(cited) > 30
    assert sorted((path, test) for path, test in cited if not (REPO / test).is_file()) == []


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


# --- the front page and the docs site ------------------------------------------------------

README_MAX_LINES = 250
# Measurements of the project's own development belong on the docs pages, not the front page.
README_BANNED = ("fresh clone", "this release", "quiet machine", "loaded machine")


def test_readme_is_a_front_page():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES, f"README.md: {len(text.splitlines())} lines"
    for phrase in README_BANNED:
        assert phrase not in text.lower(), f"README.md says {phrase!r}: that goes to a docs page"


def _nav_pages(node) -> list[str]:
    """Every page file the mkdocs nav names, depth first."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_pages(value)]
    return []


def _generated_pages() -> tuple[str, ...]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_reference_hook", REPO / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GENERATED


def test_every_docs_page_is_in_the_nav_and_every_nav_page_exists():
    import yaml

    site = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    nav = _nav_pages(site["nav"])
    assert len(nav) == len(set(nav)), "a page is twice in the nav"
    on_disk = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")
               if "hooks" not in p.relative_to(REPO / "docs").parts}
    generated = set(_generated_pages())
    assert not on_disk & generated, "a generated page also exists on disk"
    assert on_disk - set(nav) == set(), "pages under docs/ that mkdocs.yml's nav leaves out"
    assert set(nav) - on_disk - generated == set(), "nav entries with no page"
    for name in ("omitted_files", "not_found"):
        assert site["validation"]["nav"][name] == "warn", name
    for name in ("not_found", "anchors", "unrecognized_links"):
        assert site["validation"]["links"][name] == "warn", name


def _docs_copy(tmp_path: Path) -> Path:
    """The site's sources in a scratch folder: mkdocs.yml, docs/, what the pages include."""
    import shutil

    work = tmp_path / "repo"
    shutil.copytree(REPO / "docs", work / "docs")
    shutil.copy(REPO / "mkdocs.yml", work / "mkdocs.yml")
    (work / "config").mkdir()
    shutil.copy(REPO / "config" / "README.md", work / "config" / "README.md")
    (work / "src").symlink_to(REPO / "src")
    return work


def _build(work: Path) -> "subprocess.CompletedProcess":
    import os
    import subprocess
    import sys

    mkdocs = Path(sys.executable).with_name("mkdocs")
    return subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(work / "site")], cwd=work,
                          capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


@pytest.mark.slow
def test_the_strict_docs_build_passes_and_fails_on_a_broken_link(tmp_path: Path):
    work = _docs_copy(tmp_path)
    proc = _build(work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for page in ("index.html", "reference/config/index.html", "reference/cli/index.html",
                 "reference/api-analysis/index.html", "config-files/index.html"):
        assert (work / "site" / page).is_file(), page
    schema_page = (work / "site" / "reference" / "config" / "index.html").read_text()
    assert "sweep.epsilon" in schema_page and "analysis.method" in schema_page
    assert "isocompute recommend" in (work / "site" / "reference" / "cli" / "index.html").read_text()

    with open(work / "docs" / "data.md", "a") as page:
        page.write("\nSee [a page](no-such-page.md) and [a section](methods.md#13-no-such-section).\n")
    (work / "docs" / "orphan.md").write_text("# Not in the nav\n")
    proc = _build(work)
    assert proc.returncode != 0
    assert "contains a link 'no-such-page.md', but the target is not found" in proc.stderr, proc.stderr[-3000:]
    assert "does not contain an anchor '#13-no-such-section'" in proc.stderr, proc.stderr[-3000:]
    assert "not included in the \"nav\" configuration:\n  - orphan.md" in proc.stderr, proc.stderr[-3000:]
    assert "Aborted with 3 warnings in strict mode" in proc.stdout + proc.stderr
