"""Snakemake resources of the pipeline's jobs, from the config's `cluster`
section; rules/common.smk hands them to rules as `resources: **...`.

GPU jobs ask SLURM for one node (`nodes`: `--gpus` is a total per job that
SLURM may otherwise spread over nodes, while verl and vLLM run on one), GPUs
with `gpu` (+ `gpu_model`) or a literal `gres`, CPUs with `cpus_per_gpu`,
memory with `mem_mb`, and time with `runtime`, which grows with each retry
(attempt k asks for k x runtime, capped at the site's limit) because a retried
training run resumes from its last checkpoint and needs the time it lost.
`cpus_per_task` is never set here: the SLURM plugin gives it precedence over
`cpus_per_gpu`. A GPU rule's `threads` must be all of its CPUs
(`topology.gpu_job_threads`): the plugin's job step asks srun for `--cpus-per-task=
threads` whenever SLURM_GPUS is unset, which is the case under `--gres`.
Partition and account are the SLURM profile's business (slurm/config.yaml).
"""

from __future__ import annotations

# The shape of a GPU job (one node, its GPUs and CPUs) is `isocompute.topology`'s,
# shared with the verl backend; gpu_job_threads is read from here by rules/common.smk.
from isocompute.topology import NODES_PER_GPU_JOB, gpu_job_threads  # noqa: F401 (gpu_job_threads: rules)


def attempt_runtime(minutes: int, cap: int):
    """A runtime resource (minutes) that grows with the attempt: min(attempt * minutes, cap)."""
    minutes, cap = int(minutes), int(cap)

    def runtime(wildcards, attempt):
        return min(int(attempt) * minutes, cap)

    runtime.__doc__ = f"min(attempt x {minutes}, {cap}) minutes"
    return runtime


def gpu_request(cfg: dict, gpus: int) -> dict:
    """`gres` when the config gives one, else `gpu` (+ `gpu_model`)."""
    c = cfg["cluster"]
    if c["gres"]:
        return {"gres": c["gres"]}
    out = {"gpu": int(gpus)}
    if c["gpu_model"]:
        out["gpu_model"] = c["gpu_model"]
    return out


def gpu_job_resources(cfg: dict, kind: str, gpus: int | None = None) -> dict:
    """Resources of a GPU job: kind 'train' (one verl run) or 'sample' (a vLLM sampling job);
    `gpus` overrides the count (the local backend trains on one GPU)."""
    c = cfg["cluster"]
    job = c[kind]
    return {
        **gpu_request(cfg, job["gpus"] if gpus is None else gpus),
        "nodes": NODES_PER_GPU_JOB,
        "cpus_per_gpu": int(job["cpus_per_gpu"]),
        "mem_mb": int(job["mem_mb"]),
        "runtime": attempt_runtime(job["runtime"], c["max_runtime"]),
    }


def cpu_job_resources(cfg: dict) -> dict:
    """Resources of a CPU job worth submitting (data stages, scoring, local-backend training on CPU)."""
    c = cfg["cluster"]
    return {
        "mem_mb": int(c["cpu"]["mem_mb"]),
        "runtime": attempt_runtime(c["cpu"]["runtime"], c["max_runtime"]),
    }


def merge_job_resources(cfg: dict) -> dict:
    """Resources of a checkpoint merge: a CPU job with the memory of a whole model (cluster.merge)."""
    c = cfg["cluster"]
    return {
        "mem_mb": int(c["merge"]["mem_mb"]),
        "runtime": attempt_runtime(c["merge"]["runtime"], c["max_runtime"]),
    }


def train_uses_gpu(cfg: dict) -> bool:
    t = cfg["train"]
    return t["backend"] == "verl" or str(t["device"]).startswith("cuda")


def sampling_uses_gpu(cfg: dict) -> bool:
    """Difficulty sampling on vLLM's CUDA build (a GPU job); on its CPU build it is a CPU job."""
    return cfg["sampling"]["backend"] == "vllm" and cfg["cluster"]["vllm"]["device"] == "cuda"
