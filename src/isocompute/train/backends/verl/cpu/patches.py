"""What verl 0.9.1's FSDP path needs on the CPU, applied at plugin import (before verl's
workers import the names):

- its FSDP engines are registered for devices cuda and npu only (transformer_impl.py):
  register the same classes for "cpu";
- the training workers' process group is "cpu:gloo,<device>:<backend>", which is
  "cpu:gloo,cpu:gloo" here and torch rejects (duplicate device type): make it "cpu:gloo";
- the reference model (forward_only) is sharded with CPUOffloadPolicy(pin_memory=True),
  and pinning needs CUDA: the same policy without pinned memory.
FSDP1 (`strategy: fsdp`) cannot run here at all (sync_module_states needs GPU
parameters): the overrides choose fsdp2.
"""

from __future__ import annotations

import functools
import sys

from isocompute.train.backends.verl.cpu import PLATFORM_NAME
from isocompute.train.backends.verl.cpu.verl_names import NAMES, require

CPU_BACKEND = "cpu:gloo"


def register_engines() -> None:
    """verl's FSDP engines (language model, value model) for device "cpu"; idempotent."""
    registry = require("engine_registry")
    for key, model_type in (("fsdp_lm_engine", "language_model"), ("fsdp_value_engine", "value_model")):
        engines = registry._engines.get(model_type, {})
        if all(PLATFORM_NAME in engines.get(b, {}) for b in ("fsdp", "fsdp2")):
            continue
        registry.register(model_type=model_type, backend=["fsdp", "fsdp2"], device=PLATFORM_NAME)(require(key))


def gloo_only_process_group() -> None:
    """initialize_global_process_group_ray with "cpu:gloo" unless a backend is given."""
    module_name, attribute = NAMES["process_group_init"]
    original = require("process_group_init")
    if getattr(original, "_isocompute_cpu", False):
        return

    @functools.wraps(original)
    def init(timeout_second=None, backend=None):
        return original(timeout_second=timeout_second, backend=backend or CPU_BACKEND)

    init._isocompute_cpu = True
    for name in (module_name, "verl.workers.engine_workers"):  # and where it is already imported by name
        module = sys.modules.get(name)
        if module is not None and hasattr(module, attribute):
            setattr(module, attribute, init)


def unpinned_offload_policy() -> None:
    """The reference model's CPUOffloadPolicy without pinned memory."""
    module_name, attribute = NAMES["fsdp_offload_policy"]
    policy = require("fsdp_offload_policy")
    if getattr(policy, "_isocompute_cpu", False):
        return

    class UnpinnedCPUOffloadPolicy(policy):
        _isocompute_cpu = True

        def __init__(self, pin_memory: bool = False):
            super().__init__(pin_memory=False)

    setattr(sys.modules[module_name], attribute, UnpinnedCPUOffloadPolicy)


def apply() -> None:
    register_engines()
    gloo_only_process_group()
    unpinned_offload_policy()
