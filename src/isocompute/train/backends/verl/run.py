"""The verl backend's entry point, called by the train stage through the backend
registry: one grid cell = one `python -m verl.trainer.main_ppo` session, resumed
from the run's last checkpoint and checked to reach M_max.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from isocompute import atomic
from isocompute.errors import InputError
from isocompute.grading import TooManyTimeouts
from isocompute.train.backends import register_backend
from isocompute.train.backends.verl.dumps import annotate_dumps
from isocompute.train.backends.verl.eval_sets import set_copy, split_dumps, write_set_copies
from isocompute.train.backends.verl.files import VerlRunFiles, latest_checkpoint_step
from isocompute.train.backends.verl.limits import check_batch_capacity, check_supported, dropped_prompts
from isocompute.train.backends.verl.overrides import training_engine, verl_command
from isocompute.train.backends.verl.pass_rates import PassRateRecorder, problem_lookup
from isocompute.train.backends.verl.resume import dump_is_complete, merge_metrics, prepare_run_dir, prune_checkpoints
from isocompute.train.backends.verl.timeouts import first_over
from isocompute.train.identity import training_identity
from isocompute.train.recipe import cell_recipe
from isocompute.train.run_logs import read_jsonl
from isocompute.train.tracking import prepare as prepare_tracking, tracking_of

log = logging.getLogger(__name__)

POLL_S = 30.0  # how often run_verl checks verl's step metrics and turns finished rollout dumps into pass rates
STOP_S = 120.0  # how long verl gets to shut Ray down when a step timed out too often


def run_identity(cfg: dict, cell, paths) -> dict:
    """What a run's checkpoints depend on (the recipe, the data, the model, the engine); not M_max."""
    engine = training_engine(cfg)
    return training_identity(cfg, cell, paths, backend="verl", verl=engine["verl"], gpus=engine["train"]["gpus"])


def check_split_size(train_file: Path, B_p: int, dropped: int = 0) -> int:
    """Training problems verl keeps (the split's, less the overlong prompts it drops), at least B_p."""
    import pyarrow.parquet as pq

    rows = pq.ParquetFile(train_file).metadata.num_rows - dropped
    if rows < B_p:
        raise InputError(f"{train_file}: {rows} training problems verl keeps ({dropped} overlong dropped), fewer "
                         f"than B_p = {B_p} (verl drops incomplete batches, so no step could run); shrink the "
                         "grid's B_p")
    return rows


def _check_inputs(cfg: dict, cell, paths, files: VerlRunFiles) -> tuple[int, dict, dict]:
    """What verl is given, checked before it starts: the prompts it drops as overlong, a
    split that fills B_p, the evaluation sets' copies and one validation batch that fits.
    Returns (training problems kept, dropped prompts, the validated problem counts)."""
    v = cfg["cluster"]["verl"]
    dropped = dropped_prompts({"train": paths.train_file, "val": paths.val_file}, paths.model,
                              v["max_prompt_length"], v["max_dropped_prompt_share"])
    log.info("overlong prompts verl drops (> %d tokens): %s", v["max_prompt_length"],
             ", ".join(f"{part} {d['dropped']} of {d['prompts']}" for part, d in dropped.items()))
    train_rows = check_split_size(Path(paths.train_file), cell.B_p, dropped["train"]["dropped"])
    # verl validates the own split and every extra evaluation set as one batch.
    set_sizes = write_set_copies(paths, files)
    recorded = {"val_problems": dropped["val"]["prompts"] - dropped["val"]["dropped"],
                "eval_set_problems": validated_set_problems(paths, files, v["max_prompt_length"])}
    check_batch_capacity(cfg, [cell], val_problems=dropped["val"]["prompts"] - dropped["val"]["dropped"]
                         + sum(set_sizes.values()))
    return train_rows, dropped, recorded


def _finish_session(cfg: dict, cell, paths, files: VerlRunFiles, target: int, keep: int) -> int:
    """After a session that exited cleanly: the run reached `target` with every validation dump
    (else RuntimeError), old checkpoints pruned, the dumps split by set and annotated.
    Returns the number of annotated dumps."""
    missing = [s for s in cell_recipe(cfg, cell).eval_steps
               if s <= target and not dump_is_complete(files.generations / f"{s}.jsonl")]
    last = latest_checkpoint_step(files.checkpoints)
    if last != target or missing:
        goal = f"M_max = {cell.M_max}" if target == cell.M_max else f"the rung's step {target}"
        raise RuntimeError(f"verl finished without reaching {goal} (last checkpoint {last}, "
                           f"missing validation dumps for steps {missing[:5]}); see {files.session_log}")
    prune_checkpoints(files.checkpoints, keep)  # a finished run holds only what resuming to a larger C_max needs
    split_dumps(files.generations, [name for name, _ in paths.eval_sets])
    annotated = annotate_dumps(files.generations, paths.model)
    for name, _ in paths.eval_sets:
        annotated += annotate_dumps(files.set_generations(name), paths.model)
    return annotated


