"""Resuming a verl run: how the run folder stands before a session (the last
checkpoint, whether to validate first), and the logs cut back to that
checkpoint so that a resumed run's records equal an uninterrupted run's.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from isocompute import atomic
from isocompute.train.backends.verl.files import VerlRunFiles, latest_checkpoint_step
from isocompute.train.identity import config_hash
from isocompute.train.run_logs import read_jsonl, reset_logs

log = logging.getLogger(__name__)

IDENTITY_FILE = "isocompute_identity.json"  # the run identity stamped beside verl's checkpoints


@dataclass(frozen=True)
class ResumeState:
    step: int | None          # last complete checkpoint, None for a fresh start
    validate_first: bool      # run verl's val_before_train


def dump_is_complete(path: Path) -> bool:
    """A validation dump verl finished writing: every line is a JSON object."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    with open(path) as fh:
        for line in fh:
            try:
                if not isinstance(json.loads(line), dict):
                    return False
            except json.JSONDecodeError:
                return False
    return True


def resume_state(files: VerlRunFiles, eval_steps=None) -> ResumeState:
    """How the next session starts: from the last checkpoint, validating first unless
    that step's dump and metrics survived, or unless (given the recipe's `eval_steps`)
    the checkpoint is not a validation step (a rung's stop step of an adaptive sweep)."""
    step = latest_checkpoint_step(files.checkpoints)
    if step is None:
        return ResumeState(None, True)
    if eval_steps is not None and step not in {int(s) for s in eval_steps}:
        return ResumeState(step, False)
    evaluated = dump_is_complete(files.generations / f"{step}.jsonl") and any(
        int(r.get("step", -1)) == step for r in read_jsonl(files.metrics))
    return ResumeState(step, not evaluated)


def merge_metrics(previous: list[dict], session: list[dict], resume_step: int | None) -> list[dict]:
    """One record per step: earlier sessions' records up to the resume step, then this session's.

    A resumed session re-runs the steps after its checkpoint, so earlier
    records beyond it are replaced; records of the same step are merged
    (earlier keys kept, this session's added).
    """
    by_step: dict[int, dict] = {}
    for rec in previous:
        step = int(rec["step"])
        if resume_step is not None and step <= resume_step:
            by_step.setdefault(step, {}).update(rec.get("data", {}))
    for rec in session:
        step = int(rec["step"])
        data = rec.get("data", {})
        if step in by_step:
            by_step[step] = {**data, **by_step[step]}
        else:
            by_step[step] = dict(data)
    return [{"step": s, "data": by_step[s]} for s in sorted(by_step)]


def prepare_run_dir(files: VerlRunFiles, identity: dict, max_steps: int | None = None,
                    keep: int | None = None) -> ResumeState:
    """Make the run folder ready for a verl session and say how it resumes.

    A folder trained with another recipe, or beyond this run's M_max (a lowered
    budget), starts over; otherwise logs beyond the last checkpoint are dropped
    (verl redoes those steps), the metrics of the previous session are folded
    into metrics.jsonl, and with `keep` only the last `keep` checkpoints stay.
    """
    digest = config_hash(identity)
    stamp = files.checkpoints / IDENTITY_FILE
    other_recipe = stamp.is_file() and json.loads(stamp.read_text()).get("hash") != digest
    last = latest_checkpoint_step(files.checkpoints)
    beyond = max_steps is not None and last is not None and last > max_steps
    if other_recipe or beyond:
        log.warning("%s: %s; starting the run over", files.run_dir,
                    "trained with another config" if other_recipe else f"checkpoint {last} is beyond M_max")
        for p in (files.checkpoints, files.session_dir):
            shutil.rmtree(p, ignore_errors=True)
        reset_logs(files, None)
    files.checkpoints.mkdir(parents=True, exist_ok=True)
    atomic.write_json(stamp, {"hash": digest, "identity": identity})
    step = latest_checkpoint_step(files.checkpoints)
    if keep is not None:
        prune_checkpoints(files.checkpoints, keep)
    cut_logs(files, step)
    drop_unread_rollouts(files, step)
    files.session_dir.mkdir(parents=True, exist_ok=True)
    return resume_state(files)


def prune_checkpoints(checkpoints: Path, keep: int) -> list[int]:
    """Remove every checkpoint folder but the last `keep` complete ones; returns the removed steps.

    verl's own rotation (trainer.max_actor_ckpt_to_keep) only knows the checkpoints
    its session saved, so each earlier SLURM attempt of a run would leave its last
    one behind (~90 GB at 7B), and a save cut off by the time limit leaves a partial
    folder beyond verl's latest_checkpointed_iteration.txt. The folders of steps at
    or before the latest complete one are complete: verl marks a step after saving it.
    """
    checkpoints = Path(checkpoints)
    last = latest_checkpoint_step(checkpoints)
    folders = {int(p.name.removeprefix("global_step_")): p for p in checkpoints.glob("global_step_*")
               if p.is_dir() and p.name.removeprefix("global_step_").isdigit()}
    complete = sorted(s for s, p in folders.items() if last is not None and s <= last and (p / "actor").is_dir())
    kept = set(complete[-max(1, int(keep)):])
    removed = sorted(s for s in folders if s not in kept)
    for s in removed:
        shutil.rmtree(folders[s], ignore_errors=True)
    if removed:
        log.info("%s: removed checkpoints of steps %s (keeping %s)", checkpoints, removed, sorted(kept))
    return removed


def cut_logs(files: VerlRunFiles, step: int | None) -> None:
    """Cut metrics, pass rates and validation dumps back to checkpoint `step` (None: remove them),
    folding a killed session's metrics into metrics.jsonl first (verl truncates that log on start)."""
    previous = merge_metrics(read_jsonl(files.metrics), read_jsonl(files.session_metrics), sys.maxsize)
    if step is None:
        reset_logs(files, None)
    else:
        atomic.write_jsonl(files.metrics, [r for r in previous if int(r["step"]) <= step])
        atomic.write_jsonl(files.pass_rates, [r for r in read_jsonl(files.pass_rates) if int(r["step"]) <= step])
        # A dump verl was writing when it was killed is incomplete even at or before the checkpoint.
        for dump in files.generations.glob("*.jsonl") if files.generations.is_dir() else []:
            if dump.stem.isdigit() and (int(dump.stem) > step or not dump_is_complete(dump)):
                dump.unlink()
    files.session_metrics.unlink(missing_ok=True)


def drop_unread_rollouts(files: VerlRunFiles, step: int | None) -> None:
    """Rollout dumps a killed session left unread: keep the complete ones up to the
    checkpoint (the next step's file exists) for the recorder, drop the rest."""
    dumps = {p: int(p.stem) if p.stem.isdigit() else -1
             for p in (files.rollouts.glob("*.jsonl") if files.rollouts.is_dir() else [])}
    present = set(dumps.values())
    for dump, s in dumps.items():
        if step is None or s > step or s + 1 not in present:
            dump.unlink()
