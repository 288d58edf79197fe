"""vLLM itself samples the difficulty stage: a tiny study with sampling.backend vllm runs
pool -> base_model -> difficulty -> splits through Snakemake in the CPU twin of the cluster
environment (vLLM's CPU build, cluster.vllm.device cpu, the KV cache from
cluster.vllm.kv_cache_gib), on a base model whose head_dim (64 / 2 = 32) vLLM's CPU
attention takes. Its avg@16 pass counts are then compared with the local sampler's on the
same model, pool, temperature and top-p (0.6 and 0.9: top-p below 1, so both engines' nucleus
cut is exercised).

The agreement test. Per problem i, vLLM's correct count x_i and the local sampler's y_i are
Binomial(n, p_i) and Binomial(n, q_i), n = 16; the hypothesis is p_i = q_i for every i.
The difference of the mean pass rates D = sum(x_i - y_i) / (n N) then has mean 0 and
variance sum 2 n p_i (1 - p_i) / (n N)^2, estimated with the pooled p^_i = (x_i + y_i) / 2n
(times 2n / (2n - 1), which makes p^(1 - p^) unbiased): z = D / sd. A shift that moves some
problems up and others down leaves D near 0, so a second statistic reads the problems one by
one: S = sum (x_i - y_i)^2, whose distribution under the hypothesis is drawn by a parametric
bootstrap (x*, y* ~ Binomial(n, p^_i), 2,000 draws, seeded); its p-value is the share of
draws with S* >= S. A temperature also moves how the passes concentrate on few problems where
the mean barely moves, so a third statistic reads that: C = sum [x_i (x_i - 1) - y_i (y_i - 1)]
(x (x - 1) counts the pairs of correct samples of a problem, an unbiased estimate of
n (n - 1) p_i^2); under the hypothesis x_i and y_i are exchangeable, so C's null distribution
is that of the sum with random signs (SIGN_FLIPS draws, seeded), and its p-value is two-sided.
The engines agree when |z| < Z_BOUND = 4 (two-sided, a false alarm about once in 16,000 runs)
and the p-values of S and C are above P_BOUND = 1e-3 (about 1 in 500 runs all told). The three
statistics and the rule are isocompute.cluster.agreement's (agreement_z, dispersion_p,
concentration_p, disagreement; the GPU check runs agreement_z on CUDA). It can fail: the local
sampler at another temperature (TEMPERATURE_OFF) must be told apart from vLLM's
counts; a sampler whose tempering or top-p were wrong would be.

Its power, measured on this config's model by the local sampler alone (vLLM's stand-in) over
36 seeds (the config's seed) at each temperature: each draw at T = 1.2 against two draws at
T = 0.6, 71 of 72 pairs were flagged (98.6%; 95% interval 92.5-100%; |z| >= 4 in 60, S in 54,
C in 65; z or S alone, the old rule, 67), and of the 630 pairs of draws at T = 0.6 one was
(by S; |z| at most 3.0). At 300 pretraining steps (the old config) the model solved 3% and its
pass rates barely moved with the temperature: 1.2 against 0.6 was flagged in 1 of 12 pairs by
z or S, 0.4 in none; the old check needed T = 0.1, near-greedy.
benchmarks/power_sampler_agreement.py repeats the measurement (on a study folder this test
built: its config/test.yaml is CONFIG).

vLLM samples with float32 here, as the local sampler does (the schema's default is
bfloat16, for GPUs), so the two draw from the same distribution up to kernel rounding.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from isocompute.cluster.agreement import disagreement
from support import TINY_CONFIG, make_study_dir
from twin_env import require_twin, run_twin_study

pytestmark = [pytest.mark.slow, pytest.mark.engine]  # tests/conftest.py: the engine tests

EXPERIMENT = "tinyvllm"
SAMPLES = 16
CONFIG = {
    **TINY_CONFIG,
    "experiment": EXPERIMENT,
    # One family of small sums, which a minutes-pretrained model learns a little of: the
    # comparison needs problems solved sometimes (TINY_CONFIG's model solves 0.4% of its pool,
    # too few to tell samplers apart).
    "pool": {"n_problems": 300, "instruction": "",
             "families": [{"name": "add_small", "operands": 2, "digits": [1, 2], "ops": "+",
                           "corpus_accuracy": 0.85}]},
    # head_dim 64 / 2 = 32, the smallest vLLM's CPU attention takes (TINY_CONFIG's is 16).
    "base_model": {**TINY_CONFIG["base_model"], "hidden_size": 64, "num_heads": 2, "intermediate_size": 128,
                   "pretrain_steps": 600, "pretrain_lr": 3e-3, "pretrain_threads": 2},
    # No extra draws for the unsolved: every problem gets exactly the 16 compared.
    "difficulty": {"samples": SAMPLES, "extremely_hard_samples": SAMPLES},
    "sampling": {**TINY_CONFIG["sampling"], "backend": "vllm", "temperature": 0.6, "top_p": 0.9},
    "cluster": {"vllm": {"device": "cpu", "kv_cache_gib": 1, "dtype": "float32", "max_model_len": 128,
                         "enforce_eager": True}},
}
RESULTS = f"results/{EXPERIMENT}"
SPLITS = f"{RESULTS}/splits/splits.json"
# Twice the study's temperature, at its top-p: the size of mistake the power above is measured for.
TEMPERATURE_OFF = 1.2
TIMEOUT_S = 1800


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    require_twin()
    work = make_study_dir(tmp_path_factory.mktemp("twin_vllm"))
    seconds = run_twin_study(work, CONFIG, SPLITS, TIMEOUT_S,
                             lambda w: sorted((w / RESULTS / "logs").rglob("*.log")))
    print(f"twin vLLM data stages: {seconds:.0f} s")
    return work


def local_counts(work, temperature: float) -> pd.Series:
    """The difficulty stage's command with the local sampler on the study's model and pool,
    in the pytest environment: correct counts of the first SAMPLES draws per problem."""
    from isocompute.config import check_config
    from isocompute.jobs import difficulty_params

    local = {**CONFIG, "sampling": {**CONFIG["sampling"], "backend": "local", "temperature": temperature}}
    params = difficulty_params(check_config(json.loads(json.dumps(local))))  # what the rule would pass
    out = work / f"local_t{temperature}.parquet"
    argv = [sys.executable, "-c", "import sys; from isocompute.cli import main; sys.exit(main())", "difficulty",
            "--params", json.dumps(params), "--pool", f"{RESULTS}/data/pool.parquet",
            "--model", f"{RESULTS}/model/base", "--part", "0", "--parts", "1", "--threads", "2", "--out", str(out)]
    subprocess.run(argv, cwd=work, check=True, timeout=600)
    return counts_of(pd.read_parquet(out))


def counts_of(table: pd.DataFrame) -> pd.Series:
    assert (table["samples"] == SAMPLES).all()
    return table.set_index("problem_id")["correct"].astype(int)


def test_vllm_sampled_the_difficulty_stage(study):
    log = (study / RESULTS / "logs" / "difficulty" / "part000.log").read_text(errors="replace")
    # vLLM's own engine, on its CPU platform, with the config's KV cache bound.
    assert "kv_cache_memory_bytes': 1073741824" in log, log[-2000:]
    assert "CPU" in log and "LLM engine" in log, log[-2000:]
    table = pd.read_parquet(study / RESULTS / "data" / "difficulty.parquet")
    assert len(table) == CONFIG["pool"]["n_problems"] and (table["samples"] == SAMPLES).all()
    assert 0 < table["avg_at_samples"].mean() < 1  # a real model: some solved, not all
    summary = json.loads((study / SPLITS).read_text())
    assert summary, "the splits stage wrote an empty summary"


def test_vllm_and_the_local_sampler_agree_within_sampling_error(study):
    vllm = counts_of(pd.read_parquet(study / RESULTS / "data" / "difficulty.parquet"))
    local = local_counts(study, CONFIG["sampling"]["temperature"])  # the study's temperature and top-p
    differ, line = disagreement(vllm, local, SAMPLES)
    print(f"vLLM against the local sampler: {line}")
    assert not differ, f"vLLM's pass counts differ from the local sampler's beyond sampling error ({line})"


def test_the_agreement_test_detects_another_temperature(study):
    vllm = counts_of(pd.read_parquet(study / RESULTS / "data" / "difficulty.parquet"))
    off = local_counts(study, TEMPERATURE_OFF)
    differ, line = disagreement(vllm, off, SAMPLES)
    print(f"vLLM against the local sampler at temperature {TEMPERATURE_OFF}: {line}")
    assert differ, f"temperature {TEMPERATURE_OFF} went unnoticed ({line})"
