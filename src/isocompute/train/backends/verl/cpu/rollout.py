"""A rollout server on the CPU for verl 0.9.1, standing in for vLLM (whose async
rollout registry knows only vllm, sglang and trtllm): HF transformers sampling in a
Ray actor, one request at a time, with the tempered log-probs vLLM returns
(log_softmax(logits / temperature) of each sampled token), and the actor's weights
loaded after each step through verl's naive (colocated) weight sync.

Three parts, as verl's rollouts have them: `HFServer` (the Ray actor the agent loop's
requests reach), `HFReplica` (verl's RolloutReplica: launches the server) and
`ServerAdapter` (verl's BaseRollout inside the actor worker: hands it the weights).
"""

from __future__ import annotations

import asyncio
import logging

import ray
import torch

from isocompute.train.backends.verl.cpu import ROLLOUT_NAME
from isocompute.train.backends.verl.cpu.verl_names import require

log = logging.getLogger(__name__)

SERVER_NAME = "isocompute_hf_cpu_server_{replica}"


def sample_next(logits: torch.Tensor, temperature: float, top_p: float, top_k: int,
                generator: torch.Generator) -> tuple[int, float]:
    """One token from the last position's logits [vocab] and its log-prob under the
    tempered distribution (top-k / top-p applied after tempering, as vLLM does)."""
    logits = logits.float()
    if temperature <= 0:
        token = int(torch.argmax(logits))
        return token, float(torch.log_softmax(logits, -1)[token])
    logprobs = torch.log_softmax(logits / temperature, -1)
    probs = logprobs.exp()
    if top_k and 0 < top_k < probs.numel():
        probs[probs < torch.topk(probs, top_k).values[-1]] = 0
    if top_p < 1.0:
        ordered, index = torch.sort(probs, descending=True)
        drop = torch.cumsum(ordered, 0) - ordered > top_p
        probs[index[drop]] = 0
    token = int(torch.multinomial(probs / probs.sum(), 1, generator=generator))
    return token, float(logprobs[token])


