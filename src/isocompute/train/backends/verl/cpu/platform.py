"""verl's platform for a machine without an accelerator: device "cpu", gloo collectives,
and logical Ray GPUs (ray_init.num_gpus) for verl's GPU-shaped placement groups.

verl 0.9.1 registers cuda, npu and rocm only: without this, `get_platform()` falls back
to CUDA and `auto_set_device` turns trainer.device=cpu back into cuda.
"""

from __future__ import annotations

import types
from contextlib import contextmanager

import torch

from isocompute.train.backends.verl.cpu import PLATFORM_NAME
from isocompute.train.backends.verl.cpu.verl_names import require


def _zero(*args, **kwargs) -> int:
    return 0


def _none(*args, **kwargs) -> None:
    return None


def device_module() -> types.ModuleType:
    """torch.cpu with what verl calls on `get_torch_device()` and torch.cpu lacks: memory
    statistics (0), cache and allocator calls (no-ops), the RNG state (torch's own)."""
    mod = types.ModuleType("isocompute_verl_cpu_device")
    for name in ("is_available", "synchronize", "current_device", "device_count", "Stream", "stream",
                 "current_stream", "Event"):
        if hasattr(torch.cpu, name):
            setattr(mod, name, getattr(torch.cpu, name))
    mod.set_device = _none
    mod.empty_cache = _none
    mod.reset_peak_memory_stats = _none
    mod.ipc_collect = _none
    mod.set_per_process_memory_fraction = _none
    mod.get_device_name = lambda *args, **kwargs: "CPU"  # verl's flops table: unknown device, inf
    for name in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"):
        setattr(mod, name, _zero)
    mod.mem_get_info = lambda *args, **kwargs: (0, 0)
    mod.memory_stats = lambda *args, **kwargs: {}
    mod.manual_seed = torch.manual_seed
    mod.manual_seed_all = torch.manual_seed
    mod.get_rng_state = torch.get_rng_state
    mod.set_rng_state = torch.set_rng_state
    mod.is_initialized = lambda: True
    return mod


class _CPUPlatform:
    """The methods of verl's platform on the host CPU: torch tensors stay on "cpu", collectives
    use gloo. `register` puts them before verl's platform base class (imported only then)."""

    device_name = property(lambda self: "cpu")
    vendor_name = property(lambda self: "cpu")

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check=False) -> bool:
        return False  # chosen by VERL_PLATFORM only, never by verl's auto-detection

    def current_device(self) -> str:
        # verl moves tensors with .to(get_device_id()): "cpu", never the index 0 (cuda:0).
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index=None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0):
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        # Ray assigns the logical GPUs through this variable; torch on the CPU ignores it.
        return "CUDA_VISIBLE_DEVICES"

    def ray_resource_name(self) -> str:
        return "GPU"  # logical GPUs: +ray_kwargs.ray_init.num_gpus

    def ray_resource_options(self, num_gpus: float) -> dict:
        return {"num_gpus": num_gpus}

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def cudart(self):
        return None


def register() -> type:
    """Register PlatformCPU under PLATFORM_NAME (VERL_PLATFORM selects it); idempotent."""
    registry = require("platform_registry")
    if registry.get(PLATFORM_NAME) is not None:
        return registry.get(PLATFORM_NAME)
    module = device_module()
    namespace = {"__doc__": _CPUPlatform.__doc__, "__module__": __name__, "device_module": property(lambda self: module)}
    PlatformCPU = types.new_class("PlatformCPU", (_CPUPlatform, require("platform_base")),
                                  exec_body=lambda ns: ns.update(namespace))
    registry.register(platform=PLATFORM_NAME)(PlatformCPU)
    return PlatformCPU
