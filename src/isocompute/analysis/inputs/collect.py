"""Gathering a split's runs into the study tables the analysis reads: the
evaluation points of every run, and the training pass rates of the
interference figure and the mechanism table (the training batches', and the
fixed probe's when the runs have one; column `source`). In an adaptive sweep a stopped run is
gathered from the rung where it stopped. The only I/O is in `read_run_tables`."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from isocompute.atomic import read_json, read_parquet
from isocompute.errors import InputError
from isocompute.layout import RunFiles, RungFiles
from isocompute.train.run_logs import read_jsonl


def read_run_tables(run_dir: Path | str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(evals, train pass rates) of one run directory, or of a rung directory of one
    (runs/.../rungs/{rung}: a run an adaptive sweep stopped there, up to its stop step)."""
    stopped = Path(run_dir).parent.name == "rungs"
    scored = RungFiles(Path(run_dir)) if stopped else RunFiles(Path(run_dir))
    files = RunFiles(scored.run_dir)
    evals_path, marker = scored.evals, scored.marker
    for path in (evals_path, marker):
        if not path.is_file():
            raise InputError(f"{path}: missing; the run has not {'reached its rung' if stopped else 'finished'} "
                             "or was not scored")
    evals = read_parquet(evals_path)
    meta = read_json(marker)
    B_p, n = int(meta["B_p"]), int(meta["n"])
    last_step = int(meta["stop_at_step"]) if stopped else None
    # The training batches' pass rates (the mechanism table: zero-variance groups by n), and the
    # fixed probe's when the run has one (the same problems and draws for every n, at a nominal
    # matched compute: what the interference figure reads then).
    path = files.pass_rates
    batch = _read_log(path)
    batch = pd.DataFrame(columns=["step", "problem_id", "pass_rate"]) if batch is None else batch
    rates = batch.assign(source="batch", compute=batch["step"].astype("int64") * B_p * n)
    probe = _read_log(files.probe)
    if probe is not None:
        rates = pd.concat([rates, probe.assign(source="probe")], ignore_index=True)
    if last_step is not None and len(rates):
        rates = rates[rates["step"] <= last_step]
    rates = rates.assign(B_p=B_p, n=n, seed=int(meta.get("replicate", 0)))
    return evals, rates


def _read_log(path: Path) -> pd.DataFrame | None:
    """A run's append-only JSONL log as a frame (None when absent or empty): a torn last line, a
    killed writer's, is dropped with a warning, as resuming would; other damage raises InputError."""
    records = read_jsonl(path, warn=True)
    if not records:
        return None
    lines = [line for line in Path(path).read_text().splitlines() if line.strip()][:len(records)]
    return pd.read_json(io.StringIO("\n".join(lines)), lines=True)


def collect_runs(run_dirs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Concatenate runs, ordered by (B_p, n, step)."""
    evals, rates = zip(*(read_run_tables(d) for d in run_dirs)) if run_dirs else ((), ())
    if not evals:
        raise InputError("no runs to collect")
    all_evals = pd.concat(evals, ignore_index=True)
    keys = ["B_p", "n"] + (["seed"] if "seed" in all_evals.columns else []) + ["step"]
    all_evals = all_evals.sort_values(keys, kind="stable")
    all_rates = pd.concat(rates, ignore_index=True)
    if len(all_rates):
        all_rates = all_rates.sort_values(["B_p", "n", "seed", "source", "step", "problem_id"], kind="stable")
    return all_evals.reset_index(drop=True), all_rates.reset_index(drop=True)
