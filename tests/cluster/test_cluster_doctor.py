"""`isocompute doctor`: the preflight checklist of a login or GPU node. On this
CPU machine the GPU checks fail with a clear message; a fake machine stands in
for a GPU node to check each item, its fix and the exit status."""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pandas as pd
import pytest

from isocompute.cluster import doctor as dr
from isocompute.config import check_config
from support import REPO, VENV_BIN


class FakeNode(dr.System):
    """A GPU node of a SLURM cluster with the pinned stack, changed by keyword."""

    def __init__(self, driver="580.95.05", torch_version="2.11.0+cu130", torch_cuda="13.0", gpus=8,
                 missing=(), versions=None, partitions="cpu* gpu", accounts="lab", free=10**15):
        self.driver, self.gpus, self.missing, self.partitions = driver, gpus, set(missing), partitions
        self.accounts, self.free = accounts, free
        self.versions = {"vllm": "0.24.0", "flash-attn": "2.8.3", "verl": "0.9.1", "hydra-core": "1.3.8",
                         "omegaconf": "2.3.1", "antlr4-python3-runtime": "4.9.3", **(versions or {})}
        cuda = SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus,
                               get_device_name=lambda i: "NVIDIA H200")
        self.torch = SimpleNamespace(__version__=torch_version, version=SimpleNamespace(cuda=torch_cuda), cuda=cuda)

    def run(self, *argv):
        if argv[0] == "nvidia-smi":
            return (0, f"{self.driver}, NVIDIA H200\n" * 8) if self.driver else (127, "nvidia-smi: command not found")
        if argv[0] == "sinfo":
            return 0, self.partitions
        if argv[0] == "sacctmgr":
            return 0, self.accounts
        return 127, f"{argv[0]}: command not found"

    def version(self, dist):
        return self.versions.get(dist)

    def import_module(self, name):
        if name in self.missing:
            raise ImportError(f"No module named {name!r}")
        return self.torch if name == "torch" else SimpleNamespace()

    def free_bytes(self, path):
        return self.free

    def user(self):
        return "me"


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A verl study with a local 7B-sized model directory and a pool file, run from the repo root."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "tokenizer.json").write_text("{}")
    (model / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 15_200_000_000}}))
    pool = tmp_path / "pool.parquet"
    pd.DataFrame({"problem": ["1+1?", "2+2?"], "answer": ["2", "4"]}).to_parquet(pool)
    monkeypatch.chdir(REPO)
    return check_config({"base_model": {"source": "path", "path": str(model)},
                         "pool": {"source": "file", "path": str(pool)}, "train": {"backend": "verl"},
                         "splits": {"names": ["easy"]},
                         "grid": {"easy": {"B_p": [32, 64], "n": [8, 16], "B_max": 1024, "C_max": 65536}}})


def lines_of(text: str) -> dict[str, str]:
    """name -> 'status detail [fix: ...]' of a printed checklist."""
    out, last = {}, None
    for line in text.splitlines()[:-1]:
        if line.strip().startswith("fix:"):
            out[last] += " | " + line.strip()
            continue
        status, rest = line.split(None, 1)
        name = next(n for n in ("NVIDIA driver", "torch.cuda", "vllm", "flash-attn", "verl", "Hydra / antlr",
                                "base model", "data", "SLURM profile", "disk", "container") if rest.startswith(n))
        out[name] = status + " " + rest[len(name):].strip()
        last = name
    return out


def test_a_ready_gpu_node_passes_every_check(study):
    text, status = dr.doctor(study, FakeNode())
    assert status == 0, text
    items = lines_of(text)
    assert list(items) == ["NVIDIA driver", "torch.cuda", "vllm", "flash-attn", "verl", "Hydra / antlr",
                           "base model", "data", "SLURM profile", "disk"]
    assert all(v.startswith("ok ") for v in items.values()), text
    assert "580.95.05 on NVIDIA H200 (CUDA 13.0 needs >= 580)" in items["NVIDIA driver"]
    assert "7.6B parameters" in items["base model"]
    # 4 runs keep one 91 GB checkpoint each, plus one being saved per running job.
    assert "keeps up to 0.73 TB of checkpoints (91 GB each" in items["disk"]
    assert text.splitlines()[-1] == "10 checks: 10 ok, 0 failed, 0 skipped"


