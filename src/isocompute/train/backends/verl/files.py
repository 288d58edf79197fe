"""The files of one verl run: the shared run files (`isocompute.layout.RunFiles`)
and verl's own (checkpoints, this session's command, log and rollout dumps).
Read by the override builder, the resume logic and `cluster.checkpoints`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from isocompute.layout import RunFiles

# What verl 0.9.1's checkpoint manager writes under trainer.default_local_dir
# once a checkpoint is complete.
LATEST_CHECKPOINT_FILE = "latest_checkpointed_iteration.txt"


@dataclass(frozen=True)
class VerlRunFiles(RunFiles):
    """Absolute paths of one run's files: the shared ones and verl's own.

      generations/{step}.jsonl   verl's validation_data_dir dumps (+ sample, n_tokens)
      metrics.jsonl              verl's file logger, merged across resumed sessions
      train_pass_rates.jsonl     per step and problem, from verl's rollout dumps
      checkpoints/               verl's FSDP checkpoints (resume_mode=auto)
      verl/                      this session's command, verl's log, Hydra's record
    """

    @property
    def checkpoints(self) -> Path:
        return self.run_dir / "checkpoints"

    @property
    def session_dir(self) -> Path:
        return self.run_dir / "verl"

    @property
    def session_metrics(self) -> Path:
        """Where verl's file logger writes during one session (truncated at each start)."""
        return self.session_dir / "metrics.session.jsonl"

    @property
    def session_log(self) -> Path:
        return self.session_dir / "main_ppo.log"

    @property
    def rollouts(self) -> Path:
        """verl's training-rollout dumps (trainer.rollout_data_dir), read into pass rates and deleted."""
        return self.session_dir / "rollouts"


def latest_checkpoint_step(checkpoints: Path) -> int | None:
    """The step of the last complete verl checkpoint, or None.

    verl writes `latest_checkpointed_iteration.txt` after a checkpoint is
    complete, so a job killed mid-save resumes from the previous one.
    """
    marker = Path(checkpoints) / LATEST_CHECKPOINT_FILE
    if not marker.is_file():
        return None
    text = marker.read_text().strip()
    if not text.isdigit():
        return None
    step = int(text)
    return step if (Path(checkpoints) / f"global_step_{step}").is_dir() else None
