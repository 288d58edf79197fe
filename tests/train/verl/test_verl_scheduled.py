"""The project's trainer mode inside verl: it validates and checkpoints at the
recipe's steps only (verl's test_freq decides without them), counts each training
step's timed-out rewards into verl's step metrics, and registers with verl's own
registry (verl's v1 trainer package and TransferQueue are faked here: they need a
GPU stack to import)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from omegaconf import OmegaConf

from isocompute.grading import Verdict
from isocompute.train.backends.verl import reward, scheduled


def trainer_config(steps, stop=None):
    extra = {} if stop is None else {scheduled.STOP_KEY: stop}
    if steps is not None:
        extra[scheduled.STEPS_KEY] = steps
    config = OmegaConf.create({"trainer": {"v1": {"trainer_mode": scheduled.TRAINER_MODE}, **extra}})
    OmegaConf.set_struct(config, True)  # as verl's config is
    return config


class FakeSyncTrainer:
    def __init__(self, config):
        self.config = config
        self.trainer_mode = config.trainer.v1.trainer_mode  # what verl's PPOTrainer keys its buffers on
        self.global_steps = 0
        self.use_reference_policy = False  # verl's trainer_base: need_reference_policy(config)
        self.calls = []

    def _validate(self):
        self.calls.append(("validate", self.global_steps))
        return {"val-core/x/acc/mean@4": 0.5}

    def _save_checkpoint(self):
        self.calls.append(("save", self.global_steps))

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        metrics["critic/score/mean"] = 0.5  # verl's own step metrics, reduced in place


class FakeTransferQueue(types.ModuleType):
    """TransferQueue's kv_batch_get over per-rollout fields, as verl's trainer reads them."""

    def __init__(self):
        super().__init__("transfer_queue")
        self.fields = {}

    def kv_batch_get(self, keys, partition_id, select_fields):
        return {f: np.array([self.fields[(partition_id, k)][f] for k in keys] + [None], dtype=object)[:-1]
                for f in select_fields}


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
    monkeypatch.setitem(sys.modules, "transfer_queue", FakeTransferQueue())
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


def test_without_listed_steps_verl_decides_when_to_validate(fake_verl_v1):
    """train.eval_schedule: steps runs the mode too (it counts timeouts): verl's test_freq decides."""
    scheduled.register()
    trainer = fake_verl_v1[scheduled.TRAINER_MODE](trainer_config(None))
    for step in (0, 10, 20):
        trainer.global_steps = step
        assert trainer._validate()
        trainer._save_checkpoint()
    assert trainer.calls == [(kind, s) for s in (0, 10, 20) for kind in ("validate", "save")]


def test_the_trainer_counts_each_steps_timed_out_rewards_into_verls_metrics(fake_verl_v1, monkeypatch):
    """verl's training metrics take no reward extras: the mode reads the rollouts' reward_extra_info
    (what the reward function returned) from TransferQueue and adds the local backend's keys. A
    padding copy (verl evens out the batch) is not counted."""
    def judged(completion, truth, timeout_s):
        return (Verdict.TIMED_OUT, "timeout") if "tower" in completion else (Verdict.CORRECT, "numeric")

    monkeypatch.setattr(reward, "judge", judged)
    tq = sys.modules["transfer_queue"]
    texts = ["\\boxed{2}", "tower", "\\boxed{2}", "\\boxed{2}", "tower"]
    keys = [f"u{i // 2}_0_{i % 2}" for i in range(len(texts))]
    for key, text in zip(keys, texts):
        info = reward.compute_score("math", text, "2", {"problem_id": key[:2]})
        tq.fields[("train", key)] = {"extra_fields": {"reward_extra_info": info, "turn_scores": []}}
    batch = types.SimpleNamespace(keys=keys, partition_id="train",
                                  tags=[{"is_padding": i == 4} for i in range(len(texts))])
    scheduled.register()
    trainer = fake_verl_v1[scheduled.TRAINER_MODE](trainer_config([0, 5]))
    metrics = {}
    trainer._compute_metrics(batch, metrics, {}, global_steps=3, epoch=0)
    assert metrics == {"critic/score/mean": 0.5, "grading/timeouts": 1, "grading/timeout_share": 0.25}
    # Rollouts another reward function scored carry no timed_out: their step's count is unknown.
    tq.fields[("train", keys[0])] = {"extra_fields": {"reward_extra_info": {"score": 1.0}}}
    with pytest.raises(ValueError, match="1 of 4 training rollouts have no 'timed_out'"):
        trainer._compute_metrics(batch, {}, {}, global_steps=3, epoch=0)


def test_verls_trainer_logs_the_metrics_the_mode_adds_to():
    """What the counting relies on in verl 0.9.1's V1 trainer (read from its source: the module
    needs a GPU stack to import): fit() reduces a step's metrics in place with
    `_compute_metrics(batch, metrics, ...)` before its logger logs that dict, and its rollouts'
    reward extras sit in the TransferQueue field `extra_fields` under 'reward_extra_info'."""
    import ast
    from pathlib import Path

    import verl

    src = (Path(verl.__file__).parent / "trainer" / "ppo" / "v1" / "trainer_base.py").read_text()
    tree = ast.parse(src)
    (method,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_compute_metrics"]
    assert [a.arg for a in method.args.args] == ["self", "batch", "metrics", "timing_raw", "global_steps", "epoch"]
    assert "self._compute_metrics(batch, metrics," in src
    assert src.index("self._compute_metrics(batch, metrics,") < src.index("self.logger.log(data=metrics")
    assert '"extra_fields"' in src and 'get("reward_extra_info"' in src and 'tag.get("is_padding"' in src
