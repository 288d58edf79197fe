"""Reading evaluation tables at the edge of the analysis: CSV, parquet, or
verl's file-logger JSONL (`{"step": N, "data": {...}}` per line).

verl's validation writes `val-core/<data_source>/<var>/mean@<k>` (var = 'acc'
when the reward function reports it, else 'reward'); that becomes `avg@<k>`.
Its `best@k/mean` and `worst@k/mean` are bootstrap estimates biased towards
middling values (docs/methods.md section 5), so they are read only on request.
B_p and n come from the command line or a sidecar `<file>.meta.json`; the
sidecar may also say how many validation problems (`problems`) and samples
per problem (`samples`) each evaluation used, which gives the noise method
each evaluation's standard error (a verl log does not record them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.errors import InputError

_MEAN_KEY = re.compile(r"^val-(?:core|aux)/(?P<ds>.+)/(?P<var>[^/]+)/mean@(?P<k>\d+)$")
_BOOT_KEY = re.compile(r"^val-(?:core|aux)/(?P<ds>.+)/(?P<var>[^/]+)/(?P<stat>best|worst)@(?P<k>\d+)/mean$")
RESPONSE_LENGTH_KEY = "response_length/mean"


def sidecar_path(path: Path | str) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".meta.json")


def read_sidecar(path: Path | str) -> dict:
    """`<file>.meta.json` next to `path` ({"B_p": .., "n": ..}), or {} if absent."""
    meta = sidecar_path(path)
    if not meta.is_file():
        return {}
    try:
        data = json.loads(meta.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{meta}: cannot read sidecar JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{meta}: expected a JSON object with keys 'B_p' and 'n'")
    return data


def _record(line: str, lineno: int, source: str) -> tuple[int, dict]:
    """(step, data) of one verl file-logger line; InputError naming the line otherwise."""
    try:
        rec = json.loads(line)
    except ValueError:
        raise InputError(f"{source}: line {lineno} is not valid JSON") from None
    if not isinstance(rec, dict) or "step" not in rec or not isinstance(rec.get("data"), dict):
        raise InputError(f"{source}: line {lineno}: expected {{\"step\": N, \"data\": {{...}}}}")
    step = rec["step"]
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise InputError(f"{source}: line {lineno}: column 'step' must be a non-negative integer, got {step!r}")
    return step, rec["data"]


def _validation_metrics(data: dict, verl_best_worst: bool) -> dict:
    """{(data source, var, stat, k): value} of one record's validation metrics (stat 'avg', and
    'best'/'worst' with `verl_best_worst`)."""
    found = {}
    for key, value in data.items():
        m = _MEAN_KEY.match(key)
        if m:
            found[(m["ds"], m["var"], "avg", int(m["k"]))] = value
            continue
        m = _BOOT_KEY.match(key) if verl_best_worst else None
        if m:
            found[(m["ds"], m["var"], m["stat"], int(m["k"]))] = value
    return found


def _validation_row(step: int, mine: dict) -> dict | None:
    """One evaluation row from one data source's metrics ({(var, stat, k): value}): the accuracy
    ('acc', else 'reward') at its largest k with a mean; None when it has no mean."""
    var = "acc" if any(v == "acc" for v, *_ in mine) else "reward"
    ks = [kk for v, stat, kk in mine if v == var and stat == "avg"]
    if not ks:
        return None
    k = max(ks)
    row = {"step": step}
    for stat in ("avg", "best", "worst"):
        if (var, stat, k) in mine:
            value = mine[(var, stat, k)]
            row[f"{stat}@{k}"] = np.nan if value is None else float(value)
    return row


def parse_verl_jsonl(lines, B_p: int, n: int, *, data_source: str | None = None,
                     verl_best_worst: bool = False, source: str = "JSONL") -> pd.DataFrame:
    """Evaluation rows from verl file-logger records (an iterable of JSON strings).

    One row per logged step that carries validation metrics: step, compute =
    B_p*n*step, avg@k (and best@k/worst@k with `verl_best_worst`), and tokens
    (cumulative generated tokens, response_length/mean x B_p x n summed over
    training steps) when every training step up to the last evaluation logged
    its response length.
    """
    rows: dict[int, dict] = {}
    lengths: dict[int, float] = {}
    sources: set[str] = set()
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        step, data = _record(line, lineno, source)
        if RESPONSE_LENGTH_KEY in data and data[RESPONSE_LENGTH_KEY] is not None:
            lengths[step] = float(data[RESPONSE_LENGTH_KEY])
        found = _validation_metrics(data, verl_best_worst)
        if not found:
            continue
        sources.update(ds for ds, *_ in found)
        if data_source is None and len(sources) > 1:
            raise InputError(f"{source}: validation metrics for several data sources ({', '.join(sorted(sources))}); "
                             "choose one (--data-source)")
        ds = data_source if data_source is not None else next(iter(sources))
        row = _validation_row(step, {key[1:]: v for key, v in found.items() if key[0] == ds})
        if row is None:
            continue
        if step in rows and rows[step] != row:
            raise InputError(f"{source}: step {step} logged twice with different validation metrics "
                             "(duplicate (B_p, n, step) in column 'step')")
        rows[step] = row
    if data_source is not None and data_source not in sources:
        have = ", ".join(sorted(sources)) or "none"
        raise InputError(f"{source}: no validation metrics for data source {data_source!r} (have: {have})")
    if not rows:
        raise InputError(f"{source}: no validation metrics (keys 'val-core/<data_source>/<var>/mean@<k>')")
    df = pd.DataFrame([rows[s] for s in sorted(rows)])
    df.insert(0, "n", int(n))
    df.insert(0, "B_p", int(B_p))
    df.insert(3, "compute", df["B_p"] * df["n"] * df["step"])
    last = int(df["step"].max())
    if last > 0 and all(s in lengths for s in range(1, last + 1)):
        per_step = np.array([0.0] + [lengths[s] for s in range(1, last + 1)]) * B_p * n
        df["tokens"] = np.cumsum(per_step)[df["step"].to_numpy()]
    return df


def _run_meta(path: Path, B_p, n) -> tuple[int, int]:
    meta = read_sidecar(path)
    B_p = meta.get("B_p") if B_p is None else B_p
    n = meta.get("n") if n is None else n
    for name, value in (("B_p", B_p), ("n", n)):
        if value is None:
            raise InputError(f"{path}: a verl JSONL log needs {name}: pass --bp B_P --n N or write "
                             f"{sidecar_path(path).name} with {{\"B_p\": .., \"n\": ..}}")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"{path}: {name} must be a positive integer, got {value!r}")
    return B_p, n


def read_evals(path: Path | str, *, B_p: int | None = None, n: int | None = None,
               data_source: str | None = None, verl_best_worst: bool = False) -> pd.DataFrame:
    """Read an evaluation table (.csv, .parquet/.pq, or verl .jsonl).

    For CSV/parquet, `B_p`/`n` fill those columns when the file lacks them
    (a single run's table), as does a sidecar. Unreadable files raise
    InputError; the columns are checked later (`check.check_evals`).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            df = pd.read_csv(path)
        elif suffix in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        elif suffix in (".jsonl", ".json", ".log"):
            B_p, n = _run_meta(path, B_p, n)
            with open(path) as fh:
                df = parse_verl_jsonl(fh, B_p, n, data_source=data_source,
                                      verl_best_worst=verl_best_worst, source=str(path))
            return _with_eval_counts(df, read_sidecar(path))
        else:
            raise InputError(f"{path}: unknown table format '{suffix}' (expected .csv, .parquet or .jsonl)")
    except InputError:
        raise
    except (OSError, ValueError, UnicodeDecodeError, ImportError) as exc:
        raise InputError(f"{path}: cannot read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    meta = read_sidecar(path)
    for name, given in (("B_p", B_p), ("n", n)):
        if given is not None and name in df.columns:
            raise InputError(f"{path}: --{'bp' if name == 'B_p' else 'n'} given but the table has a column "
                             f"'{name}'")
        value = given if given is not None else meta.get(name)
        if name not in df.columns and value is not None:
            df[name] = value
    return _with_eval_counts(df, meta)


def _with_eval_counts(df: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Columns problems / samples from the sidecar, where the table lacks them."""
    for name in ("problems", "samples"):
        if name in meta and name not in df.columns:
            df[name] = meta[name]
    return df


def read_train(path: Path | str) -> pd.DataFrame:
    """Read a per-step training table (.csv or .parquet)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        if path.suffix.lower() == ".csv":
            return pd.read_csv(path)
        if path.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(path)
    except (OSError, ValueError, UnicodeDecodeError, ImportError) as exc:
        raise InputError(f"{path}: cannot read ({type(exc).__name__})") from None
    raise InputError(f"{path}: unknown table format '{path.suffix}' (expected .csv or .parquet)")
