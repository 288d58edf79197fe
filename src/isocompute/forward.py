"""A lean forward pass of a Hugging Face Llama or Qwen2 causal LM, in plain PyTorch.

At the embedded model's size (~140k parameters) a forward through `transformers`
spends ~90% of its time in Python around the arithmetic (module hooks, output
records, mask construction): ~4.7 ms a call, most of a training step. This module
runs the same arithmetic on the same parameter tensors with none of that: the
same operations in the same order as `modeling_llama` with SDPA attention (the
same causal mask, or none where `transformers` skips it), so logits are equal to
the library's, not only close (tests/test_lean_forward.py checks both families,
prefill and decode, with and without padding, and gradients).

`lean_model(model)` returns a `LeanCausalLM` for a supported model, else None
(the callers then keep the library's forward): default RoPE, SiLU MLP, no sliding
window, SDPA or eager attention without dropout. It reads the live parameters, so
optimiser steps, `load_state_dict` and autograd all act on the Hugging Face model.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

from isocompute.lean_module import LeanConfig, LeanModule



class LeanCache:
    """Per-layer key/value tensors [B, H_kv, T, D], grown by concatenation (as DynamicCache),
    or, with a `capacity` (sampling, no autograd), written in place into buffers of that
    length and read back as views of the filled prefix: the same tensors, without a copy
    of the whole cache per generated token."""

    def __init__(self, layers: int, capacity: int | None = None):
        self.keys: list[torch.Tensor | None] = [None] * layers
        self.values: list[torch.Tensor | None] = [None] * layers
        self.capacity = capacity
        self.filled = 0

    def length(self) -> int:
        return self.filled

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = self.filled, self.filled + k.shape[-2]
        if layer == len(self.keys) - 1:
            self.filled = end
        if self.capacity is None:
            if self.keys[layer] is not None:
                k = torch.cat([self.keys[layer], k], dim=-2)
                v = torch.cat([self.values[layer], v], dim=-2)
            self.keys[layer], self.values[layer] = k, v
            return k, v
        if self.keys[layer] is None:
            B, H, _, D = k.shape
            self.keys[layer] = k.new_empty(B, H, max(self.capacity, end), D)
            self.values[layer] = v.new_empty(B, H, max(self.capacity, end), D)
        if end > self.keys[layer].shape[-2]:
            raise ValueError(f"KV cache capacity {self.keys[layer].shape[-2]} exceeded ({end} positions)")
        self.keys[layer][:, :, start:end] = k
        self.values[layer][:, :, start:end] = v
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]

    def batch_repeat_interleave(self, repeats: int) -> None:
        self.keys = [k.repeat_interleave(repeats, dim=0) for k in self.keys]
        self.values = [v.repeat_interleave(repeats, dim=0) for v in self.values]

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.keys = [select_rows(k, indices) for k in self.keys]
        self.values = [select_rows(v, indices) for v in self.values]


class _SelectRows(torch.autograd.Function):
    """x[index] along dim 0 whose backward sums each row's gradients with `index_add_`: the
    same additions in the same order (per element, 0 + g_0 + g_1 + ... over the rows that
    took it, in row order) as autograd's backward of indexing (`index_put_` with accumulate,
    serial on the CPU), so the same gradient bits, but a vectorised add per row instead of
    an element-by-element loop: ~10x faster at the fan-out of a prompt's KV cache to its n
    rollouts (tests/test_lean_forward.py compares the gradients)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.rows = x.shape[0]
        return x.index_select(0, index)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (index,) = ctx.saved_tensors
        return grad.new_zeros((ctx.rows, *grad.shape[1:])).index_add_(0, index, grad), None


def select_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x[index] (index: a 1-D long tensor of rows), with the faster exact backward on the CPU."""
    if x.device.type == "cpu" and x.requires_grad and torch.is_grad_enabled():
        return _SelectRows.apply(x, index)
    return x[index, ...]


def lean_model(model) -> "LeanCausalLM | None":
    """The lean forward of `model`, or None where it does not reproduce the library's."""
    if isinstance(model, LeanModule):
        return LeanCausalLM(model)
    cfg = model.config  # what the lean loader checks of a config.json, plus the attention kernel
    if (getattr(cfg, "_attn_implementation", "sdpa") not in ("sdpa", "eager")
            or not LeanConfig(cfg.to_dict()).supported()):
        return None
    return LeanCausalLM(model)


