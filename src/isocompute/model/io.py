"""Loading a policy from a Hugging Face model directory (the embedded base
model, a converted checkpoint, or real weights on the cluster)."""

from __future__ import annotations

from pathlib import Path

import torch

from isocompute.errors import InputError

REQUIRED_FILES = ["config.json", "tokenizer_config.json"]


def check_model_dir(path: Path | str) -> Path:
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"model directory not found: {path}")
    missing = [f for f in REQUIRED_FILES if not (path / f).is_file()]
    if not any(path.glob("*.safetensors")) and not any(path.glob("*.bin")):
        missing.append("*.safetensors")
    if missing:
        raise InputError(f"model directory {path}: missing {missing}; expected a Hugging Face model directory")
    return path


def load_policy(path: Path | str, device: str | torch.device = "cpu", dtype=torch.float32, *, lean: bool = False):
    """(model, tokenizer) from a model directory, model in eval mode.

    With `lean`, a model the lean forward covers (isocompute.forward: Llama or Qwen2, one
    safetensors file) is built as its plain-torch module tree and its weights read
    directly, and the embedded model's tokenizer is made without the Auto classes: the same parameters,
    numbers and tokens, without importing transformers' model code (~4 s a job on a
    laptop). For the samplers and the local trainer, which run it only through the lean
    forward; anything else gets the library's model."""
    path = check_model_dir(path)
    tokenizer = _load_tokenizer(path) if lean else None
    if tokenizer is None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path)
    model = _load_lean(path, dtype) if lean else None
    if model is None:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    model = model.to(device)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def _load_tokenizer(path: Path):
    """The embedded Llama's character tokenizer (a directory with isocompute_meta.json) by its
    class, what AutoTokenizer builds for it; None for other models (AutoTokenizer picks a
    model-specific class by config.json's model_type: Qwen2's tokenizes differently)."""
    import json

    config = json.loads((path / "tokenizer_config.json").read_text())
    model_type = json.loads((path / "config.json").read_text()).get("model_type")
    if (not (path / "isocompute_meta.json").is_file() or config.get("tokenizer_class") != "TokenizersBackend"
            or model_type != "llama" or not (path / "tokenizer.json").is_file()):
        return None
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(path)


def _load_lean(path: Path, dtype):
    """The lean module tree with the directory's weights, or None where it does not apply."""
    import json

    from isocompute.forward import LeanConfig, LeanModule

    cfg = LeanConfig(json.loads((path / "config.json").read_text()))
    weights = path / "model.safetensors"
    if not cfg.supported() or not weights.is_file():
        return None
    from safetensors.torch import load_file

    state = load_file(str(weights))
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    model = LeanModule(cfg)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not (cfg.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        raise InputError(f"{weights}: weights do not match config.json (missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]})")
    return model.to(dtype)


def render_prompts(tokenizer, prompts) -> list[list[int]]:
    """Chat-template token ids of verl-schema prompts (lists of messages)."""
    out = []
    for messages in prompts:
        text = tokenizer.apply_chat_template([dict(m) for m in messages], tokenize=False,
                                             add_generation_prompt=True)
        out.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    return out


def pick_device(requested: str = "auto") -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)
