"""The local sampler: determinism for a seed, EOS handling, top-p, and that
the KV-cached batched loop matches step-by-step full recomputation."""

from __future__ import annotations

import torch

from isocompute.config import check_config
from isocompute.model.embedded import build_model
from isocompute.model.tokenizer import build_char_tokenizer
from isocompute.sampling import LocalSampler, SamplingParams, sample_group, sample_next


def tiny_policy():
    tok = build_char_tokenizer()
    cfg = check_config({"base_model": {"hidden_size": 32, "num_layers": 1, "num_heads": 2,
                                       "intermediate_size": 64}})
    return build_model(tok, cfg, seed=0).eval(), tok


def test_sampling_is_deterministic_for_a_seed_and_shapes_match():
    model, tok = tiny_policy()
    prompts = [tok("<|user|>Compute 1+2.<|end|>\n<|assistant|>", add_special_tokens=False)["input_ids"],
               tok("<|user|>Compute 10+23-4.<|end|>\n<|assistant|>", add_special_tokens=False)["input_ids"]]
    s = LocalSampler(model, tok, batch_size=8)
    p = SamplingParams(temperature=1.0, max_new_tokens=6)
    a, b = s.sample(prompts, 3, p, seed=5), s.sample(prompts, 3, p, seed=5)
    assert a == b and len(a) == 2 and all(len(g) == 3 for g in a)
    assert all(1 <= len(c) <= 6 for g in a for c in g)
    # A completion stops at EOS: EOS, if present, is its last token.
    for g in a:
        for c in g:
            assert tok.eos_token_id not in c[:-1]
    assert s.sample(prompts, 3, p, seed=6) != a


def test_kv_cached_left_padded_sampling_matches_full_recompute():
    """With a near-greedy temperature, cached sampling equals argmax decoding by full forwards."""
    model, tok = tiny_policy()
    prompts = [tok("<|user|>Compute 7.<|end|>\n<|assistant|>", add_special_tokens=False)["input_ids"],
               tok("<|user|>Compute 123+456.<|end|>\n<|assistant|>", add_special_tokens=False)["input_ids"]]
    g = torch.Generator().manual_seed(0)
    out = sample_group(model, prompts, 1, SamplingParams(temperature=1e-4, max_new_tokens=5),
                       tok.eos_token_id, tok.pad_token_id, g)
    for prompt, (completion,) in zip(prompts, out):
        seq = list(prompt)
        with torch.no_grad():
            for _ in range(len(completion)):
                logits = model(torch.tensor([seq])).logits[0, -1]
                seq.append(int(logits.argmax()))
        assert seq[len(prompt):] == completion


def test_top_p_keeps_only_the_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    g = torch.Generator().manual_seed(0)
    draws = {int(sample_next(logits, SamplingParams(temperature=1.0, top_p=0.7), g)) for _ in range(300)}
    assert draws == {0, 1}
    draws = {int(sample_next(logits, SamplingParams(temperature=1.0, top_p=1.0), g)) for _ in range(600)}
    assert draws == {0, 1, 2, 3}
