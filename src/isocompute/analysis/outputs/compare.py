"""Studies side by side (config `compare`, paper Figs. 12 and 13): which
finished analyses a comparison reads, checked before any job, and their
tables read back for `plots.compare`; a fixed B_p must be one every analysis ran.

An entry names experiments by name (results/{experiment}/) or by results
folder; each must hold `analysis/{split}/evals.parquet` and `tables/` for
every split it draws. They are finished studies of their own configs, so this
workflow cannot make them: a missing one stops it by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from isocompute.atomic import read_parquet
from isocompute.errors import ConfigError, InputError
from isocompute.layout import RESULTS_ROOT, StudyLayout


@dataclass(frozen=True)
class ComparedAnalysis:
    """One panel's source: an experiment's analysis of one split."""
    label: str
    split: str
    evals: str
    tables: str


def experiment_layout(entry: dict, root: str = RESULTS_ROOT) -> StudyLayout:
    """The layout of a compared experiment: `experiment` under `root`, or its `results` folder."""
    if entry.get("experiment"):
        return StudyLayout(entry["experiment"], root)
    results = os.path.normpath(entry["results"])
    return StudyLayout(os.path.basename(results), os.path.dirname(results) or ".")


def comparison_sources(spec: dict, root: str = RESULTS_ROOT) -> list[ComparedAnalysis]:
    """The analyses a comparison reads, by split (rows) then experiment (columns)."""
    out = []
    for split in spec["splits"]:
        for entry in spec["experiments"]:
            layout = experiment_layout(entry, root)
            out.append(ComparedAnalysis(entry["label"], split, layout.analysis_evals(split),
                                        layout.analysis_tables(split)))
    return out


def check_comparisons(cfg: dict, root: str = RESULTS_ROOT, *, made_here=()) -> None:
    """Every analysis each comparison reads exists (or is one this workflow makes:
    `made_here`, paths of its own analyses, or a mapping of them to the B_p values their
    grid trains), and ran the entry's B_p; else a ConfigError naming the entry, the
    experiment and the missing file or the B_p values it has."""
    made = dict(made_here) if isinstance(made_here, dict) else dict.fromkeys(made_here)
    for name, spec in cfg.get("compare", {}).items():
        labels = [e["label"] for e in spec["experiments"]]
        if len(set(labels)) < len(labels):
            raise ConfigError(f"compare.{name}.experiments: labels must differ, got {labels}")
        for i, entry in enumerate(spec["experiments"]):
            layout = experiment_layout(entry, root)
            who = entry.get("experiment") or entry["results"]
            for split in spec["splits"]:
                for path in (layout.analysis_evals(split), layout.analysis_tables(split)):
                    if path not in made and not os.path.exists(path):
                        raise ConfigError(
                            f"compare.{name}.experiments[{i}] ({entry['label']!r}): no analysis of split "
                            f"{split!r} for experiment {who!r} (missing {path}); run that experiment's "
                            f"analysis first (snakemake --configfile <its config>)")
                if spec["B_p"] is None:
                    continue
                tables = layout.analysis_tables(split)
                try:
                    have = made[tables] if tables in made else analysed_b_ps(tables)
                except InputError as exc:
                    raise ConfigError(f"compare.{name}.experiments[{i}] ({entry['label']!r}): {exc}") from None
                if have is not None:
                    check_b_p(f"compare.{name}.B_p", spec["B_p"], f"experiment {who!r}", split, have)


def analysed_b_ps(tables_dir: str) -> list[int]:
    """The B_p values whose runs an analysis fitted (its fits.csv, checked by `outputs.folder`)."""
    from isocompute.analysis.outputs.folder import read_tables

    fits = read_tables(tables_dir, ["fits"])[0].get("fits")
    return [] if fits is None or "B_p" not in fits.columns else sorted({int(b) for b in fits["B_p"]})


def check_b_p(key: str, B_p: int, who: str, split: str, have) -> None:
    """The fixed B_p drawn is one the analysis ran (else its panel is empty): ConfigError naming `key`."""
    have = sorted(int(b) for b in have)
    if int(B_p) not in have:
        raise ConfigError(f"{key}: {who} has no runs at B_p = {B_p} on split {split!r} (its B_p: "
                          f"{', '.join(map(str, have)) or 'none'}); choose one of them, or null for each "
                          "analysis's smallest")


def load_comparison(sources: list[ComparedAnalysis], *, B_p: int | None = None,
                    key: str = "B_p") -> list[tuple[ComparedAnalysis, dict]]:
    """Each source with its analysis tables (as `outputs.folder.load_analysis` reads them); with `B_p`,
    each must have run it (`check_b_p`, naming `key`)."""
    from isocompute.analysis.outputs.folder import load_analysis

    loaded = []
    for src in sources:
        if not Path(src.evals).is_file() or not Path(src.tables).is_dir():
            raise ConfigError(f"{src.label}, split {src.split}: no analysis at {src.tables} and {src.evals}")
        results = load_analysis(src.tables, read_parquet(src.evals))
        if B_p is not None:
            fits = results.get("fits")
            have = [] if fits is None or "B_p" not in fits.columns else fits["B_p"].unique()
            check_b_p(key, B_p, f"{src.label!r} ({src.tables})", src.split, have)
        loaded.append((src, results))
    return loaded
