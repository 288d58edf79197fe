"""Subcommands of the data stages (rules/data.smk), one per rule:
pool -> base-model -> difficulty -> splits -> fig-difficulty.

Rules pass the config sections a stage reads as `--params`, so a changed
value re-runs exactly the stages that read it.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from isocompute import atomic
from isocompute.cli.common import (add_stage_parser, config_from_params, progress, provenance, set_threads,
                                   setup_logging)
from isocompute.errors import InputError

log = logging.getLogger("isocompute")


# --- stages -------------------------------------------------------------------

def cmd_pool(args) -> int:
    from isocompute.data.pool import build_pool

    cfg = config_from_params(args.params)
    pool = build_pool(cfg)
    atomic.write_parquet(args.out, pool)
    atomic.write_json(Path(args.out).with_suffix(".json"), provenance(cfg, problems=len(pool)))
    log.info("pool: %d problems -> %s", len(pool), args.out)
    return 0


def cmd_base_model(args) -> int:
    from isocompute.data.schema import read_problems
    from isocompute.model.embedded import build_embedded_base_model
    from isocompute.model.io import load_policy

    from isocompute.model import shipped

    cfg = config_from_params(args.params)
    out = Path(args.out)
    pool = read_problems(args.pool)
    with atomic.atomic_dir(out) as tmp:
        if shipped.use_shipped(cfg):
            meta = shipped.copy_shipped(tmp)
        else:
            meta = build_embedded_base_model(cfg, pool, tmp, progress_factory=progress)
        atomic.write_json(tmp / "isocompute_provenance.json", provenance(cfg, **meta))
        load_policy(tmp)  # the directory must load before it is published
    if "shipped" in meta:
        log.info("base model: the shipped copy (version %d, sha256 %s, checksums verified; the config's recipe "
                 "is the shipped one's, base_model.shipped auto) -> %s",
                 meta["shipped"]["version"], meta["shipped"]["sha256"][:16], out)
    else:
        log.info("base model: %d parameters, %d pretraining steps in %.0f s -> %s",
                 meta["parameters"], meta["steps"], meta["seconds"], out)
    return 0


def cmd_ship_base_model(args) -> int:
    """Pretrain the embedded model of a config and publish it as the shipped copy."""
    import tempfile

    from isocompute import jobs
    from isocompute.config import check_config, read_config_file
    from isocompute.data.pool import build_pool
    from isocompute.errors import ConfigError
    from isocompute.model import shipped
    from isocompute.model.embedded import build_embedded_base_model
    from isocompute.model.io import load_policy

    full = check_config(read_config_file(args.config))
    if full["base_model"]["source"] != "embedded" or full["pool"]["source"] != "embedded":
        raise ConfigError(f"{args.config}: config keys 'base_model.source' and 'pool.source': expected "
                          f"'embedded' for the shipped base model")
    # The sections the base_model rule passes, so the recipe is the one the stage compares.
    if args.threads:
        full["base_model"]["pretrain_threads"] = args.threads   # not part of the recipe (shipped.NOT_RECIPE_KEYS)
    cfg = config_from_params(jobs.as_json(jobs.stage_params(full, "pool", "base_model")))
    dest = Path(args.out) if args.out else shipped.SHIPPED_DIR
    if args.check:
        expected = shipped.verify(dest)
        if shipped.shipped_recipe(dest) != shipped.recipe(cfg):
            raise InputError(f"{dest / shipped.RECIPE_FILE}: the shipped model's recipe is not {args.config}'s; "
                             f"nothing to compare")
    with tempfile.TemporaryDirectory(prefix="isocompute-ship-") as work:
        model_dir = Path(work) / "model"
        meta = build_embedded_base_model(cfg, build_pool(full), model_dir, progress_factory=progress)
        load_policy(model_dir)
        if args.check:
            differ = shipped.reproduced(dest, model_dir)
            if differ:
                raise InputError(f"{dest / differ[0]}: a fresh pretraining of {args.config}'s recipe does not "
                                 f"reproduce {', '.join(differ)} of the shipped copy: the pretraining code "
                                 f"changed (rebuild: make shipped-model) or this machine's float arithmetic differs")
            log.info("shipped base model %s: a fresh pretraining (%d steps in %.0f s) reproduces every file "
                     "(model.safetensors sha256 %s)", dest, meta["steps"], meta["seconds"],
                     expected["model.safetensors"])
            return 0
        sums = shipped.write_shipped(model_dir, cfg, dest)
    log.info("shipped base model: %d parameters, %d steps in %.0f s, final loss %.4f, model.safetensors "
             "sha256 %s -> %s", meta["parameters"], meta["steps"], meta["seconds"], meta["final_loss"],
             sums["model.safetensors"], dest)
    return 0


def make_sampler(cfg: dict, model_path: str, *, engine_seed: int | None = None):
    """The sampler the config asks for, over the model at `model_path` (a vLLM engine seeded
    with `engine_seed`: vLLM draws without per-request seeds, which would slow it down)."""
    if cfg["sampling"]["backend"] == "vllm":
        from isocompute.cluster.vllm_sampler import VLLMSampler

        return VLLMSampler(model_path, cfg, seed=engine_seed)
    from isocompute.model.io import load_policy, pick_device
    from isocompute.sampling import LocalSampler

    model, tok = load_policy(model_path, device=pick_device(), lean=True)
    return LocalSampler(model, tok, batch_size=cfg["sampling"]["batch_size"])


def cmd_difficulty(args) -> int:
    """One part of the pool's avg@16 sampling (a difficulty_chunk job): its whole chunks' counts."""
    from isocompute.data.difficulty import Draws, chunk_range, chunk_seed, sample_counts
    from isocompute.data.splits import needs_k_samples
    from isocompute.data.schema import read_problems
    from isocompute.model.io import render_prompts
    from isocompute.sampling import SamplingParams

    cfg = config_from_params(args.params)
    set_threads(args.threads)
    if not 0 <= args.part < args.parts:
        raise InputError(f"--part {args.part}: expected 0 <= part < --parts = {args.parts}")
    pool = read_problems(args.pool)
    chunk_size = cfg["sampling"]["chunk_size"]
    chunks = chunk_range(len(pool), chunk_size, args.part, args.parts)
    out = Path(args.out)
    start = time.perf_counter()
    counts = None
    if len(chunks):
        sampler = make_sampler(cfg, args.model, engine_seed=chunk_seed(cfg["seed"], chunks.start))
        draws = Draws(samples=cfg["difficulty"]["samples"], extra_samples_k=cfg["difficulty"]["extremely_hard_samples"],
                      params=SamplingParams.from_config(cfg), seed=cfg["seed"], chunk_size=chunk_size,
                      # The rule passes the mixtures exactly when one needs K samples (jobs.difficulty_params).
                      k_for_all="splits" in cfg and needs_k_samples(cfg))
        counts = sample_counts(pool, sampler, lambda prompts: render_prompts(sampler.tokenizer, prompts), draws,
                               chunk_dir=out.with_name(f".{out.stem}.chunks"), chunks=chunks, progress_factory=progress)
    if counts is None:  # more parts than chunks: this one has none
        import pandas as pd

        counts = pd.DataFrame({c: pd.Series(dtype="int64") for c in ("samples", "correct", "samples_k", "correct_k")})
        counts.insert(0, "problem_id", pd.Series(dtype="str"))
    atomic.write_parquet(out, counts)
    atomic.write_json(out.with_suffix(".json"), provenance(cfg, seconds=time.perf_counter() - start,
                                                          model=args.model, part=args.part, parts=args.parts,
                                                          chunks=[chunks.start, chunks.stop]))
    shutil.rmtree(out.with_name(f".{out.stem}.chunks"), ignore_errors=True)
    log.info("difficulty part %d of %d: chunks %d-%d, %d problems", args.part, args.parts, chunks.start,
             chunks.stop - 1, len(counts))
    return 0


def cmd_difficulty_merge(args) -> int:
    """The difficulty table of the pool from its parts' counts, in pool order."""
    import pandas as pd

    from isocompute.data.difficulty import difficulty_table
    from isocompute.data.schema import read_problems

    cfg = config_from_params(args.params)
    pool = read_problems(args.pool)
    counts = pd.concat([atomic.read_parquet(p) for p in args.parts], ignore_index=True)
    table = difficulty_table(pool, counts)
    out = Path(args.out)
    atomic.write_parquet(out, table)
    seconds = sum(atomic.read_json(Path(p).with_suffix(".json")).get("seconds", 0.0) for p in args.parts)
    atomic.write_json(out.with_suffix(".json"), provenance(cfg, seconds=seconds, parts=len(args.parts)))
    log.info("difficulty: %d problems from %d parts, mean avg@%d %.3f", len(table), len(args.parts),
             int(table["samples"].iloc[0]) if len(table) else 0, table["avg_at_samples"].mean())
    return 0


