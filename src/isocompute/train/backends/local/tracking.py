"""The local backend's experiment trackers (config `tracking`): each step's metrics row,
the one written to metrics.jsonl, also goes to TensorBoard and/or W&B through
their own clients. Each client is imported only when its tracker is on, so an untracked
run imports none of them.
"""

from __future__ import annotations

import json
import logging

from isocompute.train.tracking import Tracking

log = logging.getLogger(__name__)


class _TensorBoard:
    def __init__(self, tracking: Tracking, first_step: int):
        from torch.utils.tensorboard import SummaryWriter

        # A session starts at its checkpoint's next step: events from there on, written by a
        # session that died before its next checkpoint, are purged (as metrics.jsonl is rewound).
        self.writer = SummaryWriter(str(tracking.tensorboard_dir), purge_step=first_step)

    def log(self, data: dict, step: int) -> None:
        for key, value in data.items():
            self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        self.writer.close()


class _WandB:
    def __init__(self, tracking: Tracking, config: dict):
        import wandb

        # One W&B run per session (as verl's): a resumed run continues under the same name.
        self.run = wandb.init(project=tracking.project, name=tracking.run, dir=str(tracking.wandb_dir),
                              mode=tracking.wandb_mode, config=config, settings=wandb.Settings(console="off"))

    def log(self, data: dict, step: int) -> None:
        self.run.log(data, step=step)

    def close(self) -> None:
        self.run.finish()


class Trackers:
    """The run's trackers (their folder made and packages checked: train.tracking.prepare):
    log(metrics, step) sends one metrics.jsonl row to each. `first_step` is the first step
    this session logs (0, or a resumed run's checkpoint step + 1)."""

    def __init__(self, tracking: Tracking, config: dict, first_step: int = 0):
        plain = json.loads(json.dumps(config))  # the job's config sections as plain values
        self.open = []
        try:
            for backend in tracking.backends:
                if backend == "tensorboard":
                    self.open.append(_TensorBoard(tracking, first_step))
                elif backend == "wandb":
                    self.open.append(_WandB(tracking, plain))
        except BaseException:
            self.close()
            raise
        if self.open:
            log.info("tracking %s as %s/%s in %s", ", ".join(tracking.backends), tracking.project, tracking.run,
                     tracking.dir)

    def log(self, data: dict, step: int) -> None:
        for tracker in self.open:
            tracker.log(data, step)

    def close(self) -> None:
        while self.open:
            self.open.pop().close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
