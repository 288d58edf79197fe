"""The lean tokenizer (isocompute.model.io.LeanTokenizer) is the embedded model's
PreTrainedTokenizerFast without transformers: the same prompt ids, decoded texts and
special tokens on every problem of a generated pool and on random id sequences."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from isocompute.model.io import LeanTokenizer, _load_tokenizer, load_policy, render_prompts
from isocompute.model.tokenizer import build_char_tokenizer


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from isocompute.model.embedded import build_model

    path = tmp_path_factory.mktemp("embedded")
    tok = build_char_tokenizer()
    cfg = {"base_model": {"architecture": "llama", "hidden_size": 16, "intermediate_size": 32, "num_layers": 1,
                          "num_heads": 2, "max_position_embeddings": 64}}
    build_model(tok, cfg, seed=0).save_pretrained(path)
    tok.save_pretrained(path)
    (path / "isocompute_meta.json").write_text("{}")
    return path


def _problems() -> list[str]:
    rng = np.random.default_rng(0)
    texts = [f"Compute {a}{op}{b}." for a, b, op in zip(rng.integers(0, 1000, 300), rng.integers(0, 1000, 300),
                                                         rng.choice(list("+-*"), 300))]
    return texts + ["", " leading", "trailing ", "a  b", "tab\there", "new\nline", "brace {x} \\boxed{12}",
                    "don't , spaces . before ! punctuation ?", "unicode é ü 数", "<|end|> inside", "<|user|>x"]


def test_the_embedded_directory_gets_the_lean_tokenizer(model_dir):
    _, tok = load_policy(model_dir, lean=True)
    assert isinstance(tok, LeanTokenizer)
    _, ref = load_policy(model_dir)
    assert not isinstance(ref, LeanTokenizer)
    assert (tok.eos_token, tok.pad_token, tok.eos_token_id, tok.pad_token_id) == (
        ref.eos_token, ref.pad_token, ref.eos_token_id, ref.pad_token_id)
    assert len(tok) == len(ref)


def test_same_prompt_ids_and_texts_as_the_library(model_dir):
    _, tok = load_policy(model_dir, lean=True)
    _, ref = load_policy(model_dir)
    texts = _problems()
    prompts = [[{"role": "user", "content": t}] for t in texts]
    prompts.append([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Compute 1+1."}])
    for gen in (True, False):
        for chat in prompts:
            assert (tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=gen)
                    == ref.apply_chat_template(chat, tokenize=False, add_generation_prompt=gen))
    ids = render_prompts(tok, prompts)
    assert ids == render_prompts(ref, prompts)
    for text in texts:
        assert tok(text, add_special_tokens=False)["input_ids"] == ref(text, add_special_tokens=False)["input_ids"]
    for skip in (True, False):
        assert tok.batch_decode(ids, skip_special_tokens=skip) == ref.batch_decode(ids, skip_special_tokens=skip)


def test_same_decoding_of_random_ids_as_the_library(model_dir):
    """What a policy samples: any ids, special ones among them, empty rows included."""
    _, tok = load_policy(model_dir, lean=True)
    _, ref = load_policy(model_dir)
    rng = np.random.default_rng(1)
    rows = [rng.integers(0, len(ref), int(k)).tolist() for k in rng.integers(0, 20, 400)] + [[]]
    for skip in (True, False):
        assert tok.batch_decode(rows, skip_special_tokens=skip) == ref.batch_decode(rows, skip_special_tokens=skip)
        assert [tok.decode(r, skip_special_tokens=skip) for r in rows[:50]] == [
            ref.decode(r, skip_special_tokens=skip) for r in rows[:50]]


@pytest.mark.parametrize("change", [{"chat_template": "{{ messages }}"}, {"add_prefix_space": True},
                                    {"clean_up_tokenization_spaces": True}])
def test_a_tokenizer_config_it_does_not_reproduce_goes_to_the_library(model_dir, tmp_path, change):
    import shutil

    path = tmp_path / "m"
    shutil.copytree(model_dir, path)
    config = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**config, **change}))
    assert _load_tokenizer(path) is None


def test_no_transformers_import(model_dir):
    code = ("import sys\nfrom isocompute.model.io import load_policy\n"
            f"model, tok = load_policy({str(model_dir)!r}, lean=True)\n"
            "tok.apply_chat_template([{'role': 'user', 'content': 'x'}], tokenize=False, add_generation_prompt=True)\n"
            "sys.exit(int('transformers' in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
