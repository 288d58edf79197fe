"""The lean forward (isocompute.forward) gives the library's logits and gradients
exactly, not only closely, for both model families the embedded model and the
cluster configs use; so sampling and training draw the same tokens with it."""

from __future__ import annotations

import pytest
import torch

from isocompute import forward as lean
from isocompute.sampling import LocalSampler, SamplingParams, pack_prompts
from isocompute.train.backends.local import pack_responses, response_logits


def tiny(family: str, **extra):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    common = dict(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0, eos_token_id=1,
                  bos_token_id=None, tie_word_embeddings=family == "llama", **extra)
    torch.manual_seed(0)
    model = (LlamaForCausalLM(LlamaConfig(**common)) if family == "llama" else
             Qwen2ForCausalLM(Qwen2Config(**common)))
    if family == "qwen2":  # q/k/v biases are zero at initialisation: make them count
        with torch.no_grad():
            for layer in model.model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                    proj.bias.normal_()
    return model.eval()


PROMPTS = {"padded": [[5, 6, 7, 8, 9, 10, 11], [12, 13, 14], [15, 16, 17, 18, 19], [20, 21, 22, 23, 24, 25, 26]],
           "unpadded": [[5, 6, 7, 8], [9, 10, 11, 12]]}


def library(model, ids, mask, pos, cache):
    return model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True).logits


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("prompts", sorted(PROMPTS))
@pytest.mark.parametrize("capacity", [None, 40])
def test_prefill_and_decode_logits_equal_the_library(family, prompts, capacity):
    from transformers import DynamicCache

    model = tiny(family)
    fast = lean.lean_model(model)
    assert fast is not None
    ids, mask, pos = pack_prompts(PROMPTS[prompts], 0, "cpu")
    with torch.no_grad():
        ref_cache, cache = DynamicCache(), fast.new_cache(capacity)
        want, got = library(model, ids, mask, pos, ref_cache), fast(ids, mask, pos, cache)
        real = mask.bool()
        assert torch.equal(want[real], got[real])
        ref_cache.batch_repeat_interleave(3)
        cache.batch_repeat_interleave(3)
        mask, pos = mask.repeat_interleave(3, 0), pos[:, -1:].repeat_interleave(3, 0) + 1
        token = torch.randint(2, 50, (mask.shape[0], 1), generator=torch.Generator().manual_seed(1))
        for step in range(5):
            if step == 2:  # rows finish: the caches shrink to the live rows
                keep = torch.arange(0, mask.shape[0], 2)
                ref_cache.batch_select_indices(keep)
                cache.batch_select_indices(keep)
                mask, pos, token = mask[keep], pos[keep], token[keep]
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
            assert torch.equal(library(model, token, mask, pos, ref_cache), fast(token, mask, pos, cache))
            pos, token = pos + 1, (token * 7 + 3) % 48 + 2


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_training_logits_and_gradients_equal_the_library(family, monkeypatch):
    model = tiny(family)
    prompts = pack_prompts(PROMPTS["padded"][:3], 0, "cpu")
    responses, rmask = pack_responses([[3, 4, 5], [6], [7, 8], [9, 10, 11, 12], [13, 14]], 0, "cpu")
    row_group = torch.tensor([0, 0, 1, 2, 2])

    def loss_and_grads():
        model.zero_grad(set_to_none=True)
        logits = response_logits(model, prompts, row_group, responses, rmask)
        (logits.log_softmax(-1)[..., 3] * rmask).sum().backward()
        return logits.detach(), {k: p.grad.clone() for k, p in model.named_parameters()}

    fast_logits, fast_grads = loss_and_grads()
    monkeypatch.setattr(lean, "lean_model", lambda m: None)
    monkeypatch.setattr(lean, "_FORWARDS", type(lean._FORWARDS)())
    slow_logits, slow_grads = loss_and_grads()
    assert torch.equal(fast_logits, slow_logits)
    assert fast_grads.keys() == slow_grads.keys()
    assert all(torch.equal(fast_grads[k], slow_grads[k]) for k in fast_grads)


@pytest.mark.parametrize("index", [[0, 0, 0, 1, 1, 2, 2, 2, 2], [2, 0, 1, 0, 2, 2], [1]])
def test_select_rows_has_indexings_values_and_gradient_bits(index):
    """The KV cache's fan-out (lean.select_rows): x[index]'s values and, with index_add_ in its
    backward, the same gradient bits as autograd's backward of indexing (index_put_)."""
    torch.manual_seed(0)
    x = torch.randn(3, 4, 7, 5, dtype=torch.float32)
    weight = torch.randn(len(index), 4, 7, 5) * 1e3  # large and small terms: rounding shows any reordering
    idx = torch.tensor(index)
    grads = []
    for pick in (lambda t: t[idx, ...], lambda t: lean.select_rows(t, idx)):
        leaf = x.clone().requires_grad_(True)
        out = pick(leaf)
        (out * weight).sum().backward()
        grads.append((out.detach(), leaf.grad))
    assert torch.equal(grads[0][0], grads[1][0])
    assert torch.equal(grads[0][1], grads[1][1])


