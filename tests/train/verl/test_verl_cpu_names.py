"""The verl-private names the CPU platform (train/backends/verl/cpu/) uses: each is where
verl 0.9.1 had it, and has the shape the platform relies on. A failure names the name
that moved; the fix belongs in verl_names.py and the module that uses it."""

from __future__ import annotations

import inspect

import pytest

from isocompute.train.backends.verl.cpu import verl_names
from isocompute.train.backends.verl.cpu.verl_names import NAMES, require


@pytest.mark.parametrize("key", sorted(NAMES))
def test_name_is_where_verl_091_had_it(key):
    module, attribute = NAMES[key]
    try:
        require(key)
    except ImportError as exc:
        pytest.fail(f"verl moved {module}.{attribute} ({key}): {exc}")


def test_require_names_what_moved(monkeypatch):
    monkeypatch.setitem(verl_names.NAMES, "gone", ("verl.utils.distributed", "no_such_name"))
    with pytest.raises(ImportError, match=r"verl\.utils\.distributed\.no_such_name \(gone\)"):
        require("gone")


def test_registries_have_the_shape_the_plugin_writes_to():
    engines = require("engine_registry")
    assert isinstance(engines._engines, dict), "EngineRegistry._engines is no longer a dict"
    assert {"fsdp", "fsdp2"} <= set(engines._engines["language_model"]), "FSDP engines are registered otherwise"
    rollouts = require("rollout_class_registry")
    assert ("vllm", "async") in rollouts, "_ROLLOUT_REGISTRY keys are no longer (name, mode)"
    replicas = require("rollout_replica_registry")
    assert isinstance(replicas._registry, dict) and "vllm" in replicas._registry, "RolloutReplicaRegistry._registry"
    platforms = require("platform_registry")
    assert hasattr(platforms, "register") and hasattr(platforms, "get"), "PlatformRegistry.register/get"


def test_signatures_the_patches_wrap():
    params = inspect.signature(require("process_group_init")).parameters
    assert list(params)[:2] == ["timeout_second", "backend"], "initialize_global_process_group_ray's arguments"
    assert "pin_memory" in inspect.signature(require("fsdp_offload_policy")).parameters, "CPUOffloadPolicy(pin_memory)"
    token_fields = set(require("token_output").model_fields)
    assert {"token_ids", "log_probs", "stop_reason", "extra_fields"} <= token_fields, "TokenOutput's fields"
    abstract = require("rollout_base").__abstractmethods__
    assert abstract == {"resume", "update_weights", "release"}, f"BaseRollout's abstract methods: {abstract}"
    assert "launch_servers" in require("rollout_replica").__abstractmethods__, "RolloutReplica.launch_servers"


def test_the_rollout_keys_the_vllm_rollout_sets_on_the_cpu():
    """cluster.verl.cpu_rollout vllm sets these RolloutConfig fields (cpu/overrides.py)."""
    import dataclasses

    from isocompute.train.backends.verl.cpu.overrides import cpu_overrides
    from isocompute.train.backends.verl.cpu.verl_names import NAMES

    from pathlib import Path

    import verl
    import yaml

    fields = {f.name for f in dataclasses.fields(require("rollout_config"))}
    cfg = {"train": {"backend": "verl", "device": "cpu"}, "cluster": {"verl": {"cpu_rollout": "vllm"}}}
    prefix = "actor_rollout_ref.rollout."
    keys = {k.removeprefix(prefix).split(".")[0] for k in cpu_overrides(cfg) if k.startswith(prefix)}
    added = {k.removeprefix("+" + prefix) for k in cpu_overrides(cfg) if k.startswith("+" + prefix)}
    assert keys | added >= {"enable_sleep_mode", "free_cache_engine", "dtype", "enforce_eager"}
    assert keys | added <= fields, f"verl moved {sorted((keys | added) - fields)} out of {'.'.join(NAMES['rollout_config'])}"
    # Hydra sets a key of verl's YAML without "+" and adds one it lacks with "+" (either the other way fails).
    generated = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    in_yaml = set(yaml.safe_load(generated.read_text())["actor_rollout_ref"]["rollout"])
    assert keys <= in_yaml and not added & in_yaml, (sorted(keys - in_yaml), sorted(added & in_yaml))


def test_platform_implements_every_abstract_method():
    from isocompute.train.backends.verl.cpu import platform

    cls = platform.register()
    instance = cls()  # TypeError here names an abstract method verl added
    assert instance.device_name == "cpu" and instance.communication_backend_name() == "gloo"
    assert instance.current_device() == "cpu" and instance.ray_resource_name() == "GPU"
