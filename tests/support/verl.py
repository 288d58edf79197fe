"""The verl backend's helpers (tests/train/verl/, tests/cluster/test_cluster_checkpoints.py,
tests/test_variants.py, ...): a checked verl config, a command's overrides as a dict, a fake
checkpoint, and verl's own composition and validation of overrides in a subprocess.
Each imports isocompute where it is used, so that importing this module imports none of it."""

from __future__ import annotations

from pathlib import Path


def verl_cfg(**over) -> dict:
    """A checked config for train.backend verl, with sections updated by `over`."""
    from isocompute.config import check_config

    cfg = {"experiment": "t", "splits": {"names": ["easy", "hard", "dual"]}, "train": {"backend": "verl"}}
    for key, value in over.items():
        cfg[key] = {**cfg.get(key, {}), **value} if isinstance(value, dict) else value
    return check_config(cfg)


def overrides_dict(overrides: list[str]) -> dict:
    return dict(o.split("=", 1) for o in overrides)


def fake_checkpoint(run: Path, step: int) -> None:
    """A complete verl checkpoint of `step` in run folder `run`, as verl's checkpoint manager marks it."""
    from isocompute.train.backends.verl.files import LATEST_CHECKPOINT_FILE

    (run / "checkpoints" / f"global_step_{step}" / "actor").mkdir(parents=True, exist_ok=True)
    (run / "checkpoints" / LATEST_CHECKPOINT_FILE).write_text(str(step))


# Runs in a subprocess (python -c COMPOSE, a JSON list of override lists on stdin): compose each
# list with verl's config and validate it as main_ppo does before it starts Ray.
COMPOSE = r"""
import json, sys
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config

out = []
with initialize_config_module(config_module="verl.trainer.config", version_base=None):
    for overrides in json.load(sys.stdin):
        cfg = compose(config_name="ppo_trainer", overrides=[o for o in overrides if not o.startswith("hydra.")])
        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        out.append({"config": OmegaConf.to_container(cfg, resolve=True),
                    "reference": bool(need_reference_policy(cfg)), "critic": bool(need_critic(cfg))})
print("RESULT" + json.dumps(out, default=str))
"""
