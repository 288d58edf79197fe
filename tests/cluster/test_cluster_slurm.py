"""A real SLURM run: a one-node cluster on localhost (Debian's slurm-wlm and
munge, started by tests/cluster/slurm/cluster.py) runs a tiny study to completion with
`snakemake --profile slurm` -- data stages, a two-cell training grid (local
backend on the CPU) and scoring -- as SLURM jobs, with the repository's profile.
The first attempt of one training job is killed mid-run (a test double of
`isocompute` first on PATH); SLURM runs it again with the longer time limit of
a retry, and the retry resumes from the checkpoint the killed attempt left.

Needs root (the daemons) and the packages, which .ci/run installs; the fixture
installs them itself when it can and skips with the reason when it cannot.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from support import REPO, TINY_CONFIG, VENV_BIN

sys.path.insert(0, str(Path(__file__).parent / "slurm"))
from cluster import LocalSlurm, ensure_installed  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.engine]  # tests/conftest.py: the engine tests

# What the test changes in the repository's profile: a cluster without
# accounting has no sacct/sacctmgr answers (status from squeue, no account),
# two CPUs run two jobs, and the first status check comes early.
TEST_PROFILE = {
    "slurm-status-command": "squeue",
    "slurm-no-account": True,
    "slurm-init-seconds-before-status-checks": 2,
    "slurm-keep-successful-logs": True,
    "jobs": 2,
    "latency-wait": 10,
    "retries": 1,
}

SLURM_STUDY = {
    **TINY_CONFIG,
    "experiment": "slurm",
    "grid": {"easy": {"B_p": [2], "n": [2, 4], "B_max": 8, "C_max": 32}},
    "train": {"backend": "local", "device": "cpu", "eval_schedule": "steps", "eval_interval": 2},
    "eval": {"k": 4, "samples": 4},
    "cluster": {"cpu": {"threads": 1, "mem_mb": 1000, "runtime": 20}, "max_runtime": 30},
}


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("a local SLURM cluster needs root (slurmctld/slurmd run as root here)")
    reason = ensure_installed()
    if reason:
        pytest.skip(reason)
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm"), cpus=os.cpu_count() or 2)
    try:
        cluster.start()
    except RuntimeError as exc:
        logs = cluster.logs()
        cluster.stop()
        pytest.fail(f"could not start the local SLURM cluster: {exc}\n{logs}")
    yield cluster
    cluster.stop()


# The training job whose first attempt dies: wildcards split, B_p, n as the SLURM plugin
# joins them in job comments and log folders (the seed-replicate wildcard is empty for the
# first replicate, hence the trailing '_'). 32 // (2 x 2) = 8 steps, evaluations 0, 2, 4, 6, 8.
FAILING_TRAIN = "easy_2_2_"

# A test double of `isocompute`, first on PATH in Snakemake and in every SLURM job (sbatch
# exports the environment): the first `isocompute train` of cell bp2_n2 runs for real until
# its step-2 validation dump is written, then is SIGKILLed as a node failure or the OOM killer
# would; every other call is the real command.
FAIL_ONCE = """#!{python}
import os, subprocess, sys, time
from pathlib import Path

real, marker, args = "{real}", Path("{marker}"), sys.argv[1:]
if args[:1] == ["train"] and args[args.index("--n") + 1] == "2" and not marker.exists():
    marker.touch()
    dump = Path(args[args.index("--run-dir") + 1]) / "generations" / "2.jsonl"
    proc = subprocess.Popen([real, *args])
    while proc.poll() is None and not dump.exists():
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    sys.exit(137)
os.execv(real, [real, *args])
"""


def write_fail_once(bin_dir: Path, marker: Path) -> None:
    bin_dir.mkdir()
    wrapper = bin_dir / "isocompute"
    wrapper.write_text(FAIL_ONCE.format(python=sys.executable, real=VENV_BIN / "isocompute", marker=marker))
    wrapper.chmod(0o755)


def study_dir(tmp_path: Path) -> Path:
    """A copy of the workflow (as at the repository root) with the test's profile as ./slurm."""
    for name in ("Snakefile", "rules", "config", "workflow", "envs"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copyfile)(src, tmp_path / name)
    profile = yaml.safe_load((REPO / "slurm" / "config.yaml").read_text())
    profile.update(TEST_PROFILE)
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    (tmp_path / "config" / "slurm_study.yaml").write_text(yaml.safe_dump(SLURM_STUDY, sort_keys=False))
    return tmp_path


