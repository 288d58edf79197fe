"""The Hydra overrides and environment of a verl run on the CPU (train.backend verl,
train.device cpu). Pure: no verl import (the Snakefile and `isocompute verl-command`
build them). The overrides replace the GPU engineering overrides they name.
"""

from __future__ import annotations

from isocompute.train.backends.verl.cpu import PLATFORM_NAME, PLUGIN_MODULE, ROLLOUT_NAME, VLLM_ROLLOUT

PLUGIN_ENV = "VERL_USE_EXTERNAL_MODULES"  # verl/__init__.py imports these modules in every process
PLATFORM_ENV = "VERL_PLATFORM"  # verl's platform_manager: the registered platform to use
KV_CACHE_ENV = "VLLM_CPU_KVCACHE_SPACE"  # GiB: the KV cache of vLLM on the CPU (vllm/platforms/cpu.py)
# One logical GPU (Ray's num_gpus) carries verl's GPU-shaped placement group.
CPU_GPUS = 1


def on_cpu(cfg: dict) -> bool:
    """Whether a verl run trains on the CPU platform."""
    return cfg["train"]["backend"] == "verl" and cfg["train"]["device"] == "cpu"


def vllm_rollout(cfg: dict) -> bool:
    """Whether a CPU run samples with verl's own vLLM rollout (vLLM's CPU build) rather than
    the platform's HF server (cluster.verl.cpu_rollout)."""
    return cfg["cluster"]["verl"]["cpu_rollout"] == "vllm"


def cpu_env(cfg: dict) -> dict:
    """The environment of a CPU run's verl command (Ray's workers and vLLM's inherit it): with
    the vLLM rollout, its KV cache (cluster.vllm.kv_cache_gib; else vLLM would reserve a share
    of the host's RAM)."""
    env = {PLUGIN_ENV: PLUGIN_MODULE, PLATFORM_ENV: PLATFORM_NAME}
    if vllm_rollout(cfg):
        env[KV_CACHE_ENV] = str(int(cfg["cluster"]["vllm"]["kv_cache_gib"]))
    return env


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
    if vllm_rollout(cfg):
        out.update({
            f"{a}.rollout.name": VLLM_ROLLOUT,
            # vLLM's sleep mode (freeing weights and KV cache between rollouts) needs CUDA's
            # memory pool: none on the CPU, where the engine keeps both.
            # (RolloutConfig has enable_sleep_mode; verl's YAML does not: Hydra adds it with "+".)
            f"+{a}.rollout.enable_sleep_mode": False,
            f"{a}.rollout.free_cache_engine": False,
            # fp32 like the actor (rollout_probs_diff compares their log-probs), no torch.compile.
            f"{a}.rollout.dtype": "float32",
            f"{a}.rollout.enforce_eager": True,
        })
    return out
