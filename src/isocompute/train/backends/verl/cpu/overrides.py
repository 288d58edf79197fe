"""The Hydra overrides and environment of a verl run on the CPU (train.backend verl,
train.device cpu). Pure: no verl import (the Snakefile and `isocompute verl-command`
build them). The overrides replace the GPU engineering overrides they name.
"""

from __future__ import annotations

from isocompute.train.backends.verl.cpu import PLATFORM_NAME, PLUGIN_MODULE, ROLLOUT_NAME

PLUGIN_ENV = "VERL_USE_EXTERNAL_MODULES"  # verl/__init__.py imports these modules in every process
PLATFORM_ENV = "VERL_PLATFORM"  # verl's platform_manager: the registered platform to use
# One logical GPU (Ray's num_gpus) carries verl's GPU-shaped placement group.
CPU_GPUS = 1


def on_cpu(cfg: dict) -> bool:
    """Whether a verl run trains on the CPU platform."""
    return cfg["train"]["backend"] == "verl" and cfg["train"]["device"] == "cpu"


def cpu_env() -> dict:
    """The environment of a CPU run's verl command (Ray's workers inherit it)."""
    return {PLUGIN_ENV: PLUGIN_MODULE, PLATFORM_ENV: PLATFORM_NAME}


def cpu_overrides(cfg: dict) -> dict:
    """verl keys of a CPU run, over the GPU engineering overrides."""
    a = "actor_rollout_ref"
    out = {
        "trainer.device": "cpu",
        "trainer.n_gpus_per_node": CPU_GPUS,
        "trainer.nnodes": 1,
        "+ray_kwargs.ray_init.num_gpus": CPU_GPUS,
        # FSDP1 needs GPU parameters (sync_module_states); FSDP2 shards on a CPU mesh.
        f"{a}.actor.strategy": "fsdp2",
        f"{a}.actor.fsdp_config.strategy": "fsdp2",
        f"{a}.ref.fsdp_config.strategy": "fsdp2",
        # fp32 like the rollout server, no torch.compile (it needs a C++ toolchain), SDPA attention
        # (flash-attn is CUDA only), padded batches (unpadding packs sequences for flash-attn).
        f"{a}.actor.fsdp_config.dtype": "float32",
        f"{a}.ref.fsdp_config.dtype": "float32",
        f"{a}.actor.use_torch_compile": False,
        f"{a}.actor.fsdp_config.use_torch_compile": False,
        f"{a}.ref.fsdp_config.use_torch_compile": False,
        f"+{a}.model.override_config.attn_implementation": "sdpa",
        f"{a}.model.use_remove_padding": False,
        f"{a}.model.enable_gradient_checkpointing": False,
        f"{a}.rollout.name": ROLLOUT_NAME,
        # One process each where verl would start 8 (agent loop, reward, data loading).
        f"{a}.rollout.agent.num_workers": 1,
        "reward.num_workers": 1,
        "data.dataloader_num_workers": 0,
    }
    return out
