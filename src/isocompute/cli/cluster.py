"""Cluster tools (no rule of their own; they work outside Snakemake):

  isocompute check-config CONFIG [CONFIG ...]             check a study config as the pipeline will, with paths
  isocompute doctor [CONFIG] [--skip-gpu]                 preflight of a login or GPU node: a checklist with fixes
  isocompute plan CONFIG                                  runs, rollouts and GPU-hours of a study, full grid and adaptive
  isocompute verl-command CONFIG --split S --bp B --n N   the exact verl command the train rule runs
  isocompute verl-merge --run-dir DIR --out DIR           a run's checkpoint as a Hugging Face model

Paths follow `isocompute.layout`, relative to the directory the command runs in
(the repository root, like Snakemake).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from isocompute.errors import InputError

log = logging.getLogger("isocompute")

EMBEDDED_CONFIG = Path("config/config.yaml")    # what the Snakefile reads when no --configfile is given


def cmd_check_config(args) -> int:
    from isocompute.config import check_config, deep_update, read_config_file, settings_differing
    from isocompute.train.backends import check_study

    merged: dict = {}
    for path in args.config:              # in order, a later file's keys over an earlier one's
        merged = deep_update(merged, read_config_file(path))
    cfg = check_config(merged)
    cells = check_study(cfg)
    names = " + ".join(args.config)
    print(f"{names}: ok (experiment {cfg['experiment']}, {len(cells)} training runs)")
    differing = settings_differing(cfg, check_config({}))
    print(f"{len(differing)} effective values differ from the schema's defaults (the paper's scale); "
          "every other key takes its default:")
    for key, value in differing:
        print(f"  {key}: {json.dumps(value) if isinstance(value, str) else value}")
    if not cells:
        print("warning: the grid is empty (no grid.<split> section), so this study trains no run")
    if len(args.config) == 1 and Path(args.config[0]).resolve() != EMBEDDED_CONFIG.resolve():
        print(f"A --configfile stands alone. To change a few keys of the embedded study instead, "
              f"name it first: isocompute check-config {EMBEDDED_CONFIG} {args.config[0]}")
    return 0


def cmd_doctor(args) -> int:
    from isocompute.cluster.doctor import doctor
    from isocompute.config import load_config

    cfg = load_config(args.config) if args.config else None
    text, status = doctor(cfg, skip_gpu=args.skip_gpu)
    print(f"isocompute doctor{' ' + args.config if args.config else ''}: the pinned GPU stack of envs/verl.yaml, "
          f"the SLURM profile of slurm/config.yaml")
    print(text)
    return status


def cmd_plan(args) -> int:
    from isocompute.cluster.plan_report import format_plan
    from isocompute.config import load_config

    if args.adaptive_seeds is not None and args.adaptive_seeds < 1:
        raise InputError(f"--adaptive-seeds: expected an integer >= 1, got {args.adaptive_seeds}")
    cfg = load_config(args.config)
    adaptive = None if args.no_adaptive else _cached_adaptive_estimate(cfg, args.adaptive_seeds)
    print(format_plan(cfg, adaptive))
    return 0


def _cached_adaptive_estimate(cfg: dict, seeds: int | None) -> dict:
    """`adaptive_cost.adaptive_estimate`, kept under $XDG_CACHE_HOME/isocompute/plan (~/.cache) by its
    inputs and the rule's code, so that a plan is replayed once (seconds to a minute)."""
    import os
    from pathlib import Path

    import pandas as pd

    from isocompute import atomic
    from isocompute.cluster.adaptive_cost import PLAN_REPLAY_SEEDS, adaptive_cache_key, adaptive_estimate

    seeds = PLAN_REPLAY_SEEDS if seeds is None else seeds
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "isocompute" / "plan"
    path = root / f"adaptive-{adaptive_cache_key(cfg, seeds)}.json"
    try:
        cached = json.loads(path.read_text())
        return {k: pd.DataFrame(v) for k, v in cached.items()}
    except (OSError, ValueError):
        pass
    from isocompute.cli.common import progress

    estimate = adaptive_estimate(cfg, seeds, progress=lambda total: progress(
        total=total, desc="plan: replaying the adaptive sweep",
        unit="replay"))
    try:
        atomic.write_json(path, {k: v.to_dict(orient="records") for k, v in estimate.items()})
    except OSError as exc:   # a read-only home still gets its plan
        log.warning("plan: cannot cache the adaptive estimate in %s (%s)", path, exc)
    return estimate


