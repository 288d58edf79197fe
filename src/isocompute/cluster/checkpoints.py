"""Converting a verl run's FSDP checkpoint into a Hugging Face model directory,
for rules that need the trained weights (out-of-domain evaluation, sampling
from a trained policy) -- `python -m verl.model_merger merge --backend fsdp`.

verl keeps `checkpoints/global_step_{M}/actor/` per saved step (the last
`cluster.verl.max_checkpoints` of them); the merged model is written to a
temporary directory and renamed, so a complete-looking directory is complete.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from isocompute.train.backends.verl.files import latest_checkpoint_step
from isocompute.errors import InputError

MERGER_ENTRY = "verl.model_merger"


def actor_checkpoint_dir(run_dir: Path | str, step: int | None = None) -> Path:
    """`checkpoints/global_step_{step}/actor` of a run; the latest complete one by default."""
    checkpoints = Path(run_dir) / "checkpoints"
    if step is None:
        step = latest_checkpoint_step(checkpoints)
        if step is None:
            raise InputError(f"{checkpoints}: no complete verl checkpoint "
                             "(latest_checkpointed_iteration.txt); has the run saved one?")
    actor = checkpoints / f"global_step_{int(step)}" / "actor"
    if not actor.is_dir():
        kept = sorted(p.name for p in checkpoints.glob("global_step_*")) if checkpoints.is_dir() else []
        raise InputError(f"{actor}: no such checkpoint (kept: {', '.join(kept) or 'none'}; "
                         "cluster.verl.max_checkpoints sets how many are kept)")
    return actor


def merge_command(actor_dir: Path | str, target_dir: Path | str, *, python: str | None = None) -> list[str]:
    """argv of verl's FSDP -> Hugging Face conversion of one actor checkpoint."""
    return [python or sys.executable, "-m", MERGER_ENTRY, "merge", "--backend", "fsdp",
            "--local_dir", str(Path(actor_dir).resolve()), "--target_dir", str(Path(target_dir).resolve())]


def convert_checkpoint(run_dir: Path | str, out_dir: Path | str, *, step: int | None = None,
                       python: str | None = None, runner=subprocess.run) -> Path:
    """Merge a run's checkpoint into `out_dir` (a Hugging Face model directory) and return it."""
    actor = actor_checkpoint_dir(run_dir, step)
    out = Path(out_dir)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    argv = merge_command(actor, tmp, python=python)
    proc = runner(argv)
    if proc.returncode != 0:
        raise RuntimeError(f"verl model merger failed ({proc.returncode}): {shlex.join(argv)}")
    if not (tmp / "config.json").is_file():
        raise RuntimeError(f"verl model merger wrote no config.json into {tmp}: {shlex.join(argv)}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return out