def test_sampling_draws_the_same_tokens_and_follows_parameter_updates(monkeypatch):
    model = tiny("llama")
    tokenizer = type("Tok", (), {"eos_token_id": 1, "pad_token_id": 0})()
    params = SamplingParams(temperature=1.0, top_p=0.9, max_new_tokens=6)

    def draw():
        return LocalSampler(model, tokenizer, batch_size=8).sample(PROMPTS["padded"], 4, params, seed=3)

    fast = draw()
    layer = model.model.layers[0]
    shifts = [torch.randn(p.weight.shape, generator=torch.Generator().manual_seed(i))
              for i, p in enumerate((layer.self_attn.v_proj, layer.mlp.up_proj))]
    saved = [layer.self_attn.v_proj.weight.clone(), layer.mlp.up_proj.weight.clone()]
    with torch.no_grad():  # an optimiser step: the stacked weights must not go stale
        layer.self_attn.v_proj.weight.add_(shifts[0])
        layer.mlp.up_proj.weight.add_(shifts[1])
    fast_after = draw()
    monkeypatch.setattr(lean, "lean_model", lambda m: None)
    monkeypatch.setattr(lean, "_FORWARDS", type(lean._FORWARDS)())
    assert draw() == fast_after
    with torch.no_grad():
        layer.self_attn.v_proj.weight.copy_(saved[0])  # a load_state_dict
        layer.mlp.up_proj.weight.copy_(saved[1])
    assert draw() == fast
    assert fast != fast_after


def test_what_the_lean_forward_does_not_cover_keeps_the_library():
    scaled = tiny("llama", rope_scaling={"rope_type": "linear", "factor": 2.0})
    assert lean.lean_model(scaled) is None
    assert isinstance(lean.causal_lm(scaled), lean.LibraryCausalLM)
    assert isinstance(lean.causal_lm(tiny("qwen2")), lean.LeanCausalLM)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_the_lean_loader_builds_the_library_models_parameters(family, tmp_path):
    from isocompute.model.io import LeanTokenizer, load_policy
    from isocompute.model.tokenizer import build_char_tokenizer

    library_model = tiny(family)
    library_model.save_pretrained(tmp_path)
    build_char_tokenizer().save_pretrained(tmp_path)
    (tmp_path / "isocompute_meta.json").write_text("{}")  # as the embedded model's directory has
    model, tok = load_policy(tmp_path, lean=True)
    ref, ref_tok = load_policy(tmp_path)
    assert isinstance(model, lean.LeanModule) and not isinstance(ref, lean.LeanModule)
    # The same names in the same order (an optimiser's state and a checkpoint carry over), equal values.
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert list(model.state_dict()) == list(ref.state_dict())
    assert all(torch.equal(v, ref.state_dict()[k]) for k, v in model.state_dict().items())
    assert (model.lm_head.weight is model.model.embed_tokens.weight) == (family == "llama")
    ids, mask, pos = pack_prompts(PROMPTS["padded"], 0, "cpu")
    with torch.no_grad():
        got = lean.causal_lm(model)(ids, mask, pos, lean.causal_lm(model).new_cache())
        want = library(ref, ids, mask, pos, None)
    assert torch.equal(got[mask.bool()], want[mask.bool()])
    chat = [{"role": "user", "content": "Compute 1+2."}]
    # The embedded Llama's tokenizer is the lean one (tests/model/test_lean_tokenizer.py); Qwen2's is
    # AutoTokenizer's own (it picks a Qwen2 class).
    assert type(tok) is (LeanTokenizer if family == "llama" else type(ref_tok))
    for text in ("Compute 12+34. \\boxed{46}", "  a\tb\n(7*8)-9"):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert ids == ref_tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids, skip_special_tokens=True) == ref_tok.decode(ids, skip_special_tokens=True)
    assert (tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            == ref_tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True))
    with pytest.raises(TypeError, match="causal_lm"):
        model(ids)


def test_the_lean_loader_leaves_other_models_to_the_library(tmp_path):
    from isocompute.model.io import load_policy
    from isocompute.model.tokenizer import build_char_tokenizer

    tiny("llama", rope_scaling={"rope_type": "linear", "factor": 2.0}).save_pretrained(tmp_path)
    build_char_tokenizer().save_pretrained(tmp_path)
    model, _ = load_policy(tmp_path, lean=True)
    assert not isinstance(model, lean.LeanModule)
