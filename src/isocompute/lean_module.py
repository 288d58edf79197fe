"""A Llama or Qwen2 causal LM's module tree without `transformers`: the parameter names and
shapes of a Hugging Face checkpoint (config.json + safetensors), for `isocompute.forward`'s
lean forward to run. `LeanConfig` reads the fields of config.json that forward reads and says
whether the lean forward reproduces the library's on it (`supported`); `LeanModule` holds the
parameters under the library's names, so a checkpoint loads and saves unchanged."""

from __future__ import annotations

import torch

SUPPORTED = {"llama", "qwen2"}


# --- the module tree, without transformers ----------------------------------------------

class LeanConfig:
    """The fields of a Hugging Face config.json the lean forward reads, with their defaults."""

    def __init__(self, raw: dict):
        self.raw = raw
        self.model_type = raw.get("model_type", "")
        self.hidden_size = int(raw["hidden_size"])
        self.intermediate_size = int(raw["intermediate_size"])
        self.num_hidden_layers = int(raw["num_hidden_layers"])
        self.num_attention_heads = int(raw["num_attention_heads"])
        self.num_key_value_heads = int(raw.get("num_key_value_heads") or self.num_attention_heads)
        self.head_dim = int(raw.get("head_dim") or self.hidden_size // self.num_attention_heads)
        self.vocab_size = int(raw["vocab_size"])
        self.max_position_embeddings = int(raw["max_position_embeddings"])
        self.rms_norm_eps = float(raw.get("rms_norm_eps", 1e-6))
        self.pad_token_id = raw.get("pad_token_id")
        self.eos_token_id = raw.get("eos_token_id")
        self.tie_word_embeddings = bool(raw.get("tie_word_embeddings", False))
        self.hidden_act = raw.get("hidden_act", "silu")
        self.attention_dropout = float(raw.get("attention_dropout", 0.0))
        self.pretraining_tp = int(raw.get("pretraining_tp", 1))
        self.use_sliding_window = bool(raw.get("use_sliding_window", False))
        rope = dict(raw.get("rope_parameters") or {})
        if not rope:  # configs written before transformers 5: rope_theta and rope_scaling at the top level
            rope = {"rope_theta": raw.get("rope_theta", 10000.0), **(raw.get("rope_scaling") or {})}
            rope.setdefault("rope_type", rope.pop("type", "default"))
        self.rope_parameters = rope
        self._attn_implementation = "sdpa"
        # Which projections carry a bias: Llama's two flags; Qwen2's q, k, v always.
        qwen2 = self.model_type == "qwen2"
        self.qkv_bias = True if qwen2 else bool(raw.get("attention_bias", False))
        self.o_bias = False if qwen2 else bool(raw.get("attention_bias", False))
        self.mlp_bias = False if qwen2 else bool(raw.get("mlp_bias", False))

    def supported(self) -> bool:
        return (self.model_type in SUPPORTED and self.rope_parameters.get("rope_type", "default") == "default"
                and self.hidden_act == "silu" and not self.use_sliding_window and self.attention_dropout == 0.0
                and self.pretraining_tp == 1 and not self.raw.get("quantization_config"))


class _RMSNorm(torch.nn.Module):
    def __init__(self, size: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(size))


class _Rotary(torch.nn.Module):
    def __init__(self, cfg: LeanConfig):
        super().__init__()
        dim, base = cfg.head_dim, cfg.rope_parameters.get("rope_theta", 10000.0)
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0


class _Attention(torch.nn.Module):
    def __init__(self, cfg: LeanConfig):
        super().__init__()
        H, Hkv, D = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.q_proj = torch.nn.Linear(cfg.hidden_size, H * D, bias=cfg.qkv_bias)
        self.k_proj = torch.nn.Linear(cfg.hidden_size, Hkv * D, bias=cfg.qkv_bias)
        self.v_proj = torch.nn.Linear(cfg.hidden_size, Hkv * D, bias=cfg.qkv_bias)
        self.o_proj = torch.nn.Linear(H * D, cfg.hidden_size, bias=cfg.o_bias)


class _MLP(torch.nn.Module):
    def __init__(self, cfg: LeanConfig):
        super().__init__()
        self.gate_proj = torch.nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=cfg.mlp_bias)
        self.up_proj = torch.nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=cfg.mlp_bias)
        self.down_proj = torch.nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=cfg.mlp_bias)


class _Layer(torch.nn.Module):
    def __init__(self, cfg: LeanConfig):
        super().__init__()
        self.self_attn = _Attention(cfg)
        self.mlp = _MLP(cfg)
        self.input_layernorm = _RMSNorm(cfg.hidden_size)
        self.post_attention_layernorm = _RMSNorm(cfg.hidden_size)


class _Core(torch.nn.Module):
    def __init__(self, cfg: LeanConfig):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(cfg.vocab_size, cfg.hidden_size, cfg.pad_token_id)
        self.layers = torch.nn.ModuleList([_Layer(cfg) for _ in range(cfg.num_hidden_layers)])
        self.norm = _RMSNorm(cfg.hidden_size)
        self.rotary_emb = _Rotary(cfg)


class LeanModule(torch.nn.Module):
    """A Llama / Qwen2 causal LM as plain torch modules named and ordered as transformers'
    (`model.layers.0.self_attn.q_proj.weight`, ...; the same parameters() order), so its
    state_dict, an optimiser's state and a checkpoint are interchangeable with the library
    model's. Only the lean forward runs it (`causal_lm`); it has no forward of its own."""

    def __init__(self, cfg: LeanConfig):
        super().__init__()
        self.config = cfg
        self.model = _Core(cfg)
        self.lm_head = torch.nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, *args, **kwargs):
        raise TypeError("LeanModule is run by isocompute.forward.causal_lm(model), not called")