class HFServer:
    """The rollout server: token ids in, token ids and log-probs out (verl's TokenOutput)."""

    def __init__(self, config, model_config, replica_rank: int = 0):
        from transformers import AutoModelForCausalLM

        torch.set_num_threads(1)
        self.config = config
        path = model_config.get("local_path", None) or model_config.get("path")
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa")
        self.model.eval()
        self.eos = {int(t) for t in _as_list(self.model.generation_config.eos_token_id or
                                             self.model.config.eos_token_id)}
        self.max_positions = int(getattr(self.model.config, "max_position_embeddings", 1 << 30))
        self.generator = torch.Generator().manual_seed(int(config.seed or 0) + 7919 * replica_rank)
        self.global_steps = None
        self.weight_updates = 0

    def load_weights(self, state: dict, global_steps=None) -> int:
        """The actor's full weights (HF names); returns how many tensors were loaded."""
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        tied = {"lm_head.weight"} if getattr(self.model.config, "tie_word_embeddings", False) else set()
        if unexpected or set(missing) - tied:
            raise RuntimeError(f"rollout weights do not fit the model: missing {missing[:5]}, "
                               f"unexpected {unexpected[:5]}")
        self.global_steps = global_steps
        self.weight_updates += 1
        return len(state)

    def stats(self) -> dict:
        return {"weight_updates": self.weight_updates, "global_steps": self.global_steps}

    async def generate(self, request_id=None, *, prompt_ids, sampling_params, image_data=None, video_data=None,
                       **kwargs):
        token_output = require("token_output")
        limit = sampling_params.get("max_tokens") or sampling_params.get("max_new_tokens")
        limit = min(int(limit or self.config.response_length), self.max_positions - len(prompt_ids))
        temperature = float(sampling_params.get("temperature", 1.0))
        top_p = float(sampling_params.get("top_p", 1.0))
        top_k = int(sampling_params.get("top_k", -1) or -1)
        ids = torch.tensor([list(prompt_ids)], dtype=torch.long)
        tokens, logprobs, past, stop = [], [], None, "length"
        step_input = ids
        with torch.no_grad():
            for _ in range(max(0, limit)):
                out = self.model(input_ids=step_input, past_key_values=past, use_cache=True)
                past = out.past_key_values
                token, logprob = sample_next(out.logits[0, -1], temperature, top_p, top_k, self.generator)
                tokens.append(token)
                logprobs.append(logprob)
                if token in self.eos:
                    stop = "completed"
                    break
                step_input = torch.tensor([[token]], dtype=torch.long)
        await asyncio.sleep(0)  # let control calls in between requests
        return token_output(token_ids=tokens, log_probs=logprobs, stop_reason=stop,
                            extra_fields={"global_steps": self.global_steps})

    # verl's server control calls: nothing to free or resume on the CPU.
    async def wake_up(self):
        return None

    async def sleep(self):
        return None

    async def clear_kv_cache(self):
        return None

    async def release_kv_cache(self):
        return None

    async def resume_kv_cache(self):
        return None

    async def abort_all_requests(self, reject_request: bool = False):
        return None

    async def resume_generation(self):
        return None

    async def start_profile(self, **kwargs):
        return None

    async def stop_profile(self):
        return None


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def replica_class() -> type:
    """HFReplica, a subclass of verl's RolloutReplica (defined once verl is importable)."""
    base = require("rollout_replica")

    class HFReplica(base):
        """One HFServer per replica (world size 1: tensor parallelism 1)."""

        async def launch_servers(self):
            name = SERVER_NAME.format(replica=self.replica_rank)
            server = ray.remote(HFServer).options(name=name, num_cpus=0, max_concurrency=self.max_concurrency)
            self.servers = [server.remote(self.config, self.model_config, replica_rank=self.replica_rank)]
            await self.servers[0].stats.remote()  # raises here when the model does not load
            self._server_handle = self.servers[0]
            self._server_address = name

    return HFReplica


def adapter_class() -> type:
    """ServerAdapter, verl's BaseRollout in the actor worker: sends the actor's weights to
    its replica's HFServer."""
    base = require("rollout_base")

    class ServerAdapter(base):
        def __init__(self, config, model_config, device_mesh, replica_rank: int = -1):
            import os

            super().__init__(config, model_config, device_mesh)
            rank = int(os.environ.get("RANK", 0))
            self.replica_rank = rank if replica_rank == -1 else replica_rank
            self.server = None

        async def resume(self, tags):
            return None

        async def release(self):
            return None

        async def update_weights(self, weights, wire_format: str = "named_tensors", **kwargs):
            if wire_format != "named_tensors":
                raise NotImplementedError(f"{ROLLOUT_NAME} rollout: weight wire format {wire_format!r}")
            state = {name: tensor.detach().to("cpu", torch.float32).contiguous().clone()
                     for name, tensor in weights}
            if self.server is None:
                self.server = ray.get_actor(SERVER_NAME.format(replica=self.replica_rank))
            await self.server.load_weights.remote(state, kwargs.get("global_steps"))

    return ServerAdapter


def register() -> None:
    """ROLLOUT_NAME in verl's two rollout registries (the adapter class by path, the replica
    by loader); idempotent."""
    classes = require("rollout_class_registry")
    module = __name__
    if (ROLLOUT_NAME, "async") not in classes:
        global ServerAdapter
        ServerAdapter = adapter_class()
        classes[(ROLLOUT_NAME, "async")] = f"{module}.ServerAdapter"
    replicas = require("rollout_replica_registry")
    if ROLLOUT_NAME not in replicas._registry:
        replica = replica_class()
        replicas.register(ROLLOUT_NAME, lambda: replica)


ServerAdapter = None  # set by register(): verl imports it by path, f"{__name__}.ServerAdapter"
