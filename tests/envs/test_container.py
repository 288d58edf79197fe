"""The container option: `cluster.container` is checked by name, envs/verl.def builds
envs/verl.yaml itself, every rule that runs a stage carries the image as its
`container:` under --sdm apptainer, jobs then run through apptainer, and moving a
finished study into the container resubmits nothing (the SLURM profile's rerun triggers).
A fake `apptainer` on PATH stands in for the real one, which this machine lacks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest
import yaml

from isocompute.config import check_config
from isocompute.errors import ConfigError
from support import REPO, TINY_CONFIG, VENV_BIN, job_counts, make_study_dir, run_snakemake, write_config

GPU_RULES = ("base_model", "difficulty_chunk", "train", "train_rung", "train_variant", "merge_checkpoint")


# --- the key ---------------------------------------------------------------------------------

def test_the_default_is_no_container_and_paths_and_pullable_uris_are_accepted():
    assert check_config({})["cluster"]["container"] is None
    for ref in ("verl.sif", "/shared/images/verl.sif", "file:///shared/verl.sif",
                "docker://ghcr.io/lab/isocompute:0.3", "oras://ghcr.io/lab/verl:0.3", "library://lab/x/verl:0.3"):
        assert check_config({"cluster": {"container": ref}})["cluster"]["container"] == ref


@pytest.mark.parametrize("ref,says", [
    ("dockr://lab/isocompute:0.3", "scheme 'dockr'"),
    ("ubuntu:22.04", "scheme 'ubuntu'; a registry image is written docker://name:tag"),
    ("s3://bucket/verl.sif", "scheme 's3'"),
    ("my image.sif", "no whitespace"),
    ("", "non-empty"),
    (3, "expected ['string', 'null']"),
])
def test_a_bad_reference_is_one_line_naming_the_key(ref, says):
    with pytest.raises(ConfigError) as err:
        check_config({"cluster": {"container": ref}})
    message = str(err.value)
    assert message.startswith("config key 'cluster.container': ") and says in message and "\n" not in message


def test_check_config_stops_on_a_bad_scheme_with_that_line(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text("cluster:\n  container: dockr://lab/isocompute:0.3\n")
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "check-config", str(path)], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "config key 'cluster.container': expected a path to a .sif image or a URI of docker://" in proc.stderr


# --- the image -------------------------------------------------------------------------------

def def_sections(text: str) -> dict[str, list[str]]:
    """%section -> its lines (comments and blank lines dropped) of an Apptainer definition file."""
    sections, name = {}, "header"
    for line in text.splitlines():
        if line.startswith("%"):
            name = line[1:].split()[0]
            continue
        if line.strip() and not line.strip().startswith("#"):
            sections.setdefault(name, []).append(line.strip())
    return sections


def test_the_definition_file_builds_the_pinned_environment_file_and_copies_no_pin():
    text = (REPO / "envs" / "verl.def").read_text()
    sections = def_sections(text)
    copied = dict(line.split() for line in sections["files"])
    assert all((REPO / src).exists() for src in copied), copied
    assert copied["envs/verl.yaml"] == "/opt/isocompute/envs/verl.yaml"
    post = "\n".join(sections["post"])
    assert "--file /opt/isocompute/envs/verl.yaml" in post and "envs/verl.post-deploy.sh" in post
    assert copied["envs/verl.lock.txt"] == "/opt/isocompute/envs/verl.lock.txt"
    # what the post-deploy script runs: the install script, and lock.py, which reads the build tools
    assert copied["envs/install-env.sh"] == "/opt/isocompute/envs/install-env.sh"
    assert copied["envs/lock.py"] == "/opt/isocompute/envs/lock.py"
    # One list of pins: no version constraint and none of verl.in's versions in the def.
    assert not re.search(r"[=<>~]=\s*[0-9]", text)
    pins = (REPO / "envs" / "verl.in").read_text().splitlines()
    for pin in pins:
        version = re.search(r"==([0-9][^\s;]*)", pin)
        assert version is None or version.group(1) not in text, pin


def test_the_image_holds_every_package_of_the_cpu_environment():
    """Every rule may run in the one image: envs/analysis.yaml's requirements are part of
    envs/verl.yaml's (envs/<name>.in, the lists their locks resolve)."""
    def pip_list(name):
        lines = (REPO / "envs" / name).read_text().splitlines()
        return {line.strip() for line in lines if line.strip() and not line.startswith("#")}

    assert pip_list("analysis.in") <= pip_list("verl.in")


# --- the rules, a dry run, jobs in the container, and staleness ---------------------------------

