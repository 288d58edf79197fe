"""A run's JSONL logs (metrics, training pass rates) and validation dumps, which
a resumed run cuts back to its checkpoint step so that its records equal an
uninterrupted run's. Shared by both backends; no torch.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from isocompute import atomic
from isocompute.errors import InputError
from isocompute.layout import RunFiles

log = logging.getLogger(__name__)


def read_jsonl(path: Path, warn: bool = False) -> list[dict]:
    """Records of a JSONL file. A torn last line (a writer killed mid-line: what resuming cuts
    away, `truncate_jsonl`) is dropped, with a warning naming the file when `warn`; a torn line
    before others is damage no writer leaves and raises InputError naming the file and line."""
    if not Path(path).is_file():
        return []
    lines = [(i, line) for i, line in enumerate(Path(path).read_text().splitlines(), 1) if line.strip()]
    out = []
    for j, (i, line) in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if j < len(lines) - 1:
                raise InputError(f"{path}: line {i} is not JSON, and lines follow it (not a torn last line); "
                                 "the file is damaged: delete the run's folder and retrain it") from None
            if warn:
                log.warning("%s: dropped its torn last line %d (a writer killed mid-line)", path, i)
    return out


def append_jsonl(path: Path, records, sync: bool = True) -> None:
    """Append records: a log line, once written, survives a kill of the writer (the file is
    closed); with `sync`, fsynced too (survives the machine's crash). The local trainer
    appends every step without it and calls `sync_logs` before each checkpoint instead: the
    rows a resumed run keeps are on disk before the checkpoint it resumes from, without an
    fsync per step (~1-15 ms each, a tenth of a small run's step)."""
    with open(path, "a") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
        fh.flush()
        if sync:
            os.fsync(fh.fileno())


def sync_logs(files: RunFiles) -> None:
    """fsync the run's JSONL logs (those that exist)."""
    for path in (files.metrics, files.pass_rates, files.probe):
        if Path(path).is_file():
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())


def truncate_jsonl(path: Path, last_step: int) -> int:
    """Keep the records of steps <= last_step (and drop a torn last line). Returns records dropped."""
    if not path.exists():
        return 0
    kept, dropped = [], 0
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            dropped += 1
            continue
        if int(rec["step"]) <= last_step:
            kept.append(line)
        else:
            dropped += 1
    atomic.write_text(path, "".join(f"{line}\n" for line in kept))
    return dropped


def write_generations(directory: Path, step: int, records: list[dict]) -> Path:
    """One validation dump, written whole or not at all."""
    return atomic.write_jsonl(Path(directory) / f"{step}.jsonl", records)


def generation_steps(directory: Path) -> list[int]:
    if not Path(directory).is_dir():
        return []
    return sorted(int(p.stem) for p in Path(directory).glob("*.jsonl") if p.stem.isdigit())


def reset_logs(files: RunFiles, last_step: int | None) -> None:
    """Cut every log back to `last_step` (None: a fresh start, remove them)."""
    if last_step is None:
        shutil.rmtree(files.generations, ignore_errors=True)
        for p in (files.metrics, files.pass_rates, files.probe):
            p.unlink(missing_ok=True)
        return
    folders = [files.generations, *(p for p in Path(files.generations).glob("*") if p.is_dir())]
    for folder in folders:  # the own split's dumps, and each extra evaluation set's
        for step in generation_steps(folder):
            if step > last_step:
                (folder / f"{step}.jsonl").unlink()
    dropped = sum(truncate_jsonl(p, last_step) for p in (files.metrics, files.pass_rates, files.probe))
    if dropped:
        log.info("resume: dropped %d log records beyond step %d", dropped, last_step)
