"""`isocompute doctor [CONFIG]`: a preflight of a login or GPU node before the
first launch, as a checklist with the fix for each failure -- the NVIDIA driver
and CUDA build against the pinned GPU stack (envs/verl.yaml), torch.cuda, vllm,
flash-attn and verl, verl's Hydra and its antlr runtime, the config's base model
and data, the SLURM profile's account and partitions, free disk for the
checkpoints the study keeps, and the container runtime and image of
`cluster.container` when the jobs run in one.

Every probe of the machine goes through `System`, so the checklist is tested
with a fake one on a CPU machine.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from isocompute.container import BUILD_COMMAND, local_image
from isocompute.errors import InputError

# The oldest Linux driver branch that runs a CUDA major's builds (minor-version
# compatibility; CUDA 13.0 GA names >= 580.65.06, CUDA 12.x >= 525.60.13).
DRIVER_FLOOR = {13: 580, 12: 525}
# What the pinned GPU stack's versions are read from, relative to the repository root.
GPU_ENV_FILE = Path("envs/verl.yaml")
PROFILE_FILE = Path("slurm/config.yaml")
# verl's FSDP actor checkpoint: fp32 weights and Adam's two fp32 moments.
CHECKPOINT_BYTES_PER_PARAM = 12
GPU_RULES = ("train", "difficulty")


@dataclass(frozen=True)
class Check:
    name: str
    status: str          # "ok", "FAIL" or "skip"
    detail: str
    fix: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "FAIL"


def ok(name, detail):
    return Check(name, "ok", detail)


def fail(name, detail, fix):
    return Check(name, "FAIL", detail, fix)


def skip(name, detail):
    return Check(name, "skip", detail)


class System:
    """The machine as the checks see it."""

    def run(self, *argv: str) -> tuple[int, str]:
        """Exit status and output of a command; 127 when it is not installed."""
        if shutil.which(argv[0]) is None:
            return 127, f"{argv[0]}: command not found"
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return proc.returncode, (proc.stdout + proc.stderr).strip()

    def version(self, dist: str) -> str | None:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    def import_module(self, name: str):
        return importlib.import_module(name)

    def free_bytes(self, path: Path) -> int:
        path = Path(path).resolve()
        while not path.exists():
            path = path.parent
        return shutil.disk_usage(path).free

    def user(self) -> str:
        return os.environ.get("USER", "")

    def env(self, name: str) -> str:
        return os.environ.get(name, "")


# --- the pinned stack -----------------------------------------------------------------

def pinned_stack(env_file: Path = GPU_ENV_FILE) -> dict:
    """Versions envs/verl.yaml installs ({dist: version}): its lock's (envs/verl.lock.txt), the
    flash-attn wheel's its pip list (envs/verl.in) names, and that wheel's CUDA version ('cuda')."""
    env_file = Path(env_file)
    try:
        yaml.safe_load(env_file.read_text())["dependencies"].index("pip")  # ValueError: no pip
        lines = (env_file.with_suffix(".lock.txt").read_text().splitlines()
                 + env_file.with_suffix(".in").read_text().splitlines())
    except OSError as exc:
        raise InputError(f"{exc.filename or env_file}: {exc.strerror or exc} "
                         "(run isocompute doctor from the repository root)") from exc
    except (yaml.YAMLError, TypeError, KeyError, ValueError, AttributeError) as exc:
        raise InputError(f"{env_file}: expected a conda environment of python and pip, its pip lock beside it "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'malformed'})") from exc
    pins = {}
    for line in lines:
        if wheel := re.search(r"/(flash_attn)-([0-9.]+)\+cu(\d+)(\d)torch", line):
            pins.update({"flash-attn": wheel.group(2), "cuda": f"{wheel.group(3)}.{wheel.group(4)}"})
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?==([^\s;\\]+)(?:\s*\\)?", line.strip())
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def _same_release(installed: str | None, pinned: str) -> bool:
    return installed is not None and installed.split("+")[0] == pinned


# --- the checks -----------------------------------------------------------------------

def check_driver(system: System, cuda: str) -> Check:
    need = DRIVER_FLOOR.get(int(cuda.split(".")[0]))
    rc, out = system.run("nvidia-smi", "--query-gpu=driver_version,name", "--format=csv,noheader")
    if rc != 0:
        return fail("NVIDIA driver", f"nvidia-smi failed ({out.splitlines()[0] if out else rc}): no usable GPU here",
                    "run the doctor on a GPU node (e.g. srun --gpus=1 isocompute doctor CONFIG), "
                    "or pass --skip-gpu on a login node")
    driver, name = [p.strip() for p in out.splitlines()[0].split(",", 1)]
    if need is not None and int(driver.split(".")[0]) < need:
        return fail("NVIDIA driver", f"{driver} on {name}; the pinned build is CUDA {cuda}, which needs >= {need}",
                    f"update the node's driver to the {need} branch or newer; on data-center GPUs NVIDIA's CUDA "
                    f"forward-compatibility package (cuda-compat-{cuda.replace('.', '-')}) runs CUDA {cuda} on "
                    "older drivers (docs/cluster.md, Install)")
    return ok("NVIDIA driver", f"{driver} on {name} (CUDA {cuda} needs >= {need})")


def check_torch(system: System, pins: dict, gpus: int) -> Check:
    try:
        torch = system.import_module("torch")
    except ImportError as exc:
        return fail("torch.cuda", f"torch does not import ({exc})", "install the pinned GPU stack (envs/verl.yaml)")
    version, cuda = str(torch.__version__), torch.version.cuda
    fix = (f"install torch=={pins.get('torch')} built for CUDA {pins.get('cuda')} (envs/verl.yaml, "
           "snakemake --sdm conda)")
    if not _same_release(version, pins.get("torch", version)) or cuda is None \
            or cuda.split(".")[0] != pins.get("cuda", cuda).split(".")[0]:
        return fail("torch.cuda", f"torch {version} (CUDA {cuda or 'none: a CPU build'}); pinned "
                                  f"{pins.get('torch')} with CUDA {pins.get('cuda')}", fix)
    if not torch.cuda.is_available():
        return fail("torch.cuda", f"torch {version} (CUDA {cuda}) sees no GPU",
                    "run on a GPU node; check the driver (above) and CUDA_VISIBLE_DEVICES")
    count = torch.cuda.device_count()
    if count < gpus:
        return fail("torch.cuda", f"{count} GPUs visible, a training run uses {gpus} (cluster.train.gpus)",
                    "run the doctor in an allocation of a whole training job (srun --gpus=<cluster.train.gpus>)")
    return ok("torch.cuda", f"torch {version} (CUDA {cuda}), {count} GPUs: {torch.cuda.get_device_name(0)}")


def check_package(system: System, name: str, dist: str, pinned: str | None) -> Check:
    try:
        system.import_module(name)
    except Exception as exc:  # an import of a GPU package fails in many ways on a wrong build
        return fail(dist, f"import {name} failed: {type(exc).__name__}: {str(exc)[:160]}",
                    f"install {dist}=={pinned} from envs/verl.yaml (snakemake --sdm conda builds it)")
    installed = system.version(dist)
    if pinned and not _same_release(installed, pinned):
        return fail(dist, f"{installed} installed, {pinned} pinned", f"install {dist}=={pinned} (envs/verl.yaml)")
    return ok(dist, f"{installed}")


def check_hydra(system: System, pins: dict) -> Check:
    found = {d: system.version(d) for d in ("hydra-core", "omegaconf", "antlr4-python3-runtime")}
    wrong = [f"{d} {v}" for d, v in found.items() if d in pins and not _same_release(v, pins[d])]
    antlr = found["antlr4-python3-runtime"]
    if wrong or antlr is None or not antlr.startswith("4.9."):
        return fail("Hydra / antlr", ", ".join(f"{d} {v}" for d, v in found.items()),
                    f"install hydra-core=={pins.get('hydra-core')}, omegaconf=={pins.get('omegaconf')} and "
                    "antlr4-python3-runtime 4.9.3 (math-verify's latex2sympy2_extended[antlr4_9_3])")
    return ok("Hydra / antlr", ", ".join(f"{d} {v}" for d, v in found.items()))


# --- the study: model, data, profile, disk ----------------------------------------------

def model_parameters(model_dir: Path) -> int | None:
    """Parameters of a Hugging Face model directory from its safetensors (2 bytes each in bf16)."""
    index = model_dir / "model.safetensors.index.json"
    try:
        total = int(json.loads(index.read_text()).get("metadata", {}).get("total_size") or 0) if index.is_file() else 0
    except (OSError, ValueError, AttributeError, TypeError) as exc:   # ValueError: also not JSON, not UTF-8
        raise InputError(f"{index}: not a safetensors weight index ({type(exc).__name__}: {exc})") from None
    files = list(model_dir.glob("*.safetensors"))
    return total // 2 if total else (sum(f.stat().st_size for f in files) // 2 if files else None)


def local_model_dir(system: System, model: str) -> Path | None:
    """The directory of a model: itself when it is one, else its Hugging Face cache snapshot."""
    if Path(model).is_dir():
        return Path(model)
    try:
        hub = system.import_module("huggingface_hub")
        return Path(hub.snapshot_download(model, local_files_only=True))
    except Exception:
        return None


def check_model(system: System, cfg: dict) -> tuple[Check, Path | None]:
    if cfg["base_model"]["source"] == "embedded":
        return skip("base model", "embedded: the pipeline builds it"), None
    model = cfg["base_model"]["path"]
    path = local_model_dir(system, model)
    if path is None:
        return fail("base model", f"{model}: neither a directory nor in the Hugging Face cache of this node",
                    f"hf download {model} on the login node, with HF_HOME on the shared file "
                    "system (docs/cluster.md, Data and models)"), None
    missing = [] if (path / "config.json").is_file() else ["config.json"]
    tokenizer = any((path / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "vocab.json"))
    try:
        weights = model_parameters(path)
    except InputError as exc:       # the disk check (given no directory) then says it cannot size checkpoints
        return fail("base model", str(exc), f"download the whole model again (hf download {model})"), None
    if missing or not tokenizer or weights is None:
        what = missing + ([] if tokenizer else ["a tokenizer"]) + ([] if weights else ["safetensors weights"])
        return fail("base model", f"{path}: no {', '.join(what)}", f"download the whole model again (hf download {model})"), path
    return ok("base model", f"{model} -> {path} ({weights / 1e9:.1f}B parameters)"), path


def check_data(cfg: dict) -> Check:
    import pandas as pd

    from isocompute.data.pool import normalise_dataset

    pool = cfg["pool"]
    if pool["source"] != "file":
        return skip("data", f"pool.source {pool['source']}: built by the pool rule")
    path = Path(pool["path"])
    try:
        raw = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_json(path, lines=True)
        sample = normalise_dataset(raw.head(50), source=str(path), pool=pool, max_problems=None, seed=cfg["seed"])
    except Exception as exc:
        return fail("data", f"{path}: {type(exc).__name__}: {str(exc)[:200]}",
                    "fetch the pool file again (docs/cluster.md, Data and models) or fix pool.problem_field / "
                    "pool.answer_field")
    return ok("data", f"{path}: {len(raw):,} rows, problems and answers read ({len(sample)} of the first 50 kept)")


def profile_partitions(profile: dict) -> dict[str, str]:
    """Partition per rule: the default one and those the GPU rules set."""
    parts = {"default": profile.get("default-resources", {}).get("slurm_partition") or ""}
    for rule, res in (profile.get("set-resources") or {}).items():
        if isinstance(res, dict) and res.get("slurm_partition"):
            parts[rule] = res["slurm_partition"]
    return parts


def read_profile(profile_file: Path = PROFILE_FILE, *, missing_ok: bool = True) -> dict:
    """The SLURM profile as a mapping ({} when absent and `missing_ok`); a garbled one is an InputError."""
    if missing_ok and not Path(profile_file).is_file():
        return {}
    text = Path(profile_file).read_text()
    try:
        profile = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{profile_file}: not valid YAML ({str(exc).splitlines()[0]})") from exc
    if not isinstance(profile, dict):
        raise InputError(f"{profile_file}: expected a mapping of Snakemake options, got {type(profile).__name__}")
    return profile


def check_profile(system: System, profile_file: Path = PROFILE_FILE) -> Check:
    try:
        profile = read_profile(profile_file, missing_ok=False)
    except OSError as exc:
        return fail("SLURM profile", f"{profile_file}: {exc}", "run the doctor from the repository root")
    except InputError as exc:
        return fail("SLURM profile", str(exc), f"fix {profile_file} (a Snakemake profile: a YAML mapping)")
    rc, out = system.run("sinfo", "-h", "-o", "%P")
    if rc != 0:
        first = out.splitlines()[0] if out else f"exit status {rc}"
        return fail("SLURM profile", f"sinfo failed ({first[:120]}): not a node of a SLURM cluster",
                    "run the doctor on the cluster's login node")
    known = {p.rstrip("*") for p in out.split()}
    problems = [f"partition {p!r} ({rule}) does not exist" for rule, p in profile_partitions(profile).items()
                if p and p not in known]
    account = profile.get("default-resources", {}).get("slurm_account") or ""
    if account:
        rc, out = system.run("sacctmgr", "-n", "-P", "show", "assoc", f"user={system.user()}", "format=account")
        if rc == 0 and account not in out.split():
            yours = ", ".join(sorted(set(out.split()))) or "none"
            problems.append(f"account {account!r} is not one of yours ({yours})")
    if problems:
        return fail("SLURM profile", "; ".join(problems),
                    f"set slurm_account / slurm_partition in {profile_file} (default-resources, set-resources "
                    f"of {', '.join(GPU_RULES)}); partitions here: {', '.join(sorted(known))}")
    return ok("SLURM profile", f"account {account or '(your default)'}, partitions "
                               + ", ".join(f"{r}: {p or '(default)'}" for r, p in profile_partitions(profile).items()))


def checkpoint_plan(cfg: dict, params: int, concurrent_jobs: int) -> tuple[int, int]:
    """(bytes one checkpoint takes, bytes the study keeps at most): every run keeps
    cluster.verl.max_checkpoints, and each running one a second while it saves."""
    from isocompute.grid import grid_cells

    runs = len(grid_cells(cfg))
    one = params * CHECKPOINT_BYTES_PER_PARAM
    return one, one * (runs * cfg["cluster"]["verl"]["max_checkpoints"] + min(runs, concurrent_jobs))


def check_disk(system: System, cfg: dict, model_dir: Path | None, results: Path = Path("results")) -> Check:
    if cfg["train"]["backend"] != "verl":
        return skip("disk", "train.backend local: checkpoints of a few MB")
    params = model_parameters(model_dir) if model_dir is not None else None
    if params is None:
        return fail("disk", "the model's size is unknown, so is the checkpoints'", "make the base model check pass")
    try:
        profile = read_profile(PROFILE_FILE)
    except InputError as exc:
        return fail("disk", str(exc), f"fix {PROFILE_FILE} (a Snakemake profile: a YAML mapping)")
    one, need = checkpoint_plan(cfg, params, int(profile.get("jobs", 1)))
    free = system.free_bytes(results)
    detail = (f"{free / 1e12:.2f} TB free under {results}/; the study keeps up to {need / 1e12:.2f} TB of "
              f"checkpoints ({one / 1e9:.0f} GB each, cluster.verl.max_checkpoints = "
              f"{cfg['cluster']['verl']['max_checkpoints']} per run)")
    if free < need:
        return fail("disk", detail, "free space or point results/ at a larger file system (a symlink), merge "
                                    "finished runs you need (merge_checkpoint) and delete their checkpoints")
    return ok("disk", detail)


def check_container(system: System, reference: str) -> Check:
    """cluster.container: Apptainer (or Singularity) on PATH, with which Snakemake runs the
    jobs (--sdm apptainer), and the image file when it is a path."""
    inside = system.env("APPTAINER_CONTAINER") or system.env("SINGULARITY_CONTAINER")
    if inside:
        return ok("container", f"running inside {inside} (cluster.container: {reference})")
    runs = (system.run(name, "--version") for name in ("apptainer", "singularity"))  # Snakemake's order
    version = next((out.splitlines()[0] for rc, out in runs if rc == 0 and out), None)
    if version is None:
        return fail("container", f"cluster.container is {reference}, but neither apptainer nor singularity "
                                 "is on PATH", "load it (e.g. module load apptainer) on the login and compute "
                                               "nodes, or set cluster.container: null to use conda (--sdm conda)")
    image = local_image(reference)
    if image is not None and not image.exists():
        return fail("container", f"{version}; no image at {image.resolve()}",
                    f"build it from the repository root: {BUILD_COMMAND} (docs/cluster.md, Running in a "
                    "container), or point cluster.container at the image")
    where = f"image {image}" if image is not None else f"{reference} (Snakemake pulls it into .snakemake/singularity)"
    return ok("container", f"{version}; {where}")


# --- the checklist --------------------------------------------------------------------------

def run_checks(cfg: dict | None, system: System | None = None, *, skip_gpu: bool = False,
               env_file: Path = GPU_ENV_FILE) -> list[Check]:
    system = system or System()
    pins = pinned_stack(env_file)
    gpus = cfg["cluster"]["train"]["gpus"] if cfg else 1
    if skip_gpu:
        checks = [skip(name, "--skip-gpu") for name in ("NVIDIA driver", "torch.cuda", "vllm", "flash-attn")]
    else:
        checks = [check_driver(system, pins["cuda"]), check_torch(system, pins, gpus),
                  check_package(system, "vllm", "vllm", pins.get("vllm")),
                  check_package(system, "flash_attn", "flash-attn", pins.get("flash-attn"))]
    checks += [check_package(system, "verl", "verl", pins.get("verl")), check_hydra(system, pins)]
    if cfg is None:
        return checks + [check_profile(system)]
    model_check, model_dir = check_model(system, cfg)
    checks += [model_check, check_data(cfg), check_profile(system), check_disk(system, cfg, model_dir)]
    if cfg["cluster"]["container"]:
        checks.append(check_container(system, cfg["cluster"]["container"]))
    return checks


def doctor(cfg: dict | None, system: System | None = None, *, skip_gpu: bool = False) -> tuple[str, int]:
    """The checklist as printed, and the exit status: 1 when a check failed."""
    checks = run_checks(cfg, system, skip_gpu=skip_gpu)
    return format_checklist(checks), int(any(c.failed for c in checks))


def format_checklist(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"  {c.status:<4}  {c.name:<{width}}  {c.detail}")
        if c.fix:
            lines.append(f"  {'':<4}  {'':<{width}}  fix: {c.fix}")
    failed = sum(c.failed for c in checks)
    lines.append(f"{len(checks)} checks: {sum(c.status == 'ok' for c in checks)} ok, {failed} failed, "
                 f"{sum(c.status == 'skip' for c in checks)} skipped")
    return "\n".join(lines)
