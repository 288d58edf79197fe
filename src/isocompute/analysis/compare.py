"""Studies side by side (config `compare`, paper Figs. 12 and 13): which
finished analyses a comparison reads, checked before any job, and their
tables read back for `plots.compare`.

An entry names experiments by name (results/{experiment}/) or by results
folder; each must hold `analysis/{split}/evals.parquet` and `tables/` for
every split it draws. They are finished studies of their own configs, so this
workflow cannot make them: a missing one stops it by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from isocompute.errors import ConfigError
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
    `made_here`, paths of its own analyses); else a ConfigError naming the
    entry, the experiment and the missing file."""
    made = set(made_here)
    for name, spec in cfg.get("compare", {}).items():
        labels = [e["label"] for e in spec["experiments"]]
        if len(set(labels)) < len(labels):
            raise ConfigError(f"compare.{name}.experiments: labels must differ, got {labels}")
        for i, entry in enumerate(spec["experiments"]):
            layout = experiment_layout(entry, root)
            for split in spec["splits"]:
                for path in (layout.analysis_evals(split), layout.analysis_tables(split)):
                    if path not in made and not os.path.exists(path):
                        who = entry.get("experiment") or entry["results"]
                        raise ConfigError(
                            f"compare.{name}.experiments[{i}] ({entry['label']!r}): no analysis of split "
                            f"{split!r} for experiment {who!r} (missing {path}); run that experiment's "
                            f"analysis first (snakemake --configfile <its config>)")


def load_comparison(sources: list[ComparedAnalysis]) -> list[tuple[ComparedAnalysis, dict]]:
    """Each source with its analysis tables (as `collect.load_analysis` reads them)."""
    from isocompute.analysis.collect import load_analysis

    loaded = []
    for src in sources:
        if not Path(src.evals).is_file() or not Path(src.tables).is_dir():
            raise ConfigError(f"{src.label}, split {src.split}: no analysis at {src.tables} and {src.evals}")
        loaded.append((src, load_analysis(src.tables, pd.read_parquet(src.evals))))
    return loaded
