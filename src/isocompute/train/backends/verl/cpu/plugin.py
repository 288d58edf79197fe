"""The module verl imports in each of its processes (VERL_USE_EXTERNAL_MODULES) when a
run trains on the CPU: registers the CPU platform, the CPU engines and patches, the
HF-transformers rollout server, and, where vLLM is installed, what verl's own vLLM
rollout needs on vLLM's CPU build. See the package docstring."""

from isocompute.train.backends.verl.cpu import patches, platform, rollout, vllm_cpu

platform.register()
patches.apply()
rollout.register()
vllm_cpu.install()
