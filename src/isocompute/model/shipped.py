"""The shipped embedded base model: the embedded default's pretrained weights, versioned in
the package with a sha256 checksum per file, as one downloads a model from a hub.

Pretraining the embedded default's model takes about 6 minutes on 2 cores, a third of
`make run`. The base_model stage copies this shipped copy instead when the config asks for
exactly the model it is (`base_model.shipped: auto` and the same recipe: the seed, the
pool section and the base_model keys that shape the weights), after checking every file
against SHA256SUMS; any other recipe is pretrained as before. Shipping the weights also
gives every machine the same base model, so the same difficulty table and splits
(pretraining is deterministic on one machine, but float reductions may differ across CPUs).

`isocompute ship-base-model config/config.yaml` (`make shipped-model`) pretrains the
recipe of a config and rewrites the shipped copy, its recipe and its checksums.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from isocompute.atomic import sha256_file
from isocompute.errors import InputError

log = logging.getLogger(__name__)

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped" / "embedded"
RECIPE_FILE = "isocompute_recipe.json"
SUMS_FILE = "SHA256SUMS"
# Files of a pretrained model directory that are not the model: the stage's provenance
# (written for each copy) and atomic_dir's mark. Every other file save_model_dir wrote
# (weights, config, tokenizer, chat template, meta) is shipped and listed in SHA256SUMS.
NOT_SHIPPED = ("isocompute_provenance.json", ".isocompute-output")
# What a shipped copy must list at least (the rest depends on the transformers version).
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer_config.json", "isocompute_meta.json",
                  RECIPE_FILE)
# base_model keys that do not shape the embedded model's weights: the choice of copy or
# pretraining itself, the path of a given (not embedded) model, and the CPU threads of
# pretraining (1 and 2 threads gave bit-identical weights on the machine that built the
# shipped copy: torch splits these matmuls by output, not along their sums).
NOT_RECIPE_KEYS = ("shipped", "path", "pretrain_threads")
VERSION = 1


def recipe(cfg: dict) -> dict:
    """What the embedded model's weights are a function of: the seed, the pool section (the
    corpus excludes the pool) and the base_model section less NOT_RECIPE_KEYS."""
    model = {k: v for k, v in cfg["base_model"].items() if k not in NOT_RECIPE_KEYS}
    return json.loads(json.dumps({"seed": cfg["seed"], "pool": cfg["pool"], "base_model": model}))


def read_sums(model_dir: Path) -> dict[str, str]:
    """{file name: sha256} of a shipped directory's SHA256SUMS (`sha256sum` format)."""
    path = model_dir / SUMS_FILE
    if not path.is_file():
        raise InputError(f"{path}: missing; the shipped base model needs its checksums "
                         f"(restore it from git, or rebuild it: make shipped-model)")
    sums = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise InputError(f"{path}: line {n}: expected '<sha256>  <file>', got {line!r}")
        sums[parts[1].lstrip("*")] = parts[0]
    return sums


def verify(model_dir: Path | None = None) -> dict[str, str]:
    """Check every model file and the recipe against SHA256SUMS; returns the sums.
    A missing or changed file stops with one line naming it."""
    model_dir = model_dir or SHIPPED_DIR
    sums = read_sums(model_dir)
    for name in REQUIRED_FILES:
        if name not in sums:
            raise InputError(f"{model_dir / SUMS_FILE}: no checksum for {name}; rebuild the shipped base model "
                             f"(make shipped-model)")
    for name in sums:
        path = model_dir / name
        if not path.is_file():
            raise InputError(f"{path}: missing from the shipped base model (restore it from git, or rebuild it: "
                             f"make shipped-model)")
        got = sha256_file(path)
        if got != sums[name]:
            raise InputError(f"{path}: sha256 {got[:16]}... does not match {sums[name][:16]}... in {SUMS_FILE}; "
                             f"the shipped base model was changed or damaged (restore it from git, or rebuild "
                             f"it: make shipped-model)")
    return sums


def shipped_recipe(model_dir: Path | None = None) -> dict | None:
    """The recipe the shipped model was pretrained with (None when none is shipped)."""
    path = (model_dir or SHIPPED_DIR) / RECIPE_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())["recipe"]


def use_shipped(cfg: dict, model_dir: Path | None = None) -> bool:
    """Whether the base_model stage copies the shipped model: source embedded, shipped auto,
    and the config's recipe equal to the shipped one's."""
    model = cfg["base_model"]
    if model["source"] != "embedded" or model.get("shipped", "auto") != "auto":
        return False
    return recipe(cfg) == shipped_recipe(model_dir)


def copy_shipped(out: Path, model_dir: Path | None = None) -> dict:
    """Copy the verified shipped model's files into `out` (a fresh directory); returns its
    meta plus what was shipped: version and the weights' sha256."""
    model_dir = model_dir or SHIPPED_DIR
    sums = verify(model_dir)
    files = [name for name in sums if name != RECIPE_FILE]
    out.mkdir(parents=True, exist_ok=True)
    for name in files:
        shutil.copyfile(model_dir / name, out / name)
    # Checked after the copy too: the copy is what the jobs read.
    for name in files:
        if sha256_file(out / name) != sums[name]:
            raise InputError(f"{out / name}: the copy of the shipped base model differs from {model_dir / name}")
    meta = json.loads((model_dir / "isocompute_meta.json").read_text())
    version = json.loads((model_dir / RECIPE_FILE).read_text())["version"]
    return {**meta, "shipped": {"from": str(model_dir), "version": version,
                                "sha256": sums["model.safetensors"]}}


def write_shipped(model_dir: Path, cfg: dict, dest: Path) -> dict[str, str]:
    """Publish the pretrained `model_dir` of config `cfg` as the shipped copy at `dest`:
    its model files, the recipe and SHA256SUMS, swapped in whole. Returns the sums."""
    from isocompute import atomic

    files = sorted(p.name for p in model_dir.iterdir() if p.is_file() and p.name not in NOT_SHIPPED)
    with atomic.atomic_dir(dest) as tmp:
        for name in files:
            shutil.copyfile(model_dir / name, tmp / name)
        (tmp / RECIPE_FILE).write_text(json.dumps({"version": VERSION, "recipe": recipe(cfg)}, indent=2,
                                                  sort_keys=True) + "\n")
        sums = {name: sha256_file(tmp / name) for name in (*files, RECIPE_FILE)}
        (tmp / SUMS_FILE).write_text("".join(f"{h}  {name}\n" for name, h in sorted(sums.items())))
    return sums


def reproduced(shipped_dir: Path, model_dir: Path) -> list[str]:
    """The files of `shipped_dir` that a fresh pretraining in `model_dir` does not reproduce
    (empty: the same model): every shipped file byte for byte, but the meta's seconds."""
    sums = read_sums(shipped_dir)
    differ = []
    for name in sorted(sums.keys() - {RECIPE_FILE}):
        fresh = model_dir / name
        if name == "isocompute_meta.json" and fresh.is_file():
            same = ({**json.loads(fresh.read_text()), "seconds": None}
                    == {**json.loads((shipped_dir / name).read_text()), "seconds": None})
        else:
            same = fresh.is_file() and sha256_file(fresh) == sums[name]
        if not same:
            differ.append(name)
    fresh_files = {p.name for p in model_dir.iterdir() if p.is_file() and p.name not in NOT_SHIPPED}
    return differ + sorted(fresh_files - sums.keys())