def cmd_splits(args) -> int:
    from isocompute.data.schema import problem_ids, read_problems
    from isocompute.data.splits import make_splits, split_frame

    cfg = config_from_params(args.params)
    pool = read_problems(args.pool)
    difficulty = atomic.read_parquet(args.difficulty)
    if list(difficulty["problem_id"]) != list(problem_ids(pool)):
        raise InputError(f"{args.difficulty}: problem ids do not match {args.pool}; re-run the difficulty stage")
    out = Path(args.out_dir)
    summary = {}
    for split, parts in make_splits(difficulty, cfg).items():
        for part, idx in parts.items():
            atomic.write_parquet(out / split / f"{part}.parquet", split_frame(pool, difficulty, idx, split))
        summary[split] = {part: int(len(idx)) for part, idx in parts.items()}
        log.info("split %-14s train %5d  val %4d", split, summary[split]["train"], summary[split]["val"])
    atomic.write_json(out / "splits.json", provenance(cfg, sizes=summary))
    return 0


def cmd_fig_difficulty(args) -> int:
    import pandas as pd

    from isocompute.data.plots import difficulty_histograms, histogram_counts

    cfg = config_from_params(args.params)
    difficulty = atomic.read_parquet(args.difficulty)
    rates = {"pool": difficulty["avg_at_samples"].to_numpy()}
    for split in cfg["splits"]["names"]:
        train = atomic.read_parquet(Path(args.splits_dir) / split / "train.parquet")
        rates[split] = train["extra_info"].map(lambda e: e["base_pass_rate"]).to_numpy()
    samples = cfg["difficulty"]["samples"]
    difficulty_histograms(rates, samples, cfg["splits"]["bands"], args.out_stem)
    counts = pd.DataFrame({name: histogram_counts(r, samples) for name, r in rates.items()})
    counts.index.name = "avg@16"
    with atomic.atomic_path(Path(args.out_stem).with_suffix(".counts.csv")) as tmp:
        counts.to_csv(tmp)
    log.info("difficulty histogram counts:\n%s", counts.to_string())
    return 0


