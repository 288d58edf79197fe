"""Running the study on a GPU cluster: the vLLM sampler, checkpoint conversion,
SLURM resources, the GPU-hour plan and their commands (the verl training
backend itself is `isocompute.train.backends.verl`). Nothing here is imported
by local runs; verl and vLLM are imported lazily, so the CPU install can build
and check every command.
"""
