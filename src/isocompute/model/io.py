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
    """The embedded Llama's character tokenizer (a directory with isocompute_meta.json) as a
    `LeanTokenizer`: what AutoTokenizer builds for it (a PreTrainedTokenizerFast over the same
    tokenizer.json and chat template), without importing transformers (~2 s a job); None for
    other models (AutoTokenizer picks a model-specific class by config.json's model_type:
    Qwen2's tokenizes differently)."""
    import json

    config = json.loads((path / "tokenizer_config.json").read_text())
    model_type = json.loads((path / "config.json").read_text()).get("model_type")
    if (not (path / "isocompute_meta.json").is_file() or config.get("tokenizer_class") != "TokenizersBackend"
            or model_type != "llama" or not (path / "tokenizer.json").is_file()
            or not (path / "chat_template.jinja").is_file() or "chat_template" in config
            or set(config) - LeanTokenizer.CONFIG_KEYS or config.get("clean_up_tokenization_spaces")):
        return None
    return LeanTokenizer(path, config)


class LeanTokenizer:
    """The part of PreTrainedTokenizerFast's interface the samplers and the local trainer use
    (`__call__` without special tokens, `batch_decode`, `apply_chat_template` rendering text,
    the pad and EOS tokens), on `tokenizers` and jinja2 directly, for the embedded model's
    character tokenizer: the same ids and texts (tests/model/test_lean_tokenizer.py compares)."""

    # tokenizer_config.json keys it reads (another key means a tokenizer it does not reproduce).
    CONFIG_KEYS = {"backend", "eos_token", "model_max_length", "pad_token", "padding_side", "tokenizer_class",
                   "unk_token", "bos_token", "clean_up_tokenization_spaces"}

    def __init__(self, path: Path, config: dict):
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.eos_token, self.pad_token = config.get("eos_token"), config.get("pad_token")
        self.special_tokens = {k: config[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token")
                               if config.get(k) is not None}
        # transformers' chat-template environment (chat_template_utils._cached_compile_jinja_template),
        # less its assistant-mask extension, which rendering text does not use.
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
        env.globals["raise_exception"] = _raise_template_error
        self.template = env.from_string((path / "chat_template.jinja").read_text())

    @property
    def eos_token_id(self) -> int | None:
        return None if self.eos_token is None else self.backend.token_to_id(self.eos_token)

    @property
    def pad_token_id(self) -> int | None:
        return None if self.pad_token is None else self.backend.token_to_id(self.pad_token)

    def __len__(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict:
        return {"input_ids": self.backend.encode(text, add_special_tokens=add_special_tokens).ids}

    def batch_decode(self, sequences, skip_special_tokens: bool = False) -> list[str]:
        # One decode per sequence, as the library's batch_decode: `decode_batch` hands a few
        # short rows to a thread pool, whose start costs more than decoding them (ms on a busy machine).
        return [self.backend.decode(list(s), skip_special_tokens=skip_special_tokens) for s in sequences]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def apply_chat_template(self, messages, tokenize: bool = True, add_generation_prompt: bool = False):
        text = self.template.render(messages=messages, tools=None, documents=None,
                                    add_generation_prompt=add_generation_prompt, **self.special_tokens)
        return self(text, add_special_tokens=False)["input_ids"] if tokenize else text


def _raise_template_error(message: str):
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _load_lean(path: Path, dtype):
    """The lean module tree with the directory's weights, or None where it does not apply."""
    import json

    from isocompute.lean_module import LeanConfig, LeanModule

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
