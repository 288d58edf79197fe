"""verl 0.9.1 trains with its own vLLM rollout on the CPU, in the CPU twin of the cluster
environment: a tiny verl study (train.device cpu, cluster.verl.cpu_rollout vllm, the CPU
platform of train/backends/verl/cpu/) runs its train and score rules through Snakemake,
with vLLM's CPU build sampling every rollout and validation, and verl syncing the actor's
weights into it after every step.

The weight-sync check. verl compares, on each step's sampled tokens, the probabilities vLLM
returned with the trainer's (the updated actor's, before the step's update): its
training/rollout_probs_diff_mean. The project's trainer mode logs the same comparison with
the reference model's log-probs in vLLM's place (isocompute/ref_probs_diff_mean): what the
check would read if vLLM still held the initial weights, a sync that stopped after the
first one (vLLM's CPU linear layers pack their weights into oneDNN handles, so a sync that
loaded into the parameters without re-packing would be one). The criterion is
isocompute.train.backends.verl.weight_sync.verdict, the GPU check's too: from step 2 on
(update 1 moves the actor) the stale counterfactual must be far above the rounding floor of
step 1 and vLLM's own difference far below it. It passes this run and fails the same run
with the stale counterfactual in vLLM's place, so a broken sync cannot pass.

The names the CPU platform's vLLM workarounds rely on (vllm_names.py, verl_names.py's
VLLM_ROLLOUT_NAMES) are checked in the twin's Python by one script (NAMES_SCRIPT): each
failure names the vLLM or verl name that moved.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from support import TINY_CONFIG, make_study_dir
from twin_env import require_twin, run_twin_study, twin_env

pytestmark = [pytest.mark.slow, pytest.mark.engine]  # tests/conftest.py: the engine tests

EXPERIMENT = "tinyverlvllm"
M_MAX = 3
CONFIG = {
    **TINY_CONFIG,
    "experiment": EXPERIMENT,
    # head_dim 64 / 2 = 32, the smallest vLLM's CPU attention takes.
    "base_model": {**TINY_CONFIG["base_model"], "hidden_size": 64, "num_heads": 2, "intermediate_size": 128},
    # B = 4 rollouts a step, M_max = 12 / 4 = 3 steps, validated at steps 0, 2 and 3.
    "grid": {"easy": {"B_p": [2], "n": [2], "B_max": 4, "C_max": 4 * M_MAX}},
    # A learning rate that moves the actor visibly in one step (the weight-sync check needs it).
    "train": {"backend": "verl", "device": "cpu", "max_response_length": 16, "lr_base": 1e-2, "B_ref": 8,
              "warmup_steps": 1, "probe_problems": 0, "eval_schedule": "steps", "eval_interval": 2},
    "eval": {"k": 2, "samples": 2},
    "cluster": {"train": {"gpus": 1, "cpus_per_gpu": 8},
                "verl": {"storage_units": 1, "max_prompt_length": 64, "max_token_len_per_gpu": 512,
                         "cpu_rollout": "vllm"},
                "vllm": {"kv_cache_gib": 1}},
}
RUN = f"results/{EXPERIMENT}/runs/easy/bp2_n2"
EVALS = f"{RUN}/evals.parquet"
TIMEOUT_S = 1800

# One run of the twin's Python: every vLLM and verl name the workarounds use, checked before the
# plugin patches anything; prints {check: null | the error}.
NAMES_SCRIPT = r'''
import importlib.metadata as md, inspect, json, sys
from isocompute import topology
from isocompute.train.backends.verl.cpu import verl_names, vllm_cpu, vllm_names

out = {}
def check(key, fn):
    try:
        fn()
        out[key] = None
    except Exception as exc:  # each failure is reported under its own key
        out[key] = f"{type(exc).__name__}: {exc}"

def distribution():
    files = {str(f) for f in md.distribution(vllm_names.CPU_DISTRIBUTION).files}
    assert "vllm/__init__.py" in files, f"{vllm_names.CPU_DISTRIBUTION} does not install the vllm package"
def alias():
    context = md.DistributionFinder.Context(name=vllm_names.DISTRIBUTION)
    (dist,) = list(vllm_cpu.VllmDistributionAlias().find_distributions(context))
    want = md.version(vllm_names.CPU_DISTRIBUTION) + "+cpu"
    assert (dist.metadata["Name"], dist.version) == ("vllm", want), (dist.metadata["Name"], dist.version)
def cpu_probe():
    # vLLM knows it is the CPU build when version("vllm") has "cpu" in it, else from vllm-cpu + "+cpu".
    import vllm.platforms as p
    source = inspect.getsource(p.vllm_version_matches_substr)
    assert '"+cpu"' in source and 'version("vllm")' in source, "vllm.platforms.vllm_version_matches_substr"
    assert "vllm_version_matches_substr(\"cpu\")" in inspect.getsource(p.cpu_platform_plugin), "cpu_platform_plugin"
    assert p.current_platform.is_cpu(), f"vLLM's platform here: {type(p.current_platform).__name__}"
for key in vllm_names.NAMES:
    check(f"vllm:{key}", lambda key=key: vllm_names.require(key))
check("distribution", distribution)
check("alias", alias)
check("cpu_probe", cpu_probe)
def drops_weight():
    source = inspect.getsource(vllm_names.require("linear_method").process_weights_after_loading)
    assert "remove_weight=True" in source, "vLLM keeps layer.weight on the CPU now: the patch is no longer needed"
    assert "remove_weight" in inspect.signature(vllm_names.require("cpu_gemm_dispatch")).parameters
check("linear_drops_weight", drops_weight)
def head_sizes():
    sizes = list(vllm_names.require("cpu_attention").get_supported_head_sizes())
    assert sizes == list(topology.VLLM_CPU_HEAD_SIZES), sizes
check("head_sizes", head_sizes)
vllm_cpu.alias_distribution()
for key in verl_names.VLLM_ROLLOUT_NAMES:
    check(f"verl:{key}", lambda key=key: verl_names.require(key))
def reads_vllm():
    for key in ("vllm_version_third_party", "vllm_version_rollout"):
        assert verl_names.require(key) == vllm_names.DISTRIBUTION, (key, verl_names.require(key))
check("verl_reads_vllm", reads_vllm)
def sync_processes():
    ext = verl_names.require("vllm_worker_extension")
    assert "process_weights_after_loading(" in inspect.getsource(ext.update_weights_from_ipc)
    assert "load_weights(" in inspect.getsource(ext._update_weights)
check("sync_processes_weights", sync_processes)
def sleep_is_optional():
    server = verl_names.require("vllm_server")
    for method in ("sleep", "release_kv_cache", "resume_kv_cache"):
        assert "free_cache_engine" in inspect.getsource(getattr(server, method)), method
check("sleep_is_optional", sleep_is_optional)
print("NAMES " + json.dumps(out))
'''


@pytest.fixture(scope="module")
def names():
    python = require_twin()
    proc = subprocess.run([str(python), "-c", NAMES_SCRIPT], env=twin_env(), capture_output=True, text=True,
                          timeout=600)
    line = [s for s in proc.stdout.splitlines() if s.startswith("NAMES ")]
    assert proc.returncode == 0 and line, proc.stderr[-3000:]
    return json.loads(line[-1].removeprefix("NAMES "))


NAME_CHECKS = ["vllm:linear_method", "vllm:cpu_gemm_dispatch", "vllm:cpu_attention", "distribution", "alias",
               "cpu_probe", "linear_drops_weight", "head_sizes", "verl:vllm_version_third_party",
               "verl:vllm_version_rollout", "verl:vllm_worker_extension", "verl:vllm_server", "verl_reads_vllm",
               "sync_processes_weights", "sleep_is_optional"]


@pytest.mark.parametrize("check", NAME_CHECKS)
def test_the_names_the_vllm_workarounds_rely_on(names, check):
    assert check in names, f"the names script did not run {check}"
    assert names[check] is None, f"{check}: {names[check]}"


def test_every_name_is_checked():
    from isocompute.train.backends.verl.cpu import verl_names, vllm_names

    keys = {f"vllm:{k}" for k in vllm_names.NAMES} | {f"verl:{k}" for k in verl_names.VLLM_ROLLOUT_NAMES}
    assert keys <= set(NAME_CHECKS)


LINEAR_SCRIPT = r'''
import tempfile
import torch
from vllm.config import VllmConfig, set_current_vllm_config
from vllm.distributed import init_distributed_environment, initialize_model_parallel
from vllm.model_executor.layers.linear import ReplicatedLinear
from isocompute.train.backends.verl.cpu import vllm_cpu

def layer_with(weight):
    layer = ReplicatedLinear(weight.shape[1], weight.shape[0], bias=False, params_dtype=torch.float32,
                             disable_tp=True)
    layer.weight.weight_loader(layer.weight, weight)
    layer.quant_method.process_weights_after_loading(layer)
    return layer

torch.manual_seed(0)
old, new, x = torch.randn(32, 64), torch.randn(32, 64), torch.randn(3, 64)
with set_current_vllm_config(VllmConfig()):
    init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                 distributed_init_method="file://" + tempfile.mktemp())
    initialize_model_parallel(1, 1)
    stock = layer_with(old)
    print("STOCK", hasattr(stock.weight, "weight_loader"), tuple(stock.weight.shape))
    vllm_cpu.keep_linear_weights()
    layer = layer_with(old)
    layer.weight.weight_loader(layer.weight, new)   # verl's sync: load_weights, then
    layer.quant_method.process_weights_after_loading(layer)   # process_weights_after_loading
    out = layer(x)[0]
    print("PATCHED", float((out - x @ new.T).abs().max()), float((out - x @ old.T).abs().max()))
'''


def test_the_linear_patch_keeps_the_weight_a_sync_loads_into():
    """vLLM's CPU linear layer as vLLM leaves it (weight dropped, no weight_loader: verl's sync
    fails), then patched: a second load takes, and the layer computes with the new weights."""
    python = require_twin()
    proc = subprocess.run([str(python), "-c", LINEAR_SCRIPT], env=twin_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = {s.split()[0]: s.split()[1:] for s in proc.stdout.splitlines() if s.startswith(("STOCK", "PATCHED"))}
    assert lines["STOCK"][0] == "False", f"vLLM kept weight_loader on the CPU: {lines['STOCK']}"
    new_err, old_err = map(float, lines["PATCHED"])
    assert new_err < 1e-4 < 1.0 < old_err, (new_err, old_err)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    require_twin()
    work = make_study_dir(tmp_path_factory.mktemp("twin_verl_vllm"))
    seconds = run_twin_study(work, CONFIG, EVALS, TIMEOUT_S, lambda w: [
        w / RUN / "verl" / "main_ppo.log", *sorted((w / f"results/{EXPERIMENT}/logs").rglob("*.log"))])
    print(f"twin verl + vLLM study: {seconds:.0f} s")
    return work


# verl's vLLM rollout runs vLLM's OpenAI server inside a Ray actor of class vLLMHttpServer
# (verl/workers/rollout/vllm_rollout/vllm_async_server.py), whose launch_server pprints the
# `vllm serve` argv it starts the server with (replica 0). Ray forwards an actor's output to the
# driver's log (main_ppo.log) prefixed "(ClassName pid=N)" (ray/_private/worker.py,
# print_worker_logs), in colour codes that are dropped before matching.
VLLM_SERVER_STARTED = re.compile(r"^\(vLLMHttpServer pid=\d+(?:, ip=[^)]*)?\) \['serve',", re.M)


def vllm_server_launched(log: str) -> bool:
    """Whether a verl log shows vLLM's server started by verl's vLLMHttpServer actor."""
    return VLLM_SERVER_STARTED.search(re.sub(r"\x1b\[[0-9;]*m", "", log)) is not None


def test_the_vllm_server_check_needs_the_servers_own_launch_line():
    launched = "(TaskRunner pid=7) rollout vllm\n\x1b[36m(vLLMHttpServer pid=9)\x1b[0m ['serve',\n"
    assert vllm_server_launched(launched)
    for log in ("(TaskRunner pid=7) actor_rollout_ref.rollout.name: vllm, vLLMHttpServer\n",
                "INFO vllm cpu platform\n", "(vLLMHttpServer pid=9) Traceback (most recent call last):\n"):
        assert not vllm_server_launched(log), log


def step_metrics(work) -> dict[int, dict]:
    return {m["step"]: m["data"] for m in map(json.loads, (work / RUN / "metrics.jsonl").read_text().splitlines())}


def test_verl_trains_with_its_own_vllm_rollout(study):
    run = study / RUN
    marker = json.loads((run / "run.json").read_text())
    assert (marker["backend"], marker["steps"]) == ("verl", M_MAX)
    hydra = yaml.safe_load((run / "verl" / "hydra" / ".hydra" / "config.yaml").read_text())
    rollout = hydra["actor_rollout_ref"]["rollout"]
    assert (hydra["trainer"]["device"], rollout["name"]) == ("cpu", "vllm")
    assert (rollout["enable_sleep_mode"], rollout["free_cache_engine"]) == (False, False)
    log = (run / "verl" / "main_ppo.log").read_text(errors="replace")
    assert vllm_server_launched(log), f"verl's vLLM server never started: {VLLM_SERVER_STARTED.pattern}"
    steps = step_metrics(study)
    for step in range(1, M_MAX + 1):
        assert steps[step]["actor/grad_norm"] > 0, step


def test_verl_runs_the_recipes_learning_rate(study):
    """verl logs the learning rate its scheduler holds after the step's update (engine_workers'
    lr_scheduler_step): update k + 1's, which must be the recipe's (train.recipe.warmup_lr)."""
    from isocompute.config import check_config
    from isocompute.grid import grid_cells
    from isocompute.train.recipe import cell_recipe

    cfg = check_config(json.loads(json.dumps(CONFIG)))
    (cell,) = grid_cells(cfg)
    recipe = cell_recipe(cfg, cell)
    steps = step_metrics(study)
    logged = [steps[k]["actor/lr"] for k in range(1, M_MAX + 1)]
    print("verl actor/lr at steps 1..3 (updates 2..4):", logged)
    assert logged == pytest.approx([recipe.lr_at(k + 1) for k in range(1, M_MAX + 1)], rel=1e-6)


def test_after_each_weight_sync_vllm_samples_with_the_updated_actor(study):
    """weight_sync.verdict on this run: at step 1 vLLM and the actor hold the initial weights
    (vLLM's difference there is the machine's rounding floor, the stale metric 0); update 1 moves
    the actor (lr / warmup_steps, here the full lr), so from step 2 on a vLLM still holding the
    initial weights would read the stale counterfactual, which must be STALE_FACTOR times the
    floor (the actor moved) and STALE_FACTOR times vLLM's own difference (vLLM moved with it).
    The same run with the counterfactual in vLLM's place must fail."""
    from isocompute.train.backends.verl.weight_sync import STALE, SYNCED, stale_counterfactual, verdict

    pairs = step_pairs_of(study)
    for step, d in sorted(pairs.items()):
        print(f"step {step}: rollout vs actor {d[SYNCED]:.2e}, reference (stale) vs actor {d[STALE]:.2e}")
    assert sorted(pairs) == list(range(1, M_MAX + 1)), pairs
    synced = verdict(pairs)
    assert synced["ok"] and synced["judged"] == [2, 3], synced
    stale = verdict(stale_counterfactual(pairs))
    assert not stale["ok"], stale
    # The relative criterion alone tells the stale engine apart at every judged step (SYNC_TOL, an
    # absolute bound with room for the rounding, may catch it too: it did here, at 8e-2 and 3e-1).
    for step in synced["judged"]:
        assert any(f.startswith(f"step {step}: the rollout reads the initial weights") for f in stale["failures"]), \
            stale


def step_pairs_of(work) -> dict:
    from isocompute.train.backends.verl.weight_sync import step_pairs

    return step_pairs(work / RUN / "metrics.jsonl")


def test_the_score_rule_scores_vllms_validation(study):
    import pandas as pd

    evals = pd.read_parquet(study / EVALS)
    assert evals["step"].tolist() == [0, 2, M_MAX]
    assert evals["avg@2"].between(0, 1).all()