def cmd_verl_command(args) -> int:
    """The command a cell's train job runs: built from the job's own config (its params and
    options, isocompute.jobs), not from the full config, so the two cannot differ."""
    from isocompute import jobs
    from isocompute.cli.common import config_from_params
    from isocompute.config import load_config
    from isocompute.grid import find_cell, grid_cells, variant_cells
    from isocompute.layout import run_paths
    from isocompute.train.backends import stop_step_within
    from isocompute.train.backends.verl import verl_command

    cfg = load_config(args.config)
    cells = variant_cells(cfg) if args.variant else grid_cells(cfg)
    cell = find_cell(cells, args.split, args.bp, args.n, variant=args.variant)
    # The job's own path: its params and options as JSON, read as the train job reads them.
    job = config_from_params(jobs.as_json(jobs.train_params(cfg, cell)), jobs.as_json(jobs.train_options(cfg)))
    stop = None if args.stop_at_step is None else stop_step_within(args.stop_at_step, cell.M_max)
    print(verl_command(job, cell, run_paths(cfg, cell), stop_at_step=stop).shell())
    return 0


def cmd_verl_merge(args) -> int:
    import shlex

    from isocompute.cluster.checkpoints import actor_checkpoint_dir, convert_checkpoint, merge_command

    if args.print_only:
        print(shlex.join(merge_command(actor_checkpoint_dir(args.run_dir, args.step), args.out)))
        return 0
    out = convert_checkpoint(args.run_dir, args.out, step=args.step)
    print(out)
    return 0


def register(sub) -> None:
    p = sub.add_parser("check-config", help="Check a study config (schema, grid, files) before launching it.",
                       description="Check a config file as `snakemake --configfile` will: YAML syntax and "
                                   "duplicate keys (with the line), the schema, the grid and the files it names. "
                                   "Snakemake's own message for a YAML syntax error names no line; this does.")
    p.add_argument("config", nargs="+", help="config YAML; several are merged in order, as several "
                                             "--configfile files are")
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("doctor", help="Preflight of a login or GPU node before launching: a checklist with fixes.",
                       description="Check this node before a launch: NVIDIA driver and CUDA against the pinned "
                                   "GPU stack (envs/verl.yaml), torch.cuda, vllm, flash-attn, verl, Hydra/antlr, "
                                   "and with a CONFIG its base model and data, the SLURM profile's account and "
                                   "partitions, and free disk for the checkpoints it keeps. Run from the "
                                   "repository root; exits 1 when a check fails.")
    p.add_argument("config", nargs="?", default=None, help="study config, e.g. config/paper/qwen25_7b.yaml")
    p.add_argument("--skip-gpu", action="store_true",
                   help="skip the driver, torch.cuda, vllm and flash-attn checks (a login node without GPUs)")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("plan", help="Training runs per split, rollouts and estimated GPU-hours of a config.",
                       description="Training runs per split, total rollouts and an estimate of GPU-hours "
                                   "(throughput assumptions: config section cluster.throughput).")
    p.add_argument("config", help="config YAML, e.g. config/paper/qwen25_7b.yaml")
    p.add_argument("--no-adaptive", action="store_true",
                   help="leave out the adaptive sweep's expected cost (a replay of its rule on synthetic "
                        "studies shaped like the grid; cached after the first run)")
    p.add_argument("--adaptive-seeds", type=int, default=None, metavar="N",
                   help="synthetic studies per split behind the adaptive estimate (default: 3)")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("verl-command", help="Print the verl training command of one grid cell.",
                       description="Print the exact command line the train rule runs for one grid cell "
                                   "with train.backend verl, in the run folder's current state.")
    p.add_argument("config")
    p.add_argument("--split", required=True)
    p.add_argument("--bp", type=int, required=True, help="B_p, problems per step")
    p.add_argument("--n", type=int, required=True, help="rollouts per problem")
    p.add_argument("--variant", default="", help="a cell of this recipe variant (config `variants`) instead of "
                                                  "the grid's")
    p.add_argument("--stop-at-step", type=int, default=None, metavar="S",
                   help="the command of a rung of an adaptive sweep: stop (checkpointed) at step S")
    p.set_defaults(func=cmd_verl_command)

    p = sub.add_parser("verl-merge", help="Convert a verl run's FSDP checkpoint to a Hugging Face model.",
                       description="Merge checkpoints/global_step_<step>/actor of a run with "
                                   "`python -m verl.model_merger merge --backend fsdp` into OUT.")
    p.add_argument("--run-dir", required=True, help="results/<experiment>/runs/<split>/bp<B_p>_n<n>")
    p.add_argument("--out", required=True, help="target Hugging Face model directory")
    p.add_argument("--step", type=int, default=None, help="checkpoint step (default: the latest)")
    p.add_argument("--print-only", action="store_true", help="print the merge command instead of running it")
    p.set_defaults(func=cmd_verl_merge)

