"""Running the study on a GPU cluster: the verl training backend, the vLLM
sampler, the verl reward function, checkpoint conversion, SLURM resources and
the GPU-hour plan. Nothing here is imported by local runs; verl and vLLM are
imported lazily, so the CPU install can build and check every command.
"""
