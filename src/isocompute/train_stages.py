"""CLI subcommands for the training and scoring stages of the DAG (one per
Snakemake rule): train (one grid cell) -> score (its evaluation table).

`score` re-grades the raw validation dumps with the project grader, so a
changed grader or eval.k re-runs scoring only, never training.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from isocompute.errors import InputError
from isocompute.layout import RunFiles
from isocompute.stages import (add_stage_parser, config_from_params, progress, provenance, set_threads,
                               write_json_atomic)

log = logging.getLogger("isocompute")


def cmd_train(args) -> int:
    from isocompute.grid import Cell
    from isocompute.layout import RunPaths
    from isocompute.train.backends import train_run

    cfg = config_from_params(args.params)
    set_threads(args.threads)
    for name in ("train_file", "val_file"):
        if not Path(getattr(args, name)).is_file():
            raise InputError(f"--{name.replace('_', '-')}: split file not found: {getattr(args, name)}")
    cell = Cell(args.split, args.bp, args.n, args.max_steps, args.max_steps * args.bp * args.n)
    paths = RunPaths(Path(args.run_dir), Path(args.train_file), Path(args.val_file), args.model)
    start = time.perf_counter()
    summary = train_run(cfg, cell, paths, progress_factory=progress)
    # The completion marker goes last: Snakemake sees the run as done only now.
    write_json_atomic(provenance(cfg, **summary, model=args.model, train_file=args.train_file,
                                 val_file=args.val_file, seconds=time.perf_counter() - start), paths.marker)
    log.info("train %s bp%d_n%d: %d steps, %.0f s", cell.split, cell.B_p, cell.n, summary.get("steps", -1),
             time.perf_counter() - start)
    return 0


def read_generations(directory: Path):
    """All validation dumps of a run as one frame (verl's format; extra keys kept)."""
    import pandas as pd

    files = sorted(Path(directory).glob("*.jsonl"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1)
    files = [p for p in files if p.stem.isdigit()]
    if not files:
        raise InputError(f"{directory}: no validation dumps (<step>.jsonl); did the run evaluate?")
    frames = []
    for path in files:
        try:
            df = pd.read_json(path, lines=True, dtype=False)
        except ValueError as exc:
            raise InputError(f"{path}: not JSON lines ({exc})") from None
        missing = {"output", "gts"} - set(df.columns)
        if missing:
            raise InputError(f"{path}: missing key(s) {sorted(missing)}; expected verl's generation dump format")
        if "step" not in df.columns:
            df["step"] = int(path.stem)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def read_metrics(path: Path) -> list[dict]:
    if not Path(path).is_file():
        return []
    out = []
    for line in Path(path).read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def cmd_score(args) -> int:
    from isocompute.grading import GradeCache, grade_many
    from isocompute.metrics import cumulative_tokens, eval_table
    from isocompute.data.schema import write_parquet_atomic

    cfg = config_from_params(args.params)
    run_dir = Path(args.run_dir)
    files = RunFiles(run_dir)
    gens = read_generations(files.generations)
    key = gens["problem_id"] if "problem_id" in gens.columns else None
    if key is None or key.isna().any():
        if "input" not in gens.columns:
            raise InputError(f"{run_dir}/generations: neither problem_id nor input to group samples by problem")
        key = gens["problem_id"].fillna(gens["input"]) if key is not None else gens["input"]
    cache_path = run_dir / "grades_cache.json"
    cache = GradeCache.load(cache_path)
    before = len(cache)
    outputs = gens["output"].fillna("").astype(str).tolist()
    truths = gens["gts"].astype(str).tolist()
    correct = grade_many(outputs, truths, cache=cache)
    if len(cache) != before:
        cache.save(cache_path)
    samples = gens.assign(problem=key.astype(str), correct=correct)
    keep = [c for c in ("step", "problem", "correct", "sample", "n_tokens") if c in samples.columns]
    tokens = cumulative_tokens(read_metrics(files.metrics), args.bp * args.n)
    k = cfg["eval"]["k"]
    table = eval_table(samples[keep], k, B_p=args.bp, n=args.n, tokens=tokens, split=args.split,
                       run=f"bp{args.bp}_n{args.n}")
    write_parquet_atomic(table, args.out)
    dumped = gens["score"].astype(float).to_numpy() if "score" in gens.columns else None
    if dumped is not None and len(dumped) and (dumped > 0.5).astype(int).tolist() != [int(c) for c in correct]:
        log.info("score: the project grader disagrees with %d dumped scores (re-graded values are used)",
                 int(sum((d > 0.5) != c for d, c in zip(dumped, correct))))
    last = table.iloc[-1]
    log.info("score %s bp%d_n%d: %d eval steps, %d samples (%d newly graded); avg@%d %.3f -> %.3f",
             args.split, args.bp, args.n, len(table), len(gens), len(cache) - before, k,
             table[f"avg@{k}"].iloc[0], last[f"avg@{k}"])
    return 0


def register(sub) -> None:
    def add(name, func, help_):
        return add_stage_parser(sub, name, func, help_)

    p = add("train", cmd_train, "Train one (B_p, n) grid cell with GRPO (local or verl backend), resumably.")
    p.add_argument("--split", required=True)
    p.add_argument("--bp", type=int, required=True, help="B_p, problems per step")
    p.add_argument("--n", type=int, required=True, help="rollouts per problem")
    p.add_argument("--max-steps", type=int, required=True, help="M_max = C_max // (B_p * n)")
    p.add_argument("--train-file", required=True)
    p.add_argument("--val-file", required=True)
    p.add_argument("--model", required=True, help="HF model directory or hub name of the base policy")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--threads", type=int, default=1)
    p = add("score", cmd_score, "Re-grade a run's validation dumps into its evaluation table (evals.parquet).")
    p.add_argument("--split", required=True)
    p.add_argument("--bp", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--out", required=True)
