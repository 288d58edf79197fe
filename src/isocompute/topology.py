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


# The head sizes of vLLM 0.24's CPU attention (CPUAttentionBackend.get_supported_head_sizes,
# vllm/v1/attention/backends/cpu_attn.py; pinned by tests/envs/test_twin_vllm_difficulty.py). On
# CUDA vLLM falls back to backends that take any head size (FlexAttention), so only the CPU
# build limits it.
VLLM_CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)


def model_head_dim(cfg: dict) -> tuple[int, str] | None:
    """(head_dim, the config key that sets it) of the base model, when the config tells: the
    embedded model's hidden_size / num_heads, or a local model directory's config.json (a hub
    id, or a directory not built yet, tells nothing: None)."""
    from pathlib import Path

    model = cfg["base_model"]
    if model["source"] == "embedded":
        return int(model["hidden_size"]) // int(model["num_heads"]), "base_model.num_heads"
    config = Path(str(model["path"])) / "config.json"
    if not config.is_file():
        return None
    hf = _model_config(config)
    head_dim = hf.get("head_dim") or (hf.get("hidden_size", 0) // max(1, hf.get("num_attention_heads", 1)))
    return (int(head_dim), "base_model.path") if head_dim else None


def _model_config(config) -> dict:
    """The (text) model's section of a Hugging Face config.json: a JSON object whose head_dim,
    hidden_size and num_attention_heads, where given, are integers. A garbled file is a
    ConfigError naming it and what it should hold, not a traceback in the config check."""
    import json

    def refuse(found: str, expected: str = "a JSON object (a Hugging Face model config)") -> ConfigError:
        return ConfigError(f"config key 'base_model.path': {config} {found}; expected {expected}")

    def kind(value) -> str:
        return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
            type(value), "number")

    try:
        hf = json.loads(config.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise refuse(f"is not valid JSON ({exc})") from None
    if not isinstance(hf, dict):
        raise refuse(f"holds a JSON {kind(hf)}")
    hf = hf.get("text_config", hf)
    if not isinstance(hf, dict):
        raise refuse(f"has a text_config that is a JSON {kind(hf)}", "text_config to be a JSON object")
    for key in ("head_dim", "hidden_size", "num_attention_heads"):
        value = hf.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise refuse(f"has {key} {json.dumps(value)}", f"{key} to be an integer")
    return hf


def vllm_on_cpu(cfg: dict) -> str | None:
    """The config key that puts a vLLM engine on the CPU, if one does: the difficulty sampler
    (sampling.backend vllm, cluster.vllm.device cpu) or verl's rollout on the CPU
    (train.backend verl, train.device cpu, cluster.verl.cpu_rollout vllm)."""
    if cfg["sampling"]["backend"] == "vllm" and cfg["cluster"]["vllm"]["device"] == "cpu":
        return "cluster.vllm.device"
    train = cfg["train"]
    if train["backend"] == "verl" and train["device"] == "cpu" and cfg["cluster"]["verl"]["cpu_rollout"] == "vllm":
        return "cluster.verl.cpu_rollout"
    return None


def check_vllm_head_dim(cfg: dict) -> None:
    """A model vLLM's CPU attention can serve, when a vLLM engine runs on the CPU: else it
    would fail only after the engine loaded the model. ConfigError naming the key."""
    where = vllm_on_cpu(cfg)
    found = model_head_dim(cfg) if where else None
    if found is None or found[0] in VLLM_CPU_HEAD_SIZES:
        return
    head_dim, key = found
    shape = (f"base_model.hidden_size {cfg['base_model']['hidden_size']} / num_heads {cfg['base_model']['num_heads']}"
             if key == "base_model.num_heads" else f"{cfg['base_model']['path']}/config.json")
    raise ConfigError(f"config key '{key}': head_dim {head_dim} ({shape}) is one vLLM's CPU attention cannot serve "
                      f"({where} puts vLLM on the CPU); it takes head_dim in {list(VLLM_CPU_HEAD_SIZES)}")


def check_sampling_engine(cfg: dict) -> None:
    """vLLM's tensor parallelism fits in the sampling job (sampling.backend vllm: the difficulty
    jobs), which would otherwise fail only once the job has its GPUs, and a vLLM engine on the
    CPU gets a model its attention takes. ConfigError naming the keys."""
    check_vllm_head_dim(cfg)
    if cfg["sampling"]["backend"] != "vllm" or cfg["cluster"]["vllm"]["device"] == "cpu":
        return
    tp, gpus = int(cfg["cluster"]["vllm"]["tensor_parallel_size"]), job_gpus(cfg, "sample")
    if tp > gpus:
        where = "the count of cluster.gres" if cfg["cluster"]["gres"] else "cluster.sample.gpus"
        raise ConfigError(f"config key 'cluster.vllm.tensor_parallel_size': {tp} is more GPUs than the sampling "
                          f"job has ({where} = {gpus}); at most {gpus}, or raise {where}")
