"""What identifies a run's training: the one run identity both backends stamp on
their checkpoints, so a run resumes only from a checkpoint trained the same way.

M_max is left out, so a run whose compute budget was raised continues from its
last checkpoint. Pure of torch: the verl backend uses it on a login node.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def file_digest(path: Path, chunk: int = 1 << 20) -> str:
    """Digest of a file; weight files over 64 MiB by size and their first and last MiB."""
    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    with open(path, "rb") as fh:
        if size <= 64 << 20:
            h.update(fh.read())
        else:
            h.update(fh.read(chunk))
            fh.seek(-chunk, os.SEEK_END)
            h.update(fh.read(chunk))
    return h.hexdigest()


def model_fingerprint(model: str) -> str:
    """Digest of a local model directory's config and weights; a hub name stands for itself."""
    path = Path(model)
    if not path.is_dir():
        return str(model)
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".json", ".safetensors", ".bin")
                   and not p.name.startswith("isocompute_"))
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode())
        h.update(file_digest(p).encode())
    return h.hexdigest()


def training_identity(cfg: dict, cell, paths, **backend_keys) -> dict:
    """Everything that changes a run's trajectory, except its length M_max.

    `backend_keys` adds what only one backend's runs depend on (verl: its engine
    settings and GPU count).
    """
    train = {k: v for k, v in cfg["train"].items() if k != "device"}
    s = cfg["sampling"]
    return {
        "seed": int(cfg["seed"]) + int(getattr(cell, "replicate", 0)), "split": cell.split, "B_p": cell.B_p, "n": cell.n, "train": train,
        "sampling": {k: s[k] for k in ("temperature", "top_p", "max_new_tokens")},
        "eval_samples": cfg["eval"]["samples"],
        "model": model_fingerprint(paths.model),
        "train_file": file_digest(Path(paths.train_file)), "val_file": file_digest(Path(paths.val_file)),
        # Only when there are any: a run without extra evaluation sets keeps its identity.
        **({"eval_sets": {name: file_digest(Path(f)) for name, f in paths.eval_sets}}
           if getattr(paths, "eval_sets", ()) else {}),
        **backend_keys,
    }


def config_hash(identity: dict) -> str:
    """16 hex digits naming an identity (stored in checkpoints and run.json)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]
