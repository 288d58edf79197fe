"""The module verl imports in each of its processes (VERL_USE_EXTERNAL_MODULES) when a
run trains on the CPU: registers the CPU platform, the CPU engines and patches, and the
HF-transformers rollout server. See the package docstring."""

from isocompute.train.backends.verl.cpu import patches, platform, rollout

platform.register()
patches.apply()
rollout.register()
