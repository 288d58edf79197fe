"""Experiment tracking of one training run (config `tracking`): which trackers, the
project and run name they log under, and where they write. Both backends read it:
verl through its own loggers (trainer.logger, and the environment variables
verl.utils.tracking reads), the local backend through the trackers' own clients
(backends/local/tracking.py). Tracking writes beside the run, never into it, and
changes no number the pipeline computes.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from isocompute.errors import ConfigError
from isocompute.layout import study_layout

# The trackers a run can log to, and the package each needs in the training environment.
PACKAGES = {"wandb": "wandb", "tensorboard": "tensorboard"}


def run_name(cfg: dict, cell) -> str:
    """'<experiment>-<split>-bp<B_p>_n<n>[_s<r>]' (a variant's: '<experiment>-<variant>-<split>-...'):
    the run's name in every tracker (verl's trainer.experiment_name)."""
    variant = getattr(cell, "variant", "")
    return "-".join([cfg["experiment"], *([variant] if variant else []), cell.split, cell.name])


@dataclass(frozen=True)
class Tracking:
    """The trackers of one run. `dir` is as configured (relative to the working directory)."""
    backends: tuple[str, ...]
    project: str
    run: str
    dir: Path
    wandb_mode: str = "offline"

    @property
    def enabled(self) -> bool:
        return bool(self.backends)

    @property
    def tensorboard_dir(self) -> Path:
        """This run's event files: <dir>/tensorboard/<project>/<run> (`tensorboard --logdir <dir>/tensorboard`)."""
        return self.dir / "tensorboard" / self.project / self.run

    @property
    def wandb_dir(self) -> Path:
        """W&B's root: it writes its run folders under <dir>/wandb/."""
        return self.dir


def tracking_of(cfg: dict, cell) -> Tracking:
    """The tracking of `cell`'s run. A job given no `tracking` section tracks nothing: the
    local backend's train rule passes it (in the options file) only when a tracker is on."""
    name = run_name(cfg, cell)
    if "tracking" not in cfg:
        return Tracking((), cfg["experiment"], name, Path(study_layout(cfg).tracking))
    t = cfg["tracking"]
    return Tracking(tuple(t["backends"]), t["project"] or cfg["experiment"], name,
                    Path(t["dir"] or study_layout(cfg).tracking), t["wandb_mode"])


def prepare(tracking: Tracking) -> None:
    """Before any step: every chosen tracker's package is importable here (the training
    environment), else one line naming tracking.backends and the package; the trackers'
    folder exists (W&B falls back to a temporary folder when it does not)."""
    missing = [b for b in tracking.backends if importlib.util.find_spec(PACKAGES[b]) is None]
    if missing:
        raise ConfigError(f"config key 'tracking.backends': {missing[0]} is not installed in this training "
                          f"environment (pip install {PACKAGES[missing[0]]}, or leave {missing[0]} out)")
    if tracking.enabled:
        tracking.dir.mkdir(parents=True, exist_ok=True)


def tracker_env(tracking: Tracking) -> dict:
    """The environment variables verl 0.9.1's trackers read (verl.utils.tracking.Tracking), as
    absolute paths (verl runs in its session folder): W&B's mode and folder, TensorBoard's
    run folder. Empty when no tracker is on."""
    env = {}
    if "wandb" in tracking.backends:
        env.update({"WANDB_MODE": tracking.wandb_mode, "WANDB_DIR": str(tracking.wandb_dir.resolve())})
    if "tensorboard" in tracking.backends:
        env["TENSORBOARD_DIR"] = str(tracking.tensorboard_dir.resolve())
    return env