@register_backend("verl")
def run_verl(cfg: dict, cell, paths, stop_at_step: int | None = None, **hooks) -> dict:
    """Train one cell with verl to M_max steps (or to `stop_at_step`, a rung of an adaptive
    sweep, checkpointed there), resuming from the last checkpoint.

    Owns the files around the subprocess: keeps the metrics of earlier sessions
    (verl's file logger truncates its file on start), turns rollout dumps into
    pass rates while verl runs, stops verl at the first step whose share of
    timed-out rewards (counted into verl's step metrics by the project's trainer
    mode) is above grading.max_timeout_share, failing the job as the local
    backend does, and annotates the validation dumps at the end. Returns the
    run summary that the train stage writes into run.json.
    """
    check_supported(cfg)
    prepare_tracking(tracking_of(cfg, cell))  # here, not in verl's Ray worker once the model is loaded
    files = VerlRunFiles(Path(paths.run_dir).resolve())
    train_rows, dropped, recorded = _check_inputs(cfg, cell, paths, files)
    keep = cfg["cluster"]["verl"]["max_checkpoints"]
    target = cell.M_max if stop_at_step is None else stop_at_step       # checked by train_run
    state = prepare_run_dir(files, run_identity(cfg, cell, paths), cell.M_max, keep=keep)
    limit, run = cfg["grading"]["max_timeout_share"], f"{cell.split} {cell.name}"
    refused = first_over(read_jsonl(files.metrics), limit, run)  # kept by the last checkpoint
    if refused is not None:
        raise TooManyTimeouts(f"{refused}; the last checkpoint holds that step: raise the share to keep it, "
                              f"or remove {files.checkpoints} to retrain the run")
    if state.step is not None and state.step >= target:
        log.info("verl %s %s: already at step %d (asked for %d)", cell.split, cell.name, state.step, target)
        return {"steps": state.step, "train_problems": train_rows, "dropped_prompts": dropped,
                "resumed_from": state.step, **recorded, "eval_steps": eval_steps_to(cfg, cell, state.step)}
    command = verl_command(cfg, cell, paths, stop_at_step=stop_at_step)
    log.info("verl %s bp%d_n%d: %s from step %s\n%s", cell.split, cell.B_p, cell.n,
             "resuming" if state.step is not None else "starting", state.step or 0, command.shell())
    (files.session_dir / "command.sh").write_text(command.shell() + "\n")
    env = {**os.environ, **command.env}
    recorder = None
    if cfg["cluster"]["verl"]["train_pass_rates"]:
        recorder = PassRateRecorder(files, problem_lookup(Path(paths.train_file), paths.model))
    with open(files.session_log, "ab") as out:
        proc = subprocess.Popen(command.argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                cwd=str(files.session_dir))
        refused = watch(proc, files, recorder, limit, run)
    if recorder is not None:
        # After a crash the newest dump may be half-written: it is left for the next session.
        recorder.collect(final=proc.returncode == 0)
    session = read_jsonl(files.session_metrics)
    merged = merge_metrics(read_jsonl(files.metrics), session, state.step)
    atomic.write_jsonl(files.metrics, merged)
    files.session_metrics.unlink(missing_ok=True)
    refused = refused or first_over(session, limit, run)
    if refused is not None:
        raise refused
    if proc.returncode != 0:
        raise RuntimeError(f"verl exited with status {proc.returncode} (log: {files.session_log}); "
                           "re-running the rule resumes from the last checkpoint")
    annotated = _finish_session(cfg, cell, paths, files, target, keep)
    return {"steps": target, "train_problems": train_rows, "dropped_prompts": dropped, "resumed_from": state.step,
            "verl_command": command.shell(), "dumps_annotated": annotated, **recorded,
            "eval_steps": eval_steps_to(cfg, cell, target)}


def eval_steps_to(cfg: dict, cell, step: int) -> list[int]:
    """The recipe's evaluation steps up to `step`: what run.json records for scoring to check."""
    return [int(s) for s in cell_recipe(cfg, cell).eval_steps if s <= step]


def validated_set_problems(paths, files, max_prompt_length: int) -> dict[str, int]:
    """Problems verl validates of each extra evaluation set (its copy less the overlong prompts
    verl drops), recorded in run.json for scoring to check each dump against."""
    if not paths.eval_sets:
        return {}
    counted = dropped_prompts({name: set_copy(files, name) for name, _ in paths.eval_sets}, paths.model,
                              max_prompt_length, 1.0)
    return {name: d["prompts"] - d["dropped"] for name, d in counted.items()}


def watch(proc, files: VerlRunFiles, recorder: PassRateRecorder | None, limit: float,
          run: str) -> TooManyTimeouts | None:
    """Wait for verl, every POLL_S checking the steps its file logger wrote and reading finished
    rollout dumps; the error of a step above the share, verl stopped (stopped too when the job
    is interrupted), or None once verl exits."""
    try:
        while True:
            try:
                proc.wait(timeout=POLL_S)
                return None
            except subprocess.TimeoutExpired:
                pass
            if recorder is not None:
                recorder.collect()
            refused = first_over(read_jsonl(files.session_metrics), limit, run)
            if refused is not None:
                stop(proc)
                return refused
    except BaseException:
        stop(proc)
        raise


def stop(proc) -> None:
    """End verl's session: SIGTERM (its Ray driver shuts its local cluster down), then SIGKILL."""
    proc.terminate()
    try:
        proc.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