RULES_OF = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, DeploymentMethod, DeploymentSettings, OutputSettings,
                                          ResourceSettings)

    with SnakemakeApi(OutputSettings(quiet=None)) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                          config_settings=ConfigSettings(configfiles=[Path(sys.argv[2])]),
                          deployment_settings=DeploymentSettings(deployment_method={DeploymentMethod.APPTAINER}),
                          snakefile=Path(sys.argv[1]), workdir=Path.cwd())
        print(json.dumps({rule.name: rule.container_img for rule in wf._workflow.rules}))
""")


def rule_containers(work, config: dict) -> dict:
    """Rule name -> its container image as Snakemake parsed the Snakefile (False: none)."""
    path = write_config(work, config)
    proc = subprocess.run([sys.executable, "-c", RULES_OF, str(REPO / "Snakefile"), str(path)], cwd=work,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fake_apptainer(bin_dir, log):
    """`apptainer` that answers --version, records each call, and runs `exec`'s command on the host."""
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "apptainer"
    exe.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, subprocess, sys
        if sys.argv[1:] == ["--version"]:
            print("apptainer version 1.3.4")
            sys.exit(0)
        with open({str(log)!r}, "a") as f:
            f.write(json.dumps(sys.argv[1:]) + "\\n")
        shell, flag, command = sys.argv[-3:]
        sys.exit(subprocess.call([shell, flag, command]) if "exec" in sys.argv else 1)
    """))
    exe.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.mark.slow
def test_every_stage_rule_carries_the_image_and_none_without_it(tmp_path):
    work = make_study_dir(tmp_path)
    sif = str(tmp_path / "verl.sif")
    verl = {"train": {"backend": "verl"}, "sweep": {"mode": "adaptive"}}
    containers = rule_containers(work, {**verl, "cluster": {"container": sif}})
    assert set(GPU_RULES) <= set(containers), sorted(containers)
    assert {rule: img for rule, img in containers.items() if rule != "all"} == {r: sif for r in containers
                                                                               if r != "all"}
    assert not containers["all"]  # no shell: nothing to run in an image
    assert not any(rule_containers(work, verl).values())


@pytest.mark.slow
def test_a_dry_run_with_apptainer_resolves_and_needs_the_runtime(tmp_path):
    work = make_study_dir(tmp_path)
    path = write_config(work, {**TINY_CONFIG, "cluster": {"container": str(tmp_path / "verl.sif")}})
    args = ("-n", "--cores", "1", "--sdm", "apptainer", "--configfile", str(path))
    proc = run_snakemake(work, *args, env_extra=fake_apptainer(tmp_path / "bin", tmp_path / "calls.jsonl"))
    counts = job_counts(proc.stdout)
    assert counts["base_model"] == 1 and counts["difficulty_chunk"] >= 1 and counts["splits"] == 1, counts
    if shutil.which("apptainer") is None and shutil.which("singularity") is None:
        missing = run_snakemake(work, *args, check=False)
        assert missing.returncode != 0
        assert "apptainer or singularity command has to be available" in missing.stdout + missing.stderr


@pytest.mark.slow
def test_a_finished_job_stays_finished_in_the_container_and_a_rerun_runs_inside_it(tmp_path):
    work = make_study_dir(tmp_path)
    shutil.copytree(REPO / "slurm", work / "slurm")
    pool = "results/tiny/data/pool.parquet"
    plain = write_config(work, TINY_CONFIG)
    run_snakemake(work, pool, "--cores", "1", "--configfile", str(plain))  # no container, no --sdm
    sif = tmp_path / "verl.sif"
    sif.write_bytes(b"")
    boxed = work / "config" / "boxed.yaml"
    boxed.write_text(yaml.safe_dump({**TINY_CONFIG, "cluster": {"container": str(sif)}}))
    calls = tmp_path / "calls.jsonl"
    env = fake_apptainer(tmp_path / "bin", calls)
    into = (pool, "-n", "--sdm", "apptainer", "--configfile", str(boxed))
    # With the profile's rerun triggers the pool is still done; Snakemake's default (the
    # software stack is a trigger) would resubmit it, which is why the profile sets them.
    kept = run_snakemake(work, *into, "--profile", "slurm", env_extra=env)
    assert "Nothing to be done" in kept.stdout + kept.stderr
    default = run_snakemake(work, *into, "--cores", "1", env_extra=env)
    assert "Software environment definition has changed" in default.stdout + default.stderr
    assert not calls.exists()  # dry runs start no container
    run_snakemake(work, pool, "--cores", "1", "--sdm", "apptainer", "--configfile", str(boxed), "--forcerun",
                  "pool", env_extra=env)
    (call,) = [json.loads(line) for line in calls.read_text().splitlines()]
    assert "exec" in call and str(sif) in call and "isocompute pool --params" in call[-1], call
    assert (work / pool).is_file()