# The stages this test is about; the analysis and figures are other tests' business.
TARGETS = ["results/slurm/figures/fig2_difficulty.png",
           *(f"results/slurm/runs/easy/bp2_n{n}/evals.parquet" for n in (2, 4))]


def run_snakemake_bounded(cmd, cwd, env, timeout):
    """Run Snakemake; past `timeout`, interrupt it (it cancels its SLURM jobs) and raise TimeoutExpired."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        raise subprocess.TimeoutExpired(cmd, timeout, output=out, stderr=err) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def squeue_history(cluster: LocalSlurm) -> list[dict]:
    """Every job slurmctld still holds (MinJobAge = 600 s keeps finished ones): id, comment
    (Snakemake's rule_<rule>_wildcards_<values>), time limit in minutes and state."""
    proc = subprocess.run(["squeue", "-h", "--states=all", "-o", "%i|%k|%l|%T"], capture_output=True, text=True,
                          env={**os.environ, **cluster.env}, check=True)
    jobs = []
    for line in proc.stdout.splitlines():
        job_id, comment, limit, state = line.split("|")
        jobs.append({"id": int(job_id), "comment": comment, "minutes": slurm_minutes(limit), "state": state})
    return sorted(jobs, key=lambda j: j["id"])


def slurm_minutes(limit: str) -> int:
    """SLURM's [days-]hours:minutes:seconds (or minutes:seconds) as whole minutes."""
    days, _, clock = limit.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    hours, minutes, seconds = [0] * (3 - len(parts)) + parts
    return (int(days or 0) * 24 + hours) * 60 + minutes + (seconds > 0)


@pytest.fixture(scope="module")
def slurm_study(slurm_cluster, tmp_path_factory):
    """The tiny study run once under SLURM, the first attempt of train FAILING_TRAIN killed."""
    tmp_path = tmp_path_factory.mktemp("slurm_study")
    (tmp_path / "study").mkdir()
    work = study_dir(tmp_path / "study")
    marker = tmp_path / "train_failed_once"
    write_fail_once(tmp_path / "bin", marker)
    env = {**os.environ, **slurm_cluster.env}
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{VENV_BIN}{os.pathsep}{env['PATH']}"
    env.pop("SLURM_JOB_ID", None)
    # The study's config replaces config/config.yaml (the embedded study, with its own grid
    # and recipe) in Snakemake and in every job: the evaluation steps below show which won.
    cmd = [str(VENV_BIN / "snakemake"), *TARGETS, "--profile", "slurm", "--configfile", "config/slurm_study.yaml"]
    logs = work / ".snakemake" / "slurm_logs"
    try:
        proc = run_snakemake_bounded(cmd, work, env, timeout=600)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"snakemake --profile slurm did not finish in {exc.timeout} s:\n{(exc.stdout or '')[-3000:]}\n"
                    f"{(exc.stderr or '')[-3000:]}\n{slurm_cluster.queue()}\n{slurm_cluster.logs(1500)}")
    if proc.returncode != 0:
        job_logs = "\n".join(f"--- {p}\n{p.read_text()[-1500:]}" for p in
                             sorted(logs.rglob("*.log")) + sorted((work / "results").rglob("logs/**/*.log")))
        pytest.fail(f"snakemake --profile slurm failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                    f"{proc.stderr[-6000:]}\n{job_logs[-6000:]}\n{slurm_cluster.logs(1500)}")
    return {"work": work, "cmd": cmd, "env": env, "marker": marker, "proc": proc, "jobs": squeue_history(slurm_cluster)}


def test_tiny_study_runs_to_completion_under_slurm(slurm_cluster, slurm_study):
    work, cmd, env = slurm_study["work"], slurm_study["cmd"], slurm_study["env"]
    logs = work / ".snakemake" / "slurm_logs"
    res = work / "results" / "slurm"
    for split in ("easy", "hard"):
        assert (res / "splits" / split / "train.parquet").is_file()
    assert (res / "figures" / "fig2_difficulty.png").is_file()
    for n in (2, 4):
        run = res / "runs" / "easy" / f"bp2_n{n}"
        marker = json.loads((run / "run.json").read_text())
        assert marker["backend"] == "local"
        # Trained with the study's recipe only: the schema's lr_base, not config/config.yaml's.
        assert marker["config"]["train"]["lr_base"] == 1e-6
        table = pd.read_parquet(run / "evals.parquet")
        M_max = 32 // (2 * n)
        assert list(table["step"]) == list(range(0, M_max + 1, 2)) and table["step"].max() == M_max

    # The work went through SLURM: one job log per submitted job, none for the local rules.
    submitted = {p.name for p in logs.iterdir()} if logs.is_dir() else set()
    assert {"rule_base_model", "rule_difficulty", "rule_splits", "rule_train", "rule_score"} <= submitted, submitted
    assert not {"rule_pool", "rule_fig_difficulty", "rule_all"} & submitted
    ctld = (slurm_cluster.root / "log" / "slurmctld.log").read_text()
    assert ctld.count("WEXITSTATUS 0") >= 7  # base_model, difficulty, splits, 2 x train, 2 x score

    # A second invocation finds nothing to do (and submits nothing).
    again = subprocess.run([*cmd, "-n"], cwd=work, env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=300)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_failed_train_job_is_retried_with_a_longer_time_limit(slurm_study):
    """The killed first attempt and its retry are two SLURM jobs of the same cell; the retry
    asks for attempt 2 x cluster.cpu.runtime (capped at cluster.max_runtime) and resumes from
    the killed attempt's checkpoint."""
    work = slurm_study["work"]
    assert slurm_study["marker"].exists(), "the test double never failed a train job"
    comment = f"rule_train_wildcards_{FAILING_TRAIN}"
    attempts = [j for j in slurm_study["jobs"] if j["comment"] == comment]
    assert [j["state"] for j in attempts] == ["FAILED", "COMPLETED"], slurm_study["jobs"]
    cpu, cap = SLURM_STUDY["cluster"]["cpu"]["runtime"], SLURM_STUDY["cluster"]["max_runtime"]
    assert [j["minutes"] for j in attempts] == [cpu, min(2 * cpu, cap)], attempts
    assert attempts[1]["minutes"] > attempts[0]["minutes"]
    # Each submission left its own job log; the other cell was submitted once.
    train_logs = work / ".snakemake" / "slurm_logs" / "rule_train"
    assert sorted(int(p.stem) for p in (train_logs / FAILING_TRAIN).glob("*.log")) == [j["id"] for j in attempts]
    assert len(list((train_logs / "easy_2_4_").glob("*.log"))) == 1
    others = [j for j in slurm_study["jobs"] if j["comment"].startswith("rule_train") and j["comment"] != comment]
    assert [j["state"] for j in others] == ["COMPLETED"] and others[0]["minutes"] == cpu, others
    # Snakemake saw the failure and retried it, and the retry went on from a checkpoint.
    assert "Trying to restart job" in slurm_study["proc"].stdout + slurm_study["proc"].stderr
    marker = json.loads((work / "results" / "slurm" / "runs" / "easy" / "bp2_n2" / "run.json").read_text())
    assert marker["resumed_from"] in (0, 2) and marker["steps"] == 8, marker
