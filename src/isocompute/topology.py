"""The shape of a GPU job: one node, its GPUs and its CPUs, from the config's
`cluster` section. The one home of what SLURM is asked for (`cluster.resources`)
and what verl is told (trainer.nnodes, trainer.n_gpus_per_node, Ray's num_cpus:
`train.backends.verl`), so the two always agree. Pure, a leaf.
"""

from __future__ import annotations

import re

from isocompute.errors import ConfigError

# A GPU job runs on one node: verl is started with trainer.nnodes = 1 (no Ray
# cluster is started across nodes) and vLLM's tensor parallelism stays in a node.
NODES_PER_GPU_JOB = 1


def job_gpus(cfg: dict, kind: str, gpus: int | None = None) -> int:
    """GPUs a job of `kind` gets on its node: the count of the literal `cluster.gres` when
    there is one (it replaces every GPU job's count), else `gpus` or `cluster.<kind>.gpus`."""
    gres = cfg["cluster"]["gres"]
    if gres:  # the schema's pattern: gpu[:<type>][:<count>]
        count = re.search(r":(\d+)$", gres)
        return int(count.group(1)) if count else 1
    return int(cfg["cluster"][kind]["gpus"] if gpus is None else gpus)


def train_topology(cfg: dict) -> tuple[int, int]:
    """(nodes, GPUs per node) of one training run: what the train job asks SLURM for and
    what verl is told (trainer.nnodes, trainer.n_gpus_per_node)."""
    return NODES_PER_GPU_JOB, job_gpus(cfg, "train")


def gpu_job_threads(cfg: dict, kind: str, gpus: int | None = None) -> int:
    """A GPU rule's `threads`: every CPU the job gets (GPUs x cluster.<kind>.cpus_per_gpu)."""
    return job_gpus(cfg, kind, gpus) * int(cfg["cluster"][kind]["cpus_per_gpu"])


def check_sampling_engine(cfg: dict) -> None:
    """vLLM's tensor parallelism fits in the sampling job (sampling.backend vllm: the difficulty
    jobs), which would otherwise fail only once the job has its GPUs. ConfigError naming both keys."""
    if cfg["sampling"]["backend"] != "vllm":
        return
    tp, gpus = int(cfg["cluster"]["vllm"]["tensor_parallel_size"]), job_gpus(cfg, "sample")
    if tp > gpus:
        where = "the count of cluster.gres" if cfg["cluster"]["gres"] else "cluster.sample.gpus"
        raise ConfigError(f"config key 'cluster.vllm.tensor_parallel_size': {tp} is more GPUs than the sampling "
                          f"job has ({where} = {gpus}); at most {gpus}, or raise {where}")
