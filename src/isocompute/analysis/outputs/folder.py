"""The tables folder `isocompute analyze` writes (analysis/{split}/tables/), and the one
reader of it that figures, headline, recommend and compare use.

`write_manifest` is the last file `write_analysis` puts in the folder before it is swapped
in: MANIFEST.json, each file's sha256 and, for a CSV, its row count. `read_tables`
checks every file it reads against it, so a table cut short or edited since is refused
by name instead of being answered from. A folder without one (an older study, or tables
made by hand) is read with a warning. Either way the columns the advisor reads are
checked (`check_table`): present, filled where a value is needed, numbers where numbers.
"""

from __future__ import annotations

import csv
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute import atomic
from isocompute.analysis.fits.sigmoid import FLAT, NO_BASE, NO_POSITIVE, OK, TOO_FEW, USABLE
from isocompute.analysis.frontier.nstar import GOOD_LAW, LAW_STATUSES
from isocompute.errors import InputError

log = logging.getLogger("isocompute")
_warned: set[Path] = set()   # folders already said to have no manifest (one warning each)

MANIFEST_FILE = "MANIFEST.json"
PARAMS_FILE = "params.json"
RERUN = "re-run `isocompute analyze`"

# results key -> file name; keys absent from the results are skipped.
TABLE_FILES = {
    "summary": "summary.csv",
    "records": "records.csv",
    "fits": "fits.csv",
    "frontier": "frontier.csv",
    "n_star_fit": "n_star_fit.csv",
    "n_star_fit_draws": "n_star_fit_draws.csv",
    "bootstrap_fits": "bootstrap_fits.csv",
    "recommendations": "recommendations.csv",
    "extrapolation": "extrapolation.csv",
    "frontier_fixed_batch": "frontier_fixed_batch.csv",
    "n_star_fit_fixed_batch": "n_star_fit_fixed_batch.csv",
    "frontier_joint": "frontier_joint.csv",
    "n_star_fit_joint": "n_star_fit_joint.csv",
    "optima": "optima.csv",
    "frontier_metrics": "frontier_metrics.csv",
    "sensitivity": "sensitivity.csv",
    "interference": "interference.csv",
    "mechanism": "mechanism.csv",
    "fits_tokens": "fits_tokens.csv",
    "frontier_tokens": "frontier_tokens.csv",
    "n_star_fit_tokens": "n_star_fit_tokens.csv",
    "timings": "timings.csv",
    "base": "base.csv",
    "record_points_pooled": "record_points_pooled.csv",
    "record_fit_pooled": "record_fit_pooled.csv",
}


def table_file(key: str) -> str:
    """The file name of table `key` in a tables folder; ValueError naming the keys for another."""
    if key not in TABLE_FILES:
        raise ValueError(f"no analysis table {key!r}; the tables are {', '.join(TABLE_FILES)}")
    return TABLE_FILES[key]

FIT_STATUSES = (OK, FLAT, TOO_FEW, NO_POSITIVE, NO_BASE)
_CURVE = ("R0", "A", "B", "C_mid", "compute_min", "compute_max")
_LAW = ("L", "U", "k", "c0")
_FLAT_UNSET = ((FLAT, ("B", "C_mid")),)   # a flat fit is its base value A = R0: no rise, no midpoint


@dataclass(frozen=True)
class TableRule:
    """What a reader needs of one table: `ids` whole numbers always present, `status` one
    of `statuses`, and `values` numbers present in the rows whose status is in `needed_for`,
    except those `unset` leaves empty for a status (a flat curve has no B or C_mid)."""
    ids: tuple[str, ...]
    statuses: tuple[str, ...]
    values: tuple[str, ...]
    needed_for: tuple[str, ...]
    unset: tuple[tuple[str, tuple[str, ...]], ...] = ()


# The tables the advisor (`analysis.frontier.recommend`) answers from, by TABLE_FILES key.
TABLE_RULES = {
    "fits": TableRule(("B_p", "n"), FIT_STATUSES, _CURVE, USABLE, _FLAT_UNSET),
    "bootstrap_fits": TableRule(("replicate", "B_p", "n"), FIT_STATUSES, _CURVE, USABLE, _FLAT_UNSET),
    "n_star_fit": TableRule(("B_p",), LAW_STATUSES, _LAW, GOOD_LAW),
    "n_star_fit_draws": TableRule(("B_p", "replicate"), LAW_STATUSES, _LAW, GOOD_LAW),
}


