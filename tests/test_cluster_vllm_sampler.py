"""The vLLM sampler (`isocompute.cluster.vllm_sampler`) over a fake engine: how
config and sampling parameters map onto vLLM, and what happens without vLLM.
"""

from __future__ import annotations

import sys
import types

import pytest

from isocompute.config import check_config
from isocompute.errors import InputError
from isocompute.sampling import SamplingParams


class FakeTokenizer:
    eos_token_id, pad_token_id = 2, 0

    def batch_decode(self, seqs, skip_special_tokens=True):
        return [" ".join(str(t) for t in s if not (skip_special_tokens and t == 2)) for s in seqs]


def fake_vllm(calls: dict) -> types.ModuleType:
    """A stand-in `vllm` module recording how the sampler drives it."""
    mod = types.ModuleType("vllm")

    class SamplingParams:
        def __init__(self, **kw):
            self.kw = kw

    class LLM:
        def __init__(self, **kw):
            calls["engine"] = kw

        def generate(self, prompts, params, use_tqdm=True):
            calls.setdefault("generate", []).append((prompts, params, use_tqdm))
            out = []
            for prompt, p in zip(prompts, params):
                comps = [types.SimpleNamespace(token_ids=[prompt["prompt_token_ids"][0], 100 + i, 2])
                         for i in range(p.kw["n"])]
                out.append(types.SimpleNamespace(outputs=comps))
            return out

    mod.SamplingParams, mod.LLM = SamplingParams, LLM
    return mod


def test_vllm_sampler_maps_config_and_params_onto_the_engine(monkeypatch):
    from isocompute.cluster.vllm_sampler import VLLMSampler

    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm(calls))
    cfg = check_config({"seed": 3, "sampling": {"backend": "vllm", "batch_size": 8},
                        "cluster": {"vllm": {"tensor_parallel_size": 2, "max_model_len": 4096},
                                    "sample": {"gpus": 2}}})
    sampler = VLLMSampler("/models/m", cfg, tokenizer=FakeTokenizer())
    assert calls["engine"] == {"model": "/models/m", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9,
                               "dtype": "bfloat16", "enforce_eager": False, "seed": 3, "max_model_len": 4096}
    VLLMSampler("/models/m", cfg, seed=300012, tokenizer=FakeTokenizer())  # a difficulty job seeds its engine
    assert calls["engine"]["seed"] == 300012

    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    bar = Bar()
    prompts = [[10 + i, 99] for i in range(5)]
    out = sampler.sample(prompts, 4, SamplingParams(0.6, 1.0, 32), seed=7, progress=bar)
    # batch_size 8 sequences / n 4 = 2 prompts per engine call: 3 calls for 5 prompts.
    assert len(calls["generate"]) == 3 and all(c[2] is False for c in calls["generate"])
    assert calls["generate"][0][0] == [{"prompt_token_ids": [10, 99]}, {"prompt_token_ids": [11, 99]}]
    kws = [p.kw for c in calls["generate"] for p in c[1]]
    # No per-request seed: vLLM would sample such requests through per-request generators (slow).
    assert kws == [{"n": 4, "temperature": 0.6, "top_p": 1.0, "max_tokens": 32, "top_k": -1, "min_p": 0.0,
                    "repetition_penalty": 1.0, "skip_special_tokens": True}] * 5
    assert [len(g) for g in out] == [4] * 5 and out[3][1] == [13, 101, 2]  # EOS kept
    assert bar.n == 5
    assert sampler.decode(out[3]) == ["13 100", "13 101", "13 102", "13 103"]


def test_vllm_sampler_without_vllm_says_what_to_do(monkeypatch):
    from isocompute.cluster.vllm_sampler import VLLMSampler

    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(InputError, match="sampling.backend.*vllm.*envs/verl.yaml"):
        VLLMSampler("m", check_config({"sampling": {"backend": "vllm"}}), tokenizer=FakeTokenizer())


def test_make_sampler_builds_the_vllm_sampler(monkeypatch):
    from isocompute.cli import data as stages
    from isocompute.cluster.vllm_sampler import VLLMSampler

    monkeypatch.setitem(sys.modules, "vllm", fake_vllm({}))
    import transformers

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", staticmethod(lambda p: FakeTokenizer()))
    sampler = stages.make_sampler(check_config({"sampling": {"backend": "vllm"}}), "/models/m")
    assert isinstance(sampler, VLLMSampler) and isinstance(sampler.tokenizer, FakeTokenizer)
