"""mkdocs hook: the reference pages made from the source at build time, so they cannot
drift from it. `reference/config.md` renders the config schema (src/isocompute/schema.yaml:
every key's type, default and description); `reference/cli.md` prints `isocompute --help`
and each command's help as the installed parser builds it. Neither page exists on disk;
mkdocs.yml's nav names them (GENERATED below), and tests/project/test_docs.py checks both lists."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import yaml
from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "src" / "isocompute" / "schema.yaml"
GENERATED = ("reference/config.md", "reference/cli.md")


def on_files(files, config):
    pages = {"reference/config.md": schema_page(), "reference/cli.md": cli_page()}
    assert set(pages) == set(GENERATED)
    for uri, text in pages.items():
        files.append(File.generated(config, uri, content=text))
    return files


# --- the config schema --------------------------------------------------------------------


def _cell(text: str) -> str:
    """Schema text as one table cell: pipes escaped, and `<` outside code spans too, so that
    results/<experiment>/ is not read as an HTML tag."""
    parts = str(text).replace("|", "\\|").replace("\n", " ").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _type(node: dict) -> str:
    if "$ref" in node:
        return f"`{node['$ref'].split('/')[-1]}` ({_ref_link(node['$ref'])})"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    t = node.get("type", "")
    types = t if isinstance(t, list) else [t]
    shown = ", ".join(x for x in types if x)
    if "array" in types and isinstance(node.get("items"), dict):
        shown = f"array of {_type(node['items']) or 'values'}"
    for bound, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                        ("exclusiveMaximum", "<")):
        if bound in node:
            shown += f", {sign} {node[bound]}"
    if "anyOf" in node or "oneOf" in node:
        shown = shown or " or ".join(_type(n) or "object" for n in node.get("anyOf", node.get("oneOf", [])))
    return shown


def _ref_link(ref: str) -> str:
    name = ref.split("/")[-1]
    if ref.startswith("#/$defs/"):
        return f"[below](#defs-{name})"
    return "the key of that name in `train`"


def _default(node: dict) -> str:
    if "default" not in node:
        return ""
    value = node["default"]
    if isinstance(value, (dict, list)) and len(json.dumps(value)) > 60:
        return "(see the schema)"
    return f"`{json.dumps(value)}`"


def _rows(node: dict, prefix: str) -> list[str]:
    """One table row per key, depth first, children after their parent."""
    rows = []
    for key, child in (node.get("properties") or {}).items():
        path = f"{prefix}.{key}" if prefix else key
        rows.append(f"| `{path}` | {_cell(_type(child))} | {_cell(_default(child))} | "
                    f"{_cell(child.get('description', ''))} |")
        rows += _rows(child, path)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        names = node.get("propertyNames", {}).get("enum")
        key = f"{prefix}.<{'|'.join(names) if names else 'name'}>"
        rows.append(f"| `{key}` | {_cell(_type(extra))} | | one entry per name |")
    return rows


TABLE_HEAD = ["| key | type | default | description |", "|---|---|---|---|"]


def schema_page() -> str:
    schema = yaml.safe_load(SCHEMA.read_text())
    out = ["# Config reference",
           "",
           "Every key of a study config, generated at build time from the schema the pipeline "
           "validates against (`src/isocompute/schema.yaml`, linked as `config/schema.yaml`). "
           "An unknown key, a wrong type or a key given twice stops the run before any job, "
           "naming the key. Defaults are the paper's scale, not the embedded study's "
           "([how a config is read](../config-files.md#how-a-config-is-read)).",
           ""]
    for key, node in schema["properties"].items():
        out += [f"## `{key}`", "", _cell(node.get("description", "")), "", *TABLE_HEAD]
        out.append(f"| `{key}` | {_cell(_type(node))} | {_cell(_default(node))} | |")
        out += _rows(node, key)
        out.append("")
    out += ["## Shared definitions (`$defs`)", "",
            "Types the keys above refer to.", ""]
    for name, node in schema.get("$defs", {}).items():
        out += [f"### defs.{name} {{#defs-{name}}}", "", _cell(node.get("description", "")), ""]
        rows = _rows(node, name)
        if rows:
            out += [*TABLE_HEAD, *rows]
        else:
            out.append(f"Type: {_cell(_type(node))}.")
        out.append("")
    return "\n".join(out)


# --- the command line ---------------------------------------------------------------------


def _help(parser) -> str:
    with contextlib.redirect_stdout(io.StringIO()) as buffer:
        parser.print_help()
    return buffer.getvalue()


def cli_page() -> str:
    import os

    os.environ.setdefault("COLUMNS", "100")
    from isocompute.cli import USER_TITLE, build_parser, command_groups

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    tools = [name for name, _ in command_groups(sub)[USER_TITLE]]
    out = ["# Command line", "",
           "`isocompute --help` and the help of every command a person types, generated at "
           "build time from the installed parser (`src/isocompute/cli/`). The pipeline "
           "stages' own commands, which the Snakemake rules run with `--params`, are listed "
           "at the end of the first block.", "",
           "```text", _help(parser).rstrip(), "```", ""]
    for name in tools:
        out += [f"## `isocompute {name}`", "", "```text", _help(sub.choices[name]).rstrip(), "```", ""]
    return "\n".join(out)