@pytest.mark.parametrize("node,item,says,fix", [
    (FakeNode(driver="550.54.15"), "NVIDIA driver", "CUDA 13.0, which needs >= 580", "cuda-compat-13-0"),
    (FakeNode(torch_version="2.11.0+cu128", torch_cuda="12.8"), "torch.cuda", "pinned 2.11.0 with CUDA 13.0",
     "torch==2.11.0 built for CUDA 13.0"),
    (FakeNode(gpus=2), "torch.cuda", "2 GPUs visible, a training run uses 8", "srun --gpus"),
    (FakeNode(missing={"vllm"}), "vllm", "import vllm failed", "vllm==0.24.0"),
    (FakeNode(versions={"flash-attn": "2.7.4"}), "flash-attn", "2.7.4 installed, 2.8.3 pinned", "flash-attn==2.8.3"),
    (FakeNode(versions={"antlr4-python3-runtime": "4.13.2"}), "Hydra / antlr", "antlr4-python3-runtime 4.13.2",
     "4.9.3"),
    (FakeNode(free=5 * 10**11), "disk", "0.50 TB free under results/; the study keeps up to 0.73 TB",
     "merge_checkpoint"),
])
def test_each_failure_names_its_fix_and_fails_the_run(study, node, item, says, fix):
    text, status = dr.doctor(study, node)
    assert status == 1
    line = lines_of(text)[item]
    assert line.startswith("FAIL ") and says in line and "fix: " in line and fix in line, line


def test_a_missing_model_names_the_hf_download_that_fetches_it(study, tmp_path):
    """The fix is `hf download`: the project's huggingface_hub refuses `huggingface-cli download`."""
    absent = check_config({**study, "base_model": {"source": "path", "path": "Org/NotCached-7B"}})
    line = lines_of(dr.doctor(absent, FakeNode(missing={"huggingface_hub"}))[0])["base model"]
    assert line.startswith("FAIL ") and "fix: hf download Org/NotCached-7B on the login node" in line, line
    (tmp_path / "model" / "tokenizer.json").unlink()
    line = lines_of(dr.doctor(study, FakeNode())[0])["base model"]
    assert "tokenizer" in line and "(hf download " in line and "huggingface-cli" not in line, line


@pytest.mark.parametrize("garble", ['{"metadata": {"total_size": 15', "[1, 2]", '{"metadata": {"total_size": "x"}}'])
def test_a_garbled_weight_index_fails_the_model_check_by_name(study, tmp_path, garble):
    index = tmp_path / "model" / "model.safetensors.index.json"
    index.write_text(garble)
    text, status = dr.doctor(study, FakeNode())
    assert status == 1
    items = lines_of(text)
    assert items["base model"].startswith("FAIL ") and str(index) in items["base model"], text
    assert "not a safetensors weight index" in items["base model"] and "hf download" in items["base model"]
    assert items["disk"].startswith("FAIL ") and "make the base model check pass" in items["disk"]


def test_a_wrong_partition_in_the_profile_is_named(study, tmp_path, monkeypatch):
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "config.yaml").write_text(
        "default-resources: {slurm_account: lab, slurm_partition: cpu}\n"
        "set-resources: {train: {slurm_partition: h200}}\n")
    check = dr.check_profile(FakeNode(), tmp_path / "slurm" / "config.yaml")
    assert check.failed and "partition 'h200' (train) does not exist" in check.detail
    assert dr.check_profile(FakeNode(partitions="cpu* h200"), tmp_path / "slurm" / "config.yaml").status == "ok"
    assert "account 'lab' is not one of yours" in dr.check_profile(
        FakeNode(partitions="cpu h200", accounts="other"), tmp_path / "slurm" / "config.yaml").detail


def test_the_pins_come_from_the_gpu_environment():
    pins = dr.pinned_stack(REPO / "envs" / "verl.yaml")
    assert {k: pins[k] for k in ("torch", "vllm", "verl", "flash-attn", "hydra-core", "omegaconf", "cuda")} == {
        "torch": "2.11.0", "vllm": "0.24.0", "verl": "0.9.1", "flash-attn": "2.8.3", "hydra-core": "1.3.8",
        "omegaconf": "2.3.1", "cuda": "13.0"}