class LeanCausalLM:
    """Callable like the model for what the samplers and the loss use:
    `(input_ids, attention_mask, position_ids, cache, logits_to_keep) -> logits [B, Q', V]`."""

    def __init__(self, model):
        cfg = model.config
        self.model = model
        core = model.model
        self.embed = core.embed_tokens
        self.layers = list(core.layers)
        self.norm = core.norm
        self.lm_head = model.lm_head
        self.inv_freq = core.rotary_emb.inv_freq
        self.attention_scaling = core.rotary_emb.attention_scaling
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.scaling = self.head_dim ** -0.5
        self.eps = cfg.rms_norm_eps
        self.sdpa = getattr(cfg, "_attn_implementation", "sdpa") == "sdpa"
        self.qkv_sizes = [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim]
        self.rope_table = self._rope_rows(cfg.max_position_embeddings)
        self._fused_cache: dict = {}
        self._fuse_parts = [((layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj),
                             (layer.mlp.gate_proj, layer.mlp.up_proj)) for layer in self.layers]

    def new_cache(self, capacity: int | None = None) -> LeanCache:
        return LeanCache(len(self.layers), capacity)

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                 cache: LeanCache, logits_to_keep: int = 0) -> torch.Tensor:
        x = F.embedding(input_ids, self.embed.weight, self.embed.padding_idx)
        B, Q = input_ids.shape
        past = cache.length()
        cos, sin = self._rope(position_ids)             # [B, Q, D]; sin's first half negated
        rope = (cos.unsqueeze(1), sin.unsqueeze(1))     # broadcast over the heads
        mask = self._mask(attention_mask, Q, past, x.device)
        for i, layer in enumerate(self.layers):
            fused = self._fused(i, layer)
            x = x + self._attention(layer.self_attn, fused and fused[0],
                                    _rms(x, layer.input_layernorm.weight, self.eps), rope, mask, cache, i)
            h = _rms(x, layer.post_attention_layernorm.weight, self.eps)
            mlp = layer.mlp
            if fused is None:
                gate, up = (F.linear(h, mlp.gate_proj.weight, mlp.gate_proj.bias),
                            F.linear(h, mlp.up_proj.weight, mlp.up_proj.bias))
            else:
                gate, up = F.linear(h, *fused[1]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, mlp.down_proj.weight, mlp.down_proj.bias)
        x = _rms(x, self.norm.weight, self.eps)
        if logits_to_keep:
            x = x[:, -logits_to_keep:, :]
        return F.linear(x, self.lm_head.weight)

    # --- pieces, each as modeling_llama computes it ---------------------------------

    def _fused(self, i: int, layer):
        """(weight, bias) of the q, k, v projections stacked, and of gate and up, for sampling:
        one matmul each instead of three and two, the same numbers (every output is the same
        dot product), kept until an optimiser step or a load changes a parameter's version.
        None under autograd: the backward of a stacked matmul sums the input's gradient in
        another order than the library's three, so training keeps separate projections and
        the library's gradients exactly."""
        if torch.is_grad_enabled():
            return None
        parts = self._fuse_parts[i]
        # Each tensor's identity and version, read from the modules' parameter dicts (not
        # mod.parameters(), whose generator walk cost more than the layer's arithmetic).
        key = tuple((id(t), t._version) for mods in parts for mod in mods for t in mod._parameters.values()
                    if t is not None)
        hit = self._fused_cache.get(i)
        if hit is None or hit[0] != key:
            hit = self._fused_cache[i] = (key, tuple(_stack(mods) for mods in parts))
        return hit[1]

    def _rope(self, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin [B, Q, D] at the positions: rows of a table computed once, as
        LlamaRotaryEmbedding computes them (the same values; tests compare), the first half
        of sin negated (see _attention)."""
        if position_ids.max() >= self.rope_table[0].shape[0]:
            self.rope_table = self._rope_rows(int(position_ids.max()) + 1)
        return self.rope_table[0][position_ids], self.rope_table[1][position_ids]

    def _rope_rows(self, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        position_ids = torch.arange(length, device=self.inv_freq.device)[None, :]
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv.float() @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        sin = (emb.sin() * self.attention_scaling)[0]
        half = sin.shape[-1] // 2
        return (emb.cos() * self.attention_scaling)[0], torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)

    def _mask(self, attention_mask: torch.Tensor, Q: int, past: int, device) -> torch.Tensor | None:
        """SDPA's boolean mask [B, 1, Q, K] (True: attend), or None where `transformers` skips it
        (no padding, and one query or no cache) and lets SDPA's own causal flag act."""
        K = past + Q
        pad = attention_mask[:, -K:].bool()
        if self.sdpa and (Q == 1 or K == Q) and bool(pad.all()):
            return None
        if Q == 1:
            return pad[:, None, None, :]
        q_pos = torch.arange(past, K, device=device)
        causal = torch.arange(K, device=device)[None, :] <= q_pos[:, None]
        return causal[None, None, :, :] & pad[:, None, None, :]

    def _attention(self, attn, qkv, x, rope, mask, cache: LeanCache, layer: int) -> torch.Tensor:
        cos, sin = rope
        B, Q, _ = x.shape
        if qkv is None:
            q, k, v = (F.linear(x, p.weight, p.bias) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
        else:
            q, k, v = F.linear(x, *qkv).split(self.qkv_sizes, dim=-1)
        shape = (B, Q, -1, self.head_dim)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        # modeling_llama's q * cos + rotate_half(q) * sin, where rotate_half(q) = cat(-q2, q1):
        # the halves swapped by one roll, times sin with its first half negated. (-a) * b and
        # a * (-b) are the same number, so the same bits, in two fewer ops per call.
        half = self.head_dim // 2
        q = q * cos + q.roll(half, -1) * sin
        k = k * cos + k.roll(half, -1) * sin
        k, v = cache.update(layer, k, v)
        groups = self.heads // self.kv_heads
        if self.sdpa:
            extra = {}
            if groups > 1:
                if mask is None:
                    extra = {"enable_gqa": True}
                else:
                    k, v = _repeat_kv(k, groups), _repeat_kv(v, groups)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, scale=self.scaling,
                                                 is_causal=Q > 1 and mask is None, **extra)
        else:
            k, v = _repeat_kv(k, groups), _repeat_kv(v, groups)
            w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
            if mask is not None:
                w = w + torch.where(mask, 0.0, torch.finfo(w.dtype).min)
            out = torch.matmul(torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype), v)
        out = out.transpose(1, 2).contiguous().reshape(B, Q, -1).contiguous()
        return F.linear(out, attn.o_proj.weight, attn.o_proj.bias)