def register(sub) -> None:
    def add(name, func, help_):
        return add_stage_parser(sub, name, func, help_)

    p = add("pool", cmd_pool, "Build the problem pool (embedded or a real dataset) as verl-schema parquet.")
    p.add_argument("--out", required=True)
    p = add("base-model", cmd_base_model, "Build and pretrain the embedded base model into a HF model directory.")
    p.add_argument("--pool", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("ship-base-model", help="Pretrain a config's embedded base model and publish it as the "
                                               "shipped copy (weights, recipe, SHA256SUMS) that the base-model "
                                               "stage uses for that recipe.")
    p.add_argument("config", help="study config (YAML), e.g. config/config.yaml")
    p.add_argument("--out", default=None, help="folder to write (default: the package's shipped copy)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads of pretraining (default: the config's "
                                                               "base_model.pretrain_threads)")
    p.add_argument("--check", action="store_true", help="pretrain and compare with the shipped copy (at --out) "
                                                        "instead of rewriting it: exit 0 when the weights are "
                                                        "identical")
    p.set_defaults(func=lambda a: (setup_logging(), cmd_ship_base_model(a))[1])
    p = add("difficulty", cmd_difficulty, "Sample the base model on one part of the pool: per-problem correct "
                                          "counts of avg@16 (and pass@K).")
    p.add_argument("--pool", required=True)
    p.add_argument("--model", required=True, help="HF model directory or hub name")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--part", type=int, default=0, help="which part of the pool (0-based)")
    p.add_argument("--parts", type=int, default=1, help="parts the pool is split into (cluster.sample.jobs)")
    p.add_argument("--out", required=True)
    p = add("difficulty-merge", cmd_difficulty_merge, "Merge the parts' counts into the pool's difficulty table.")
    p.add_argument("--pool", required=True)
    p.add_argument("--parts", nargs="+", required=True, help="the parts' count files, in part order")
    p.add_argument("--out", required=True)
    p = add("splits", cmd_splits, "Cut difficulty splits with held-out validation sets.")
    p.add_argument("--pool", required=True)
    p.add_argument("--difficulty", required=True)
    p.add_argument("--out-dir", required=True)
    p = add("fig-difficulty", cmd_fig_difficulty, "Figure 2: avg@16 histograms of the pool and splits.")
    p.add_argument("--difficulty", required=True)
    p.add_argument("--splits-dir", required=True)
    p.add_argument("--out-stem", required=True)