def _csv_rows(path: Path) -> int | None:
    """Data rows of a CSV (records after the header; quoted newlines stay inside a record);
    None when the file is not CSV text (binary bytes)."""
    try:
        with open(path, newline="") as fh:
            return max(0, sum(1 for _ in csv.reader(fh)) - 1)
    except (UnicodeDecodeError, csv.Error):
        return None


def write_manifest(folder: Path | str) -> Path:
    """MANIFEST.json of the files directly in `folder` (not figures/): sha256, bytes, CSV rows.
    Written beside the tables, it changes none of them."""
    folder = Path(folder)
    files = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name not in (MANIFEST_FILE, atomic.OUTPUT_MARK):
            entry = {"sha256": atomic.sha256_file(path), "bytes": path.stat().st_size}
            if path.suffix == ".csv":
                entry["rows"] = _csv_rows(path)
            files[path.name] = entry
    return atomic.write_json(folder / MANIFEST_FILE, {"written_by": "isocompute analyze", "files": files})


class TablesFolder:
    """A tables folder, its manifest read once; `path(name)` is a file checked against it."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.manifest = self._read_manifest()

    def _read_manifest(self) -> dict | None:
        path = self.folder / MANIFEST_FILE
        if not path.is_file():
            if self.folder.resolve() in _warned:
                return None
            _warned.add(self.folder.resolve())
            log.warning("%s: no %s (tables from before it, or made by hand): their files cannot be checked "
                        "against what analyze wrote; reading them as they are", self.folder, MANIFEST_FILE)
            return None
        try:
            files = json.loads(path.read_text())["files"]
            if not isinstance(files, dict) or not all(isinstance(e, dict) and "sha256" in e for e in files.values()):
                raise ValueError("entries without sha256")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}: not a manifest written by analyze ({atomic.error_line(exc)}); {RERUN}") from None
        return files

    def path(self, name: str) -> Path | None:
        """The file `name` if present (None if absent and not in the manifest), checked."""
        path = self.folder / name
        entry = None if self.manifest is None else self.manifest.get(name)
        if not path.is_file():
            if entry is not None:
                raise InputError(f"{path}: missing, but analyze wrote it ({MANIFEST_FILE}); {RERUN}")
            return None
        if self.manifest is None:
            return path
        if entry is None:
            raise InputError(f"{path}: not written by analyze (not in {MANIFEST_FILE}); remove it or {RERUN}")
        if atomic.sha256_file(path) != entry["sha256"]:
            rows = ""
            if "rows" in entry:
                now = _csv_rows(path)
                rows = f", {entry['rows']} rows then, " + ("not CSV text now" if now is None else f"{now} now")
            raise InputError(f"{path}: changed since analyze wrote it (sha256 differs from {MANIFEST_FILE}{rows}); "
                             f"{RERUN}")
        return path

    def table(self, key: str) -> pd.DataFrame | None:
        """Table `key` of TABLE_FILES (None when absent, an empty file an empty table), checked."""
        path = self.path(table_file(key))
        if path is None:
            return None
        if self.manifest is None and _cut_mid_row(path):
            raise InputError(f"{path}: ends mid-row (no newline after its last row): cut short?; {RERUN}, or "
                             "end the file with a newline if it is whole")
        try:
            df = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            df = pd.DataFrame()
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError) as exc:
            raise InputError(f"{path}: not a readable CSV table ({atomic.error_line(exc)})") from None
        if key in TABLE_RULES and not df.empty:
            check_table(df, TABLE_RULES[key], path)
        return df

    def params(self) -> dict | None:
        """params.json (the settings the tables were computed with), None when absent."""
        path = self.path(PARAMS_FILE)
        if path is None:
            return None
        try:
            params = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"{path}: not valid JSON ({type(exc).__name__}: {exc}); {RERUN}") from None
        if not isinstance(params, dict):
            raise InputError(f"{path}: expected a JSON object of analysis settings, got {type(params).__name__}")
        return params


def _cut_mid_row(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return False
        fh.seek(-1, 2)
        return fh.read(1) not in (b"\n", b"\r")


def check_table(df: pd.DataFrame, rule: TableRule, path: Path) -> None:
    """The columns of `rule` in `df` (read from `path`): InputError naming the file, column and line."""
    columns = (*rule.ids, "status", *rule.values)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{path}: no column {missing[0]!r} (expected {', '.join(columns)})")
    line = lambda i: f"line {int(i) + 2}"   # noqa: E731  (1-based, after the header)
    status = df["status"]
    unknown = ~status.isin(rule.statuses)
    if unknown.any():
        i = np.flatnonzero(unknown.to_numpy())[0]
        raise InputError(f"{path}: column 'status', {line(i)}: expected one of {', '.join(rule.statuses)}, "
                         f"got {status.iloc[i]!r}")
    needed = status.isin(rule.needed_for).to_numpy()
    for col in (*rule.ids, *rule.values):
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        given = df[col].notna().to_numpy()
        bad = given & np.isnan(values)
        if bad.any():
            i = np.flatnonzero(bad)[0]
            raise InputError(f"{path}: column {col!r}, {line(i)}: expected a number, got {df[col].iloc[i]!r}")
        required = np.ones(len(df), bool) if col in rule.ids else needed.copy()
        for unset_status, unset_columns in rule.unset:
            if col in unset_columns:
                required &= (status != unset_status).to_numpy()
        hole = required & ~given
        if hole.any():
            i = np.flatnonzero(hole)[0]
            why = "" if col in rule.ids else f" (status {status.iloc[i]!r})"
            raise InputError(f"{path}: column {col!r}, {line(i)}: missing value{why}")
        if col in rule.ids and not np.all(values == np.round(values)):
            i = np.flatnonzero(values != np.round(values))[0]
            raise InputError(f"{path}: column {col!r}, {line(i)}: expected a whole number, got {df[col].iloc[i]!r}")
    if "replicate" in rule.ids and "n" in rule.ids:
        _check_replicates(df, path)


def _check_replicates(df: pd.DataFrame, path: Path) -> None:
    """Every bootstrap replicate of a B_p holds the same cells (the replicate frontiers stack them)."""
    for B_p, g in df.groupby("B_p", sort=True):
        sizes = g.groupby("replicate").size()
        if sizes.nunique() > 1:
            short = sizes.idxmin()
            raise InputError(f"{path}: replicate {short} of B_p {B_p} holds {sizes.min()} cells, others "
                             f"{sizes.max()}: cut short?; {RERUN}")


def read_tables(folder: Path | str, keys=None) -> tuple[dict[str, pd.DataFrame], dict | None]:
    """The tables `write_analysis` wrote in `folder` (only `keys` of TABLE_FILES when given;
    absent ones left out, an empty file an empty table) and params.json (None when absent),
    each checked against the folder's manifest."""
    tf = TablesFolder(folder)
    tables = {}
    for key in (TABLE_FILES if keys is None else keys):
        df = tf.table(key)
        if df is not None:
            tables[key] = df
    return tables, tf.params()


def settings_from_params(params: dict, folder: Path | str):
    """The `AnalysisSettings` of a folder's params.json, or InputError naming it."""
    from isocompute.analysis.fits.settings import AnalysisSettings

    try:
        return AnalysisSettings.from_json(params)
    except (TypeError, ValueError, KeyError) as exc:
        raise InputError(f"{Path(folder) / PARAMS_FILE}: not analysis settings ({type(exc).__name__}: {exc}); "
                         f"{RERUN}") from None


def load_analysis(out_dir: Path | str, evals: pd.DataFrame) -> dict:
    """The tables written by `write_analysis`, read back for plotting, with the settings
    they were computed with (params.json; without it, an analysis from before the noise method)."""
    tables, p = read_tables(out_dir)
    return {"evals": evals, **tables, "settings": settings_from_params(p or {}, out_dir),
            "split": (p or {}).get("split")}
