"""Every verl 0.9.1 name outside its documented entry points that the CPU platform
uses, as (module, attribute). tests/train/verl/test_verl_cpu_names.py imports each one and fails
naming the name that moved when verl changes; `require` does the same at run time.
"""

from __future__ import annotations

import importlib

NAMES = {
    # the platform registry and its base class (platform.py)
    "platform_registry": ("verl.plugin.platform.platform_manager", "PlatformRegistry"),
    "platform_base": ("verl.plugin.platform.platform_base", "PlatformBase"),
    # the FSDP engines, registered again for device "cpu" (patches.py)
    "engine_registry": ("verl.workers.engine.base", "EngineRegistry"),
    "fsdp_lm_engine": ("verl.workers.engine.fsdp.transformer_impl", "FSDPEngineWithLMHead"),
    "fsdp_value_engine": ("verl.workers.engine.fsdp.transformer_impl", "FSDPEngineWithValueHead"),
    # the offload policy the reference model is built with (pin_memory=True needs CUDA)
    "fsdp_offload_policy": ("verl.workers.engine.fsdp.transformer_impl", "CPUOffloadPolicy"),
    # the process group of the training workers: "cpu:gloo,<device>:<backend>" by default
    "process_group_init": ("verl.utils.distributed", "initialize_global_process_group_ray"),
    # the async rollout registries (rollout.py)
    "rollout_class_registry": ("verl.workers.rollout.base", "_ROLLOUT_REGISTRY"),
    "rollout_base": ("verl.workers.rollout.base", "BaseRollout"),
    "rollout_replica_registry": ("verl.workers.rollout.replica", "RolloutReplicaRegistry"),
    "rollout_replica": ("verl.workers.rollout.replica", "RolloutReplica"),
    "token_output": ("verl.workers.rollout.replica", "TokenOutput"),
    # the rollout keys the vLLM rollout's overrides set on the CPU (overrides.py): no sleep mode
    "rollout_config": ("verl.workers.config", "RolloutConfig"),
}

# verl names of its own vLLM rollout (cluster.verl.cpu_rollout vllm), which import vLLM: pinned in
# the CPU twin of the cluster environment (tests/envs/test_twin_verl_vllm.py), where vLLM is installed.
VLLM_ROLLOUT_NAMES = {
    # the distribution name whose version verl reads to load its vLLM code (vllm_cpu.alias_distribution)
    "vllm_version_third_party": ("verl.third_party.vllm", "package_name"),
    "vllm_version_rollout": ("verl.workers.rollout.vllm_rollout", "vllm_package_name"),
    # the weight sync: load_weights, then vLLM's process_weights_after_loading (vllm_cpu.keep_linear_weights)
    "vllm_worker_extension": ("verl.workers.rollout.vllm_rollout.utils", "vLLMColocateWorkerExtension"),
    # the server whose sleep/wake_up calls free_cache_engine=False turns off (overrides.py)
    "vllm_server": ("verl.workers.rollout.vllm_rollout.vllm_async_server", "vLLMHttpServer"),
}


def require(key: str):
    """The verl object NAMES[key] (or VLLM_ROLLOUT_NAMES[key]); ImportError naming it when verl moved it."""
    module, attribute = NAMES[key] if key in NAMES else VLLM_ROLLOUT_NAMES[key]
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"verl CPU platform: {module}.{attribute} ({key}) is gone from the installed verl "
                          f"({exc}); isocompute.train.backends.verl.cpu was written for verl 0.9.1") from exc
