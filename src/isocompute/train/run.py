"""A training run's files and the backend seam.

Run directory: the shared files of `isocompute.run_files`, plus the local
backend's
  checkpoint/state.pt        latest checkpoint (model, optimiser, RNG states, step, config hash)

A restarted run resumes from its checkpoint and first truncates every log
beyond the checkpoint step, so its records equal an uninterrupted run's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from isocompute.errors import InputError
from isocompute.run_files import RunFiles

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunPaths(RunFiles):
    """A run's files and its inputs."""
    train_file: Path
    val_file: Path
    model: str

    @property
    def checkpoint(self) -> Path:
        return Path(self.run_dir) / "checkpoint" / "state.pt"


# --- what identifies a run's training ------------------------------------------

def _file_digest(path: Path, chunk: int = 1 << 20) -> str:
    """Digest of a file; weight files over 64 MiB by size and their first and last MiB."""
    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    with open(path, "rb") as fh:
        if size <= 64 << 20:
            h.update(fh.read())
        else:
            h.update(fh.read(chunk))
            fh.seek(-chunk, os.SEEK_END)
            h.update(fh.read(chunk))
    return h.hexdigest()


def model_fingerprint(model: str) -> str:
    """Digest of a local model directory's config and weights; a hub name stands for itself."""
    path = Path(model)
    if not path.is_dir():
        return str(model)
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".json", ".safetensors", ".bin")
                   and not p.name.startswith("isocompute_"))
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode())
        h.update(_file_digest(p).encode())
    return h.hexdigest()


def training_identity(cfg: dict, cell, paths: RunPaths) -> dict:
    """Everything that changes a run's trajectory, except its length M_max.

    Leaving M_max out lets a run whose compute budget was raised continue from
    its last checkpoint.
    """
    train = {k: v for k, v in cfg["train"].items() if k != "device"}
    s = cfg["sampling"]
    return {
        "seed": cfg["seed"], "split": cell.split, "B_p": cell.B_p, "n": cell.n, "train": train,
        "sampling": {k: s[k] for k in ("temperature", "top_p", "max_new_tokens")},
        "eval_samples": cfg["eval"]["samples"],
        "model": model_fingerprint(paths.model),
        "train_file": _file_digest(Path(paths.train_file)), "val_file": _file_digest(Path(paths.val_file)),
    }


def config_hash(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


# --- logs that can be cut back to a step ----------------------------------------

def append_jsonl(path: Path, records) -> None:
    with open(path, "a") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
        fh.flush()
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
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(f"{line}\n" for line in kept))
    tmp.replace(path)
    return dropped


def write_generations(directory: Path, step: int, records: list[dict]) -> Path:
    """One validation dump, written whole or not at all."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{step}.jsonl"
    tmp = directory / f".{step}.jsonl.tmp"
    with open(tmp, "w") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    tmp.replace(path)
    return path


def generation_steps(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.stem) for p in directory.glob("*.jsonl") if p.stem.isdigit())


def reset_logs(paths: RunPaths, last_step: int | None) -> None:
    """Cut every log back to `last_step` (None: a fresh start, remove them)."""
    if last_step is None:
        shutil.rmtree(paths.generations, ignore_errors=True)
        for p in (paths.metrics, paths.pass_rates):
            p.unlink(missing_ok=True)
        return
    for step in generation_steps(paths.generations):
        if step > last_step:
            (paths.generations / f"{step}.jsonl").unlink()
    dropped = truncate_jsonl(paths.metrics, last_step) + truncate_jsonl(paths.pass_rates, last_step)
    if dropped:
        log.info("resume: dropped %d log records beyond step %d", dropped, last_step)


# --- checkpoints -------------------------------------------------------------------

def save_checkpoint(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def load_resumable(path: Path, expected_hash: str, max_steps: int) -> dict | None:
    """The checkpoint to resume from, or None (with the reason logged) to start fresh."""
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # a torn or foreign file: the run restarts rather than dies
        log.warning("checkpoint %s unreadable (%s); starting fresh", path, exc)
        return None
    if state.get("config_hash") != expected_hash:
        log.warning("checkpoint %s was trained with another config (hash %s, now %s); starting fresh",
                    path, state.get("config_hash"), expected_hash)
        return None
    if state["step"] > max_steps:
        log.warning("checkpoint %s is at step %d, beyond this run's M_max = %d; starting fresh",
                    path, state["step"], max_steps)
        return None
    return state


# --- the backend seam -----------------------------------------------------------------

def train_run(cfg: dict, cell, paths: RunPaths, **hooks) -> dict:
    """Train one grid cell with the configured backend; returns the run summary (run.json)."""
    backend = cfg["train"]["backend"]
    start = time.perf_counter()
    paths.marker.unlink(missing_ok=True)
    if backend == "local":
        from isocompute.train.local import train_local

        summary = train_local(cfg, cell, paths, **hooks)
    elif backend == "verl":
        from isocompute.cluster.verl_backend import run_verl

        summary = run_verl(cfg, cell, paths)
    else:
        raise InputError(f"config key 'train.backend': unknown backend {backend!r}")
    return {"backend": backend, "split": cell.split, "B_p": cell.B_p, "n": cell.n, "M_max": cell.M_max,
            "session_wall_s": time.perf_counter() - start, **(summary or {})}
