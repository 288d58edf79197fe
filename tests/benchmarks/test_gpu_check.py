"""The GPU check's two parts in their --dry-run modes, and part 1's JSON under a kill.

Part 1 (benchmarks/gpu_check_local.py, a bare offline node): every command it would run
parses with isocompute's own parser and its --params pass the config check; its data and
train commands pass the same --params as the rules (Snakemake's dry run of the same study);
killed mid-way, its JSON is there and says so. Part 2 (benchmarks/gpu_check.py, a node with
PyPI): the plan, every command parsed, the Snakemake dry run of its verl cell through the
train and score rules, and verl's own resolution of the command that the train rule's
`isocompute train` builds."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from support import REPO, VENV_BIN, run_benchmark


@pytest.mark.slow   # runs a benchmark (and verl's CLI)
def test_gpu_check_dry_run_plans_every_step_and_verl_resolves_its_command(tmp_path):
    out = tmp_path / "plan.json"
    run_benchmark("gpu_check.py", "--dry-run", "--work", str(tmp_path / "work"), "--out", str(out), timeout=900)
    plan = json.loads(out.read_text())
    assert plan["dry_run"] is True and plan["part"] == 2
    assert plan["doctor"]["command"].split()[-1] == "doctor"
    assert plan["data"]["jobs"] == {"pool": 1, "base_model": 1, "difficulty_chunk": 1, "difficulty": 1, "splits": 1}
    assert "local" not in plan  # part 1's
    assert '"backend": "vllm"' in plan["vllm"]["sample"]["command"]
    # verl: one cell through the train rule (with its options file) and then the score rule.
    jobs = plan["verl"]["train_and_score"]["jobs"]
    assert jobs["train"] == 1 and jobs["score"] == 1 and jobs["train_options"] == 1
    command = plan["verl"]["command"]
    assert command["train_rule"].split()[1] == "train" and command["options_file_read"]
    resolved = command["resolved"]
    assert resolved is not None, command.get("error")
    assert resolved["trainer.nnodes"] == 1 and resolved["trainer.n_gpus_per_node"] == 1
    assert resolved["trainer.total_training_steps"] == 5
    assert (resolved["data.train_batch_size"], resolved["actor_rollout_ref.rollout.n"]) == (4, 8)
    assert resolved["actor_rollout_ref.rollout.name"] == "vllm"
    assert resolved["actor_rollout_ref.model.path"].endswith("results/gpu_check/model/base")
    assert resolved["actor_rollout_ref.model.override_config.attn_implementation"] == "sdpa"  # no flash-attn
    # Every command of the plan parses with the parser of the program that runs it.
    assert plan["parsed"] and all(p["ok"] for p in plan["parsed"]), [p for p in plan["parsed"] if not p["ok"]]


def test_gpu_check_install_script_uses_pypi_only(tmp_path):
    """GPU check part 2's install is the cluster env's (envs/install-env.sh gpu-check): the committed
    lock's build tools, then the lock, hashes required and sdists built without isolation, then this
    checkout with no index; nothing by URL, no other index, no conda. Run with stand-ins for the
    node's python (its venv's `python` logs its arguments and runs lock.py for real)."""
    script = REPO / "benchmarks" / "gpu_check_install.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    lines = [line for line in script.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert not any(line.split()[0] in ("conda", "mamba", "micromamba") for line in lines)
    calls, venv = tmp_path / "calls", tmp_path / "venv-gpu"
    logger = (f'#!/bin/sh\nprintf "%s\\n" "$*" >> {calls}\n'
              f'case "$1" in *lock.py) exec {sys.executable} "$@";; esac\n')
    node_python = tmp_path / "python3.12"   # makes the venv: bin/python and bin/isocompute log their calls
    node_python.write_text(f'#!/bin/sh\n[ "$1 $2" = "-m venv" ] || exit 9\nmkdir -p "$3/bin"\n'
                           f"cat > \"$3/bin/python\" <<'EOF'\n{logger}EOF\n"
                           f'cp "$3/bin/python" "$3/bin/isocompute"\nchmod +x "$3/bin/python" "$3/bin/isocompute"\n')
    node_python.chmod(0o755)
    out = subprocess.run(["bash", str(script)], env=dict(os.environ, PYTHON=str(node_python), VENV=str(venv)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    got = calls.read_text().splitlines()
    lock = f"{REPO}/envs/gpu-check.lock.txt"
    assert got[0] == f"{REPO}/envs/lock.py --build-tools gpu-check"
    assert got[1].startswith("-m pip install --no-deps --require-hashes -r ")
    assert got[2:] == [f"-m pip install --no-deps --require-hashes --no-build-isolation -r {lock}",
                       f"-m pip install --no-deps --no-build-isolation --no-index -e {REPO}", "doctor"]
    assert not any("://" in call or "--index-url" in call for call in got)


def _rule_commands(workdir, config, targets):
    """`isocompute` commands of Snakemake's dry run (-p), by subcommand."""
    proc = subprocess.run([str(VENV_BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--cores", "1", "-n",
                           "-p", *targets, "--configfile", str(config)],
                          cwd=workdir, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = {}
    for line in proc.stdout.splitlines():
        line = line.strip().removeprefix("Shell command:").strip()  # snakemake -p's line
        if line.startswith("isocompute "):
            argv = shlex.split(line.split(" > ")[0])
            out.setdefault(argv[1], argv)
    return out


@pytest.mark.slow   # runs a benchmark
def test_gpu_check_local_dry_run_parses_every_command_and_passes_the_rules_params(tmp_path):
    import yaml

    from isocompute.cli import build_parser
    from isocompute.cli.common import config_from_params
    from isocompute.config import check_config
    from isocompute.layout import StudyLayout

    out = tmp_path / "plan1.json"
    run_benchmark("gpu_check_local.py", "--dry-run", "--work", str(tmp_path / "w"), "--out", str(out), timeout=300,
                  cwd=tmp_path)
    plan = json.loads(out.read_text())
    assert plan["finished"] and plan["part"] == 1
    commands = [r["command"] for r in plan["steps"] if "command" in r]
    names = [r["step"] for r in plan["steps"]]
    assert names[:8] == ["env", "wheels", "peak", "pool", "base_model", "difficulty", "difficulty_merge", "splits"]
    assert [n for n in names if n.startswith("local/")] == [
        "local/cuda/easy/bp8_n8", "local/cpu/easy/bp8_n8", "local/cuda/easy/bp16_n8", "local/cpu/easy/bp16_n8"]
    assert sum(n.startswith("study/") for n in names) == 14 + 9  # the embedded grid within B_max, every cell
    for argv in commands:
        if argv[1] == "-c":  # isocompute, as the node runs it
            args = build_parser().parse_args(argv[3:])
            config_from_params(args.params)
    # The same --params as the rules, on the same study (the node has no Snakemake to ask): the
    # embedded study the plan says it runs (size full, its default).
    assert plan["size"] == "full"
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump(plan["study"]))
    L = StudyLayout(plan["study"]["experiment"])
    check_config(json.loads(json.dumps(plan["study"])))
    rules = _rule_commands(tmp_path, study, [L.splits_summary, *L.split_files("easy").values()])
    ours = {argv[3]: argv for argv in commands if argv[1] == "-c"}
    for sub in ("pool", "base-model", "difficulty", "difficulty-merge", "splits"):
        theirs = build_parser().parse_args(rules[sub][1:])
        mine = build_parser().parse_args(ours[sub][3:])
        assert json.loads(mine.params) == json.loads(theirs.params), sub
    # train: the rule's params on a local cell of the plan (B_p 8, n 8 on CUDA, the local cells'
    # schedule from the smallest batch, 64, to C_max 1280), device aside
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(
        {**plan["study"], "grid": {"easy": {"B_p": [8], "n": [8], "B_max": 64, "C_max": 1280}}}))
    rule = _rule_commands(tmp_path, tmp_path / "grid.yaml", [str(L.run_files("easy", 8, 8).marker)])["train"]
    theirs = json.loads(build_parser().parse_args(rule[1:]).params)
    (cell,) = [r["command"] for r in plan["steps"] if r["step"] == "local/cuda/easy/bp8_n8"]
    mine = build_parser().parse_args(cell[3:])
    assert (mine.split, mine.bp, mine.n, mine.max_steps) == ("easy", 8, 8, 1280 // 64)
    mine = json.loads(mine.params)
    assert mine["train"].pop("device") == "cuda"
    theirs["train"].pop("device")
    assert mine == theirs


@pytest.mark.slow   # runs a benchmark
def test_gpu_check_local_writes_its_json_when_killed(tmp_path):
    """SIGTERM mid-way: the JSON is there, names the step it interrupted; SIGKILL: the JSON of
    the steps so far is there (rewritten whole after each)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        out = tmp_path / f"{sig.name}.json"
        proc = subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "gpu_check_local.py"), "--device", "cpu",
                                 "--size", "tiny", "--work", str(tmp_path / sig.name), "--out", str(out)],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (out.is_file() and '"step": "env"' in out.read_text()):
            time.sleep(0.2)
        time.sleep(1)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        report = json.loads(out.read_text())
        assert report["finished"] is False and report["steps"][0]["step"] == "env"
        if sig == signal.SIGTERM:
            assert report["interrupted"]["signal"] == "SIGTERM" and proc.returncode == 128 + sig


def test_part_2_judges_vllm_and_the_weight_sync_as_the_cpu_twin_does(tmp_path):
    """Part 2 judges with the CPU twin's own functions (it imports them from the package and defines
    no copy): the agreement test of vLLM's pass rates against the local sampler's (|z| < 4) passes
    two draws from the same rates and fails rates 20% lower; the weight-sync check passes a vLLM
    that follows the actor and fails one whose log-probs stay the initial weights' from step 2 on."""
    import ast

    import numpy as np
    import pandas as pd

    from isocompute.cluster.agreement import Z_BOUND, agreement_z
    from isocompute.train.backends.verl.weight_sync import STALE, SYNCED, judge_metrics

    tree = ast.parse((REPO / "benchmarks" / "gpu_check.py").read_text())
    imported = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert {("isocompute.cluster.agreement", "agreement_z"), ("isocompute.cluster.agreement", "Z_BOUND"),
            ("isocompute.train.backends.verl.weight_sync", "judge_metrics")} <= imported, imported
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert not defined & {"agreement_z", "Z_BOUND", "judge_metrics", "verdict"}, defined

    rng = np.random.default_rng(0)
    rates = rng.uniform(0, 1, 400)
    same = [pd.Series(rng.binomial(16, rates)) for _ in range(2)]
    lower = pd.Series(rng.binomial(16, rates * 0.8))
    assert abs(agreement_z(*same, 16)) < Z_BOUND < abs(agreement_z(same[0], lower, 16))

    def metrics(synced_of_step, stale_of_step=lambda s: 0.05 * (s - 1)):
        path = tmp_path / f"metrics{len(list(tmp_path.iterdir()))}.jsonl"
        path.write_text("\n".join(json.dumps({"step": s, "data": {SYNCED: synced_of_step(s), STALE: stale_of_step(s)}})
                                  for s in (1, 2, 3)))
        return judge_metrics(path)

    # The twin test's criterion (weight_sync.verdict), judged from step 2: step 1's rollouts come
    # before any update (stale 0, synced the rounding floor), update 1 moved the actor.
    assert metrics(lambda s: 1e-4)["ok"] is True
    assert metrics(lambda s: 0.05 * (s - 1))["ok"] is False  # vLLM as far from the actor as the stale weights
    # An update 1 at learning rate 0 (verl's schedule indexed from 0): step 2's stale reads the floor,
    # so nothing tells a stale vLLM from a synced one there.
    frozen = metrics(lambda s: 1e-4, lambda s: 0.05 * max(0, s - 2) or 1e-4)
    assert frozen["ok"] is False and any("step 2: the actor moved by rounding only" in f for f in frozen["failures"])
    assert judge_metrics(tmp_path / "absent.jsonl")["logged"] is False