def _stack(modules) -> tuple[torch.Tensor, torch.Tensor | None]:
    weight = torch.cat([m.weight for m in modules], dim=0)
    if modules[0].bias is None:
        return weight, None
    return weight, torch.cat([m.bias for m in modules], dim=0)


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """LlamaRMSNorm; its casts to float32 and back are skipped where x is float32 already."""
    wide = x.dtype == torch.float32
    h = x if wide else x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * (h if wide else h.to(x.dtype))


def _repeat_kv(x: torch.Tensor, n: int) -> torch.Tensor:
    if n == 1:
        return x
    B, H, T, D = x.shape
    return x[:, :, None, :, :].expand(B, H, n, T, D).reshape(B, H * n, T, D)


class LibraryCausalLM:
    """The same call on the library's own forward (models the lean one does not cover)."""

    def __init__(self, model):
        self.model = model

    def new_cache(self, capacity: int | None = None):
        from transformers import DynamicCache

        return DynamicCache()

    def __call__(self, input_ids, attention_mask, position_ids, cache, logits_to_keep: int = 0) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                          past_key_values=cache, use_cache=True, logits_to_keep=logits_to_keep).logits


_FORWARDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def causal_lm(model) -> "LeanCausalLM | LibraryCausalLM":
    """The fastest exact forward of `model`: the lean one where supported, else the library's;
    one per model (its tables and stacked weights kept between calls)."""
    forward = _FORWARDS.get(model)
    if forward is None:
        forward = _FORWARDS[model] = lean_model(model) or LibraryCausalLM(model)
    return forward
