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


def fake_vllm(calls: dict, device_type: str = "cuda") -> types.ModuleType:
    """A stand-in `vllm` module recording how the sampler drives it (its `vllm.platforms`
    is put in sys.modules by `install`)."""
    mod = types.ModuleType("vllm")
    mod.__version__ = "0.24.0"
    mod.platforms = types.SimpleNamespace(current_platform=types.SimpleNamespace(device_type=device_type))

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


def install(monkeypatch, mod: types.ModuleType) -> None:
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.platforms", mod.platforms)


def test_vllm_sampler_maps_config_and_params_onto_the_engine(monkeypatch):
    from isocompute.cluster.vllm_sampler import VLLMSampler

    calls = {}
    install(monkeypatch, fake_vllm(calls))
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

    install(monkeypatch, fake_vllm({}))
    import transformers

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", staticmethod(lambda p: FakeTokenizer()))
    sampler = stages.make_sampler(check_config({"sampling": {"backend": "vllm"}}), "/models/m")
    assert isinstance(sampler, VLLMSampler) and isinstance(sampler.tokenizer, FakeTokenizer)


def test_on_the_cpu_the_kv_cache_comes_from_the_config(monkeypatch):
    """cluster.vllm.device cpu: the engine's KV cache is kv_cache_gib (kv_cache_memory_bytes, and
    VLLM_CPU_KVCACHE_SPACE over whatever the environment said), its params carry both keys."""
    from isocompute.cluster.vllm_sampler import KV_CACHE_ENV, VLLMSampler
    from isocompute.jobs import difficulty_params

    calls = {}
    install(monkeypatch, fake_vllm(calls, device_type="cpu"))
    monkeypatch.setenv(KV_CACHE_ENV, "40")
    cpu = check_config({"sampling": {"backend": "vllm"}, "base_model": {"hidden_size": 64, "num_heads": 2},
                        "cluster": {"vllm": {"device": "cpu", "kv_cache_gib": 3}}})
    VLLMSampler("/models/m", cpu, tokenizer=FakeTokenizer())
    assert calls["engine"]["kv_cache_memory_bytes"] == 3 * 2**30
    import os

    assert os.environ[KV_CACHE_ENV] == "3"
    assert difficulty_params(cpu)["cluster"]["vllm"]["kv_cache_gib"] == 3
    # On CUDA neither the engine nor a GPU study's params see the CPU keys (its difficulty stage
    # keeps the params it ran with before they existed).
    gpu = check_config({"sampling": {"backend": "vllm"}})
    assert set(difficulty_params(gpu)["cluster"]["vllm"]) == {"tensor_parallel_size", "gpu_memory_utilization",
                                                              "dtype", "max_model_len", "enforce_eager"}
    install(monkeypatch, fake_vllm(calls, device_type="cuda"))
    VLLMSampler("/models/m", gpu, tokenizer=FakeTokenizer())
    assert "kv_cache_memory_bytes" not in calls["engine"]


def test_a_vllm_of_another_device_is_named(monkeypatch):
    from isocompute.cluster.vllm_sampler import VLLMSampler
    from isocompute.errors import ConfigError

    install(monkeypatch, fake_vllm({}, device_type="cpu"))
    with pytest.raises(ConfigError, match=r"config key 'cluster.vllm.device': 'cuda', but the installed vLLM "
                                          r"0.24.0 runs on 'cpu'; set cluster.vllm.device: cpu"):
        VLLMSampler("m", check_config({"sampling": {"backend": "vllm"}}), tokenizer=FakeTokenizer())


def test_the_config_check_names_the_head_dim_vllms_cpu_attention_cannot_serve(tmp_path):
    """The embedded model's default head_dim (64 / 4 = 16) on vLLM's CPU build: one line naming
    the key and the sizes the CPU attention takes; on CUDA, or with the local sampler, no limit."""
    from isocompute.errors import ConfigError

    cpu_vllm = {"sampling": {"backend": "vllm"}, "cluster": {"vllm": {"device": "cpu"}}}
    with pytest.raises(ConfigError) as err:
        check_config(cpu_vllm)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("config key 'base_model.num_heads': head_dim 16 (base_model.hidden_size 64 / "
                              "num_heads 4) is one vLLM's CPU attention cannot serve (cluster.vllm.device puts "
                              "vLLM on the CPU); it takes head_dim in [32, 64, 80")
    check_config({**cpu_vllm, "base_model": {"hidden_size": 64, "num_heads": 2}})  # head_dim 32
    check_config({"sampling": {"backend": "vllm"}})  # CUDA
    check_config({"cluster": {"vllm": {"device": "cpu"}}})  # the local sampler
    # verl's own vLLM rollout on the CPU meets the same limit.
    verl_cpu = {"train": {"backend": "verl", "device": "cpu"}, "splits": {"names": ["easy", "hard", "dual"]},
                "cluster": {"verl": {"cpu_rollout": "vllm"}}}
    with pytest.raises(ConfigError, match=r"^config key 'base_model.num_heads': head_dim 16 .*"
                                          r"\(cluster.verl.cpu_rollout puts vLLM on the CPU\)"):
        check_config(verl_cpu)
    # A model directory: its config.json's head_dim.
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 96, "num_attention_heads": 2, "head_dim": 48}')
    with pytest.raises(ConfigError, match=r"^config key 'base_model.path': head_dim 48 \(.*/m/config.json\)"):
        check_config({**cpu_vllm, "base_model": {"source": "path", "path": str(model)}})


@pytest.mark.parametrize("text, expected", [
    ('{"hidden_size": 96,', "not valid JSON"),
    ("[96, 2]", "holds a JSON array; expected a JSON object"),
    ('{"text_config": "llama"}', "text_config to be a JSON object"),
    ('{"hidden_size": "96", "num_attention_heads": 2}', "expected hidden_size to be an integer"),
], ids=["garbled", "a list", "text_config a string", "a string size"])
def test_the_config_check_refuses_a_garbled_model_config_json_by_name(tmp_path, text, expected):
    """A model directory whose config.json is garbled or not an object stops the config check
    with one line naming the file and what it should hold, not a traceback."""
    from isocompute.errors import ConfigError

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(text)
    cfg = {"sampling": {"backend": "vllm"}, "cluster": {"vllm": {"device": "cpu"}},
           "base_model": {"source": "path", "path": str(model)}}
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
    message = str(err.value)
    assert message.startswith(f"config key 'base_model.path': {model / 'config.json'} ") and "\n" not in message
    assert expected in message