@pytest.mark.slow   # imports the verl and vLLM stack, twice
def test_on_this_cpu_machine_the_gpu_checks_fail_clearly():
    """The real command here: no nvidia-smi, a CPU torch, no vllm -> exit 1 with the fixes; a
    login node skips the GPU items with --skip-gpu."""
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "doctor"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    items = lines_of(proc.stdout.split("\n", 1)[1])
    assert items["NVIDIA driver"].startswith("FAIL") and "no usable GPU here" in items["NVIDIA driver"]
    assert "fix: run the doctor on a GPU node" in items["NVIDIA driver"]
    assert items["torch.cuda"].startswith("FAIL") and items["verl"].startswith("ok")
    skipped = subprocess.run([str(VENV_BIN / "isocompute"), "doctor", "--skip-gpu"], cwd=REPO, capture_output=True,
                             text=True)
    items = lines_of(skipped.stdout.split("\n", 1)[1])
    assert all(items[k].startswith("skip") for k in ("NVIDIA driver", "torch.cuda", "vllm", "flash-attn"))
    assert skipped.returncode == (1 if items["SLURM profile"].startswith("FAIL") else 0)


def test_doctor_outside_the_repo_or_with_garbled_files_is_one_line_or_a_named_check(tmp_path):
    doctor = [str(VENV_BIN / "isocompute"), "doctor", "--skip-gpu"]
    out = subprocess.run(doctor, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "envs/verl.yaml: No such file or directory (run isocompute doctor from the repository root)" in out.stderr
    (tmp_path / "envs").mkdir()
    (tmp_path / "slurm").mkdir()
    for name in ("verl.yaml", "verl.in", "verl.lock.txt"):
        (tmp_path / "envs" / name).write_text((REPO / "envs" / name).read_text())
    (tmp_path / "slurm" / "config.yaml").write_text("jobs: [unclosed\n")
    out = subprocess.run(doctor, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "FAIL  SLURM profile  slurm/config.yaml: not valid YAML" in out.stdout
    (tmp_path / "envs" / "verl.yaml").write_text("a: [\n")
    out = subprocess.run(doctor, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "envs/verl.yaml: expected a conda environment of python and pip, its pip lock beside it" in out.stderr
    (tmp_path / "envs" / "verl.yaml").write_text((REPO / "envs" / "verl.yaml").read_text())
    (tmp_path / "envs" / "verl.lock.txt").unlink()
    out = subprocess.run(doctor, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 2 and "envs/verl.lock.txt: No such file or directory" in out.stderr


# --- cluster.container: the runtime on PATH and the image ---------------------------------

def put_on_path(bin_dir, name: str, version: str) -> None:
    """A fake container runtime that answers --version as the real ones do."""
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text(f"#!/bin/sh\necho '{version}'\n")
    exe.chmod(0o755)


@pytest.fixture
def bare_path(tmp_path, monkeypatch):
    """PATH holds only tmp/bin (empty until a test puts a runtime there), outside any container."""
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    for name in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "bin"


def test_without_apptainer_on_path_the_container_check_fails_with_its_fix(bare_path, tmp_path):
    check = dr.check_container(dr.System(), str(tmp_path / "verl.sif"))
    assert check.failed and "neither apptainer nor singularity is on PATH" in check.detail
    assert "module load apptainer" in check.fix and "cluster.container: null" in check.fix


def test_with_apptainer_on_path_the_image_file_must_exist(bare_path, tmp_path):
    put_on_path(bare_path, "apptainer", "apptainer version 1.3.4")
    sif = tmp_path / "verl.sif"
    check = dr.check_container(dr.System(), str(sif))
    assert check.failed and f"apptainer version 1.3.4; no image at {sif}" == check.detail
    assert "apptainer build verl.sif envs/verl.def" in check.fix
    sif.write_bytes(b"")
    assert dr.check_container(dr.System(), str(sif)) == dr.ok("container", f"apptainer version 1.3.4; image {sif}")
    pulled = dr.check_container(dr.System(), "docker://ghcr.io/lab/isocompute:0.3")
    assert pulled.status == "ok" and "Snakemake pulls it" in pulled.detail


def test_singularity_serves_too_and_inside_the_image_the_check_passes(bare_path, tmp_path, monkeypatch):
    put_on_path(bare_path, "singularity", "singularity-ce version 4.1.5")
    sif = tmp_path / "verl.sif"
    sif.write_bytes(b"")
    assert dr.check_container(dr.System(), str(sif)).detail == f"singularity-ce version 4.1.5; image {sif}"
    (bare_path / "singularity").unlink()
    monkeypatch.setenv("APPTAINER_CONTAINER", str(sif))
    assert dr.check_container(dr.System(), str(sif)).status == "ok"


def test_the_checklist_has_a_container_item_only_when_the_study_sets_one(study):
    assert "container" not in lines_of(dr.doctor(study, FakeNode())[0])
    text, status = dr.doctor({**study, "cluster": {**study["cluster"], "container": "verl.sif"}}, FakeNode())
    assert status == 1 and lines_of(text)["container"].startswith("FAIL cluster.container is verl.sif")
