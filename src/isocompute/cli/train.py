"""Subcommand of the training stage (rules/train.smk): `train` runs one
(split, B_p, n) grid cell with the configured backend, resumably, and writes
its completion marker run.json last; with `--rung R --stop-at-step S` (an
adaptive sweep's rung, rules/sweep.smk) it stops at step S and writes the rung
marker instead."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import time
from pathlib import Path

from isocompute import atomic
from isocompute.cli.common import add_stage_parser, config_from_params, progress, provenance, set_threads
from isocompute.errors import InputError

log = logging.getLogger("isocompute")


def cmd_train(args) -> int:
    from isocompute.grid import Cell
    from isocompute.layout import RunPaths
    from isocompute.train.backends import train_run

    for name in ("train_file", "val_file"):
        if not Path(getattr(args, name)).is_file():
            raise InputError(f"--{name.replace('_', '-')}: split file not found: {getattr(args, name)}")
    if (args.rung is None) != (args.stop_at_step is None):
        raise InputError("--rung and --stop-at-step go together (a run trained to a rung of an adaptive sweep)")
    options = Path(args.options).read_text() if args.options else None
    cfg = config_from_params(args.params, options)
    if cfg["train"]["backend"] == "local":
        # verl's threads are its Ray CPUs (cluster.train.cpus_per_gpu); an OMP_NUM_THREADS
        # set here would be inherited by every one of its workers.
        set_threads(args.threads)
    # The cell as the Snakefile planned it: its budget is the schedule's C_max its rule passed.
    cell = Cell(args.split, args.bp, args.n, args.max_steps, int(cfg["schedule"]["C_max"]), args.replicate,
                args.variant)
    eval_sets = tuple(eval_set_arg(spec) for spec in args.eval_set)
    paths = RunPaths(Path(args.run_dir), Path(args.train_file), Path(args.val_file), args.model, eval_sets)
    marker, rung = paths.marker, {}
    if args.rung is not None:
        marker, rung = paths.rung(args.rung).marker, {"rung": args.rung}
        marker.unlink(missing_ok=True)
    start = time.perf_counter()
    with run_lock(paths.run_dir):
        summary = train_run(cfg, cell, paths, stop_at_step=args.stop_at_step, progress_factory=progress,
                            **fault_hooks(cell))
    if args.variant:
        summary = {**summary, "variant": args.variant}
    # The marker goes last: Snakemake sees the run (or the rung) as done only now.
    atomic.write_json(marker, provenance(cfg, **summary, **rung, model=args.model, train_file=args.train_file,
                                         val_file=args.val_file, seconds=time.perf_counter() - start))
    log.info("train %s bp%d_n%d: %d steps, %.0f s", cell.split, cell.B_p, cell.n, summary.get("steps", -1),
             time.perf_counter() - start)
    return 0


LOCK_FILE = ".train.lock"
# The lock's descriptors held by this process. A forked child (a grader worker) would share the
# lock and keep it after the trainer died, so every fork closes them in the child.
_HELD_LOCKS: set[int] = set()


def _close_held_locks() -> None:
    for fd in list(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_close_held_locks)


@contextlib.contextmanager
def run_lock(run_dir: Path):
    """Hold the run folder's lock while training it: a second trainer of the same run (a second
    Snakemake after `--unlock` on a live run) stops with one line instead of writing into the
    first one's checkpoints. The lock is the kernel's (flock), so a killed trainer leaves none
    behind; on a file system without locks it warns and trains unlocked."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / LOCK_FILE, "a+") as fh:
        locked = True
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise InputError(f"{run_dir}: another process (pid {holder}) is training this run; two trainers in "
                             "one run folder would corrupt it (after snakemake --unlock, make sure the first "
                             "Snakemake and its jobs are gone)") from None
        except OSError as exc:
            log.warning("%s: cannot lock the run folder (%s); training it unlocked", run_dir, exc)
            locked = False
        if locked:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}@{os.uname().nodename}\n")
            fh.flush()
            _HELD_LOCKS.add(fh.fileno())
        try:
            yield
        finally:
            if locked:
                _HELD_LOCKS.discard(fh.fileno())
                fcntl.flock(fh, fcntl.LOCK_UN)


def eval_set_arg(spec: str) -> tuple[str, Path]:
    """--eval-set NAME=FILE as (name, file), the file checked."""
    name, sep, path = spec.partition("=")
    if not sep or not name:
        raise InputError(f"--eval-set: expected NAME=FILE, got {spec!r}")
    if not Path(path).is_file():
        raise InputError(f"--eval-set {name}: evaluation set file not found: {path}")
    return name, Path(path)


