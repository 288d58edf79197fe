"""Sampling completions from a policy: the sampler interface and its local
implementation (batched, KV-cached, left-padded, with temperature and top-p).

The same interface is implemented over vLLM for the cluster. Each prompt is
prefilled once and its KV cache repeated n times, and finished sequences are
dropped from the batch, which is why this beats `generate` at tiny sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import torch


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.6
    top_p: float = 1.0
    max_new_tokens: int = 16

    @classmethod
    def from_config(cls, cfg: dict) -> "SamplingParams":
        s = cfg["sampling"]
        return cls(s["temperature"], s["top_p"], s["max_new_tokens"])


class Sampler(Protocol):
    def sample(self, prompt_ids: Sequence[Sequence[int]], n: int, params: SamplingParams,
               seed: int) -> list[list[list[int]]]:
        """For each prompt, n completions as token ids (EOS included when emitted)."""


def sample_next(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> torch.Tensor:
    """One token per row from logits [rows, vocab] with temperature and nucleus sampling."""
    probs = torch.softmax(logits.float() / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p (the top token always stays).
        drop = sorted_p.cumsum(-1) - sorted_p >= params.top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def pack_prompts(prompts: Sequence[Sequence[int]], pad_id: int, device):
    """Left-padded prompts [G, P]: input_ids, attention_mask, position_ids."""
    P = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), P), pad_id, dtype=torch.long)
    attn = torch.zeros((len(prompts), P), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, P - len(p):] = torch.tensor(p, dtype=torch.long)
        attn[i, P - len(p):] = 1
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), attn.to(device), pos.to(device)


@torch.no_grad()
def sample_group(model, prompt_ids: Sequence[Sequence[int]], n: int, params: SamplingParams,
                 eos_id: int, pad_id: int, generator: torch.Generator) -> list[list[list[int]]]:
    """n completions for each of a few prompts, in one KV-cached batch."""
    from isocompute.forward import causal_lm

    device = next(model.parameters()).device
    ids, mask, pos = pack_prompts(prompt_ids, pad_id, device)
    forward = causal_lm(model)
    cache = forward.new_cache(capacity=ids.shape[1] + params.max_new_tokens)
    logits = forward(ids, mask, pos, cache)
    # Prefill once per prompt, then fan the cache out to n rollouts each.
    cache.batch_repeat_interleave(n)
    logits = logits[:, -1].repeat_interleave(n, dim=0)
    mask = mask.repeat_interleave(n, dim=0)
    next_pos = pos[:, -1:].repeat_interleave(n, dim=0) + 1

    rows = len(prompt_ids) * n
    alive = torch.arange(rows, device=device)  # original row of each live batch row
    tokens: list[list[int]] = [[] for _ in range(rows)]
    for step in range(params.max_new_tokens):
        nxt = sample_next(logits, params, generator)
        for r, t in zip(alive.tolist(), nxt.tolist()):
            tokens[r].append(t)
        done = nxt == eos_id
        if step == params.max_new_tokens - 1:
            break
        if done.any():
            keep = (~done).nonzero().squeeze(-1)
            if keep.numel() == 0:
                break
            cache.batch_select_indices(keep)
            alive, nxt, mask, next_pos = alive[keep], nxt[keep], mask[keep], next_pos[keep]
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
        logits = forward(nxt[:, None], mask, next_pos, cache)[:, -1]
        next_pos = next_pos + 1
    return [tokens[i * n:(i + 1) * n] for i in range(len(prompt_ids))]


class LocalSampler:
    """Batched KV-cached sampling with a Hugging Face model on CPU or one GPU."""

    def __init__(self, model, tokenizer, batch_size: int = 1024):
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size

    def sample(self, prompt_ids, n, params, seed=None, generator=None, progress=None):
        device = next(self.model.parameters()).device
        if generator is None:
            generator = torch.Generator(device=device)
            generator.manual_seed(int(seed or 0))
        per_batch = max(1, self.batch_size // n)
        results: list[list[list[int]]] = []
        for start in range(0, len(prompt_ids), per_batch):
            chunk = prompt_ids[start:start + per_batch]
            results.extend(sample_group(self.model, chunk, n, params, self.tokenizer.eos_token_id,
                                        self.tokenizer.pad_token_id, generator))
            if progress is not None:
                progress.update(len(chunk))
        return results

    def decode(self, completions: list[list[int]]) -> list[str]:
        return self.tokenizer.batch_decode(completions, skip_special_tokens=True)
