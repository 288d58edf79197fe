"""The local backend's torch checkpoint: model, optimiser and RNG states at an
evaluation step, stamped with the run identity's hash so that a run resumes
only from a checkpoint trained the same way.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from isocompute import atomic

log = logging.getLogger(__name__)


def checkpoint_path(run_dir: Path) -> Path:
    """run_dir/checkpoint/state.pt: the latest checkpoint of a local run."""
    return Path(run_dir) / "checkpoint" / "state.pt"


def save_checkpoint(path: Path, state: dict) -> None:
    with atomic.atomic_path(path) as tmp:
        torch.save(state, tmp)


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
