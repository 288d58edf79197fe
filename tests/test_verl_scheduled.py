"""The compute-matched schedule inside verl: the scheduled trainer mode validates
and checkpoints at the recipe's steps only, and registers with verl's own
registry (verl's v1 trainer package is faked here: it needs transfer_queue and a
GPU stack to import)."""

from __future__ import annotations

import sys
import types

import pytest
from omegaconf import OmegaConf

from isocompute.train.backends.verl import scheduled


def trainer_config(steps, stop=None):
    extra = {} if stop is None else {scheduled.STOP_KEY: stop}
    config = OmegaConf.create({"trainer": {scheduled.STEPS_KEY: steps, "v1": {"trainer_mode": scheduled.TRAINER_MODE},
                                           **extra}})
    OmegaConf.set_struct(config, True)  # as verl's config is
    return config


class FakeSyncTrainer:
    def __init__(self, config):
        self.config = config
        self.trainer_mode = config.trainer.v1.trainer_mode  # what verl's PPOTrainer keys its buffers on
        self.global_steps = 0
        self.calls = []

    def _validate(self):
        self.calls.append(("validate", self.global_steps))
        return {"val-core/x/acc/mean@4": 0.5}

    def _save_checkpoint(self):
        self.calls.append(("save", self.global_steps))


@pytest.fixture
def fake_verl_v1(monkeypatch):
    registry = {}

    def register_trainer(name):
        def decorate(cls):
            registry[name] = cls
            return cls
        return decorate

    def get_trainer_cls(name):
        if name not in registry:
            raise ValueError(f"Unknown trainer '{name}'")
        return registry[name]

    module = types.ModuleType("verl.trainer.ppo.v1")
    module.PPOTrainerSync, module.register_trainer, module.get_trainer_cls = FakeSyncTrainer, register_trainer, \
        get_trainer_cls
    monkeypatch.setitem(sys.modules, "verl.trainer.ppo.v1", module)
    return registry


def test_scheduled_trainer_validates_and_saves_only_at_the_listed_steps(fake_verl_v1):
    scheduled.register()
    scheduled.register()  # Ray may run the hook more than once per process
    trainer = fake_verl_v1[scheduled.TRAINER_MODE](trainer_config([0, 1, 3, 7, 10]))
    # verl's base trainer sees its sync mode (its replay buffer and dataloader batching).
    assert trainer.trainer_mode == "sync"
    for step in range(11):  # verl's loop with test_freq = save_freq = 1 asks at every step
        trainer.global_steps = step
        metrics = trainer._validate()
        trainer._save_checkpoint()
        assert bool(metrics) is (step in (0, 1, 3, 7, 10))
    assert [s for kind, s in trainer.calls if kind == "validate"] == [0, 1, 3, 7, 10]
    assert [s for kind, s in trainer.calls if kind == "save"] == [0, 1, 3, 7, 10]


def test_a_rung_session_also_checkpoints_at_its_stop_step_without_validating(fake_verl_v1):
    """An adaptive sweep's rung ends verl's loop at step 5 (trainer.total_training_steps), where
    verl validates and saves as at every last step: only the save happens."""
    scheduled.register()
    trainer = fake_verl_v1[scheduled.TRAINER_MODE](trainer_config([0, 1, 3, 7, 10], stop=5))
    for step in range(6):
        trainer.global_steps = step
        trainer._validate()
        trainer._save_checkpoint()
    assert [s for kind, s in trainer.calls if kind == "validate"] == [0, 1, 3]
    assert [s for kind, s in trainer.calls if kind == "save"] == [0, 1, 3, 5]


def test_the_setup_hook_names_an_importable_function():
    module, _, name = scheduled.SETUP_HOOK.rpartition(".")
    assert getattr(sys.modules[module], name) is scheduled.register
