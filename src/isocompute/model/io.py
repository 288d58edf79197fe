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


def load_policy(path: Path | str, device: str | torch.device = "cpu", dtype=torch.float32):
    """(model, tokenizer) from a model directory, model in eval mode."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = check_model_dir(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


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