# Fault injection for the end-to-end tests: ISOCOMPUTE_FAULT_AT=<split>/<run>:<step> kills
# that run's train job (SIGKILL: no cleanup, like a lost node) after the step's records and
# before its checkpoint, the worst moment to die. Local backend only.
FAULT_ENV = "ISOCOMPUTE_FAULT_AT"


def fault_hooks(cell) -> dict:
    where, _, step = os.environ.get(FAULT_ENV, "").rpartition(":")
    if where != f"{cell.split}/{cell.name}" or not step.isdigit():
        return {}

    def kill_at(at: int) -> None:
        if at == int(step):
            log.warning("%s: killing this job after step %d", FAULT_ENV, at)
            os.kill(os.getpid(), signal.SIGKILL)

    return {"on_step_end": kill_at}


def cmd_check_grid(args) -> int:
    """Every split the grid trains on has at least its largest B_p of training problems."""
    import pyarrow.parquet as pq

    from isocompute.grid import check_split_sizes, grid_cells, max_bp_per_split, variant_cells

    cfg = config_from_params(args.params)
    sizes = {}
    for pair in args.train_files:
        split, _, path = pair.partition("=")
        if not Path(path).is_file():
            raise InputError(f"--train-files: split file not found: {path}")
        sizes[split] = pq.ParquetFile(path).metadata.num_rows
    max_bp = max_bp_per_split(grid_cells(cfg))
    check_split_sizes(max_bp, sizes)
    # The grid's check is given no variants (the variants' check is: rules/variants.smk).
    variants = variant_cells(cfg) if "variants" in cfg else []
    for name in sorted({c.variant for c in variants}):
        check_split_sizes(max_bp_per_split([c for c in variants if c.variant == name]), sizes,
                          key=f"variants.{name}.cells (split {{split}})")
    max_bp = max_bp_per_split(grid_cells(cfg) + variants)
    atomic.write_json(args.out, provenance(cfg, train_problems=sizes, max_B_p=max_bp))
    log.info("grid fits the splits: %s", ", ".join(f"{s} B_p <= {b} of {sizes.get(s)}" for s, b in max_bp.items()))
    return 0


def cmd_train_options(args) -> int:
    """The train jobs' settings that are not their params, checked against the schema first."""
    config_from_params(args.params)
    atomic.write_json(args.out, json.loads(args.params))
    return 0


def add_cell_arguments(p) -> None:
    p.add_argument("--split", required=True)
    p.add_argument("--bp", type=int, required=True, help="B_p, problems per step")
    p.add_argument("--n", type=int, required=True, help="rollouts per problem")
    p.add_argument("--replicate", type=int, default=0, help="seed replicate (trains with seed + replicate)")


def register(sub) -> None:
    p = add_stage_parser(sub, "check-grid", cmd_check_grid,
                         "Check that every split has at least its grid's largest B_p of training problems.")
    p.add_argument("--train-files", nargs="+", required=True, metavar="SPLIT=PATH")
    p.add_argument("--out", required=True)
    p = add_stage_parser(sub, "train-options", cmd_train_options,
                         "Write the train jobs' settings that are not their params (tracking, CPUs, checkpoint "
                         "retention).")
    p.add_argument("--out", required=True)
    p = add_stage_parser(sub, "train", cmd_train,
                         "Train one (B_p, n) grid cell with GRPO (local or verl backend), resumably.")
    add_cell_arguments(p)
    p.add_argument("--options", default=None, metavar="FILE",
                   help="JSON file of config keys the job reads that are not its --params (tracking, CPUs, "
                        "checkpoint retention; the train_options rule writes it)")
    p.add_argument("--max-steps", type=int, required=True, help="M_max = C_max // (B_p * n)")
    p.add_argument("--stop-at-step", type=int, default=None, metavar="S",
                   help="adaptive sweep: stop (checkpointed) at step S <= M_max of the full run's recipe, "
                        "resumable to M_max; with --rung")
    p.add_argument("--rung", type=int, default=None, metavar="R",
                   help="adaptive sweep: the rung S belongs to; writes rungs/R/rung.json, not run.json")
    p.add_argument("--train-file", required=True)
    p.add_argument("--val-file", required=True)
    p.add_argument("--eval-set", action="append", default=[], metavar="NAME=FILE",
                   help="an extra evaluation set, validated at the same steps (repeatable; config eval.extra_sets)")
    p.add_argument("--model", required=True, help="HF model directory or hub name of the base policy")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--variant", default="", help="the recipe variant the run belongs to (its --params carry the "
                                                  "variant's recipe); names the run in verl's loggers")
