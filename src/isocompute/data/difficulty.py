"""Difficulty against the base model: avg@16 per problem (docs/methods.md section 2).

Sampling is chunked: each chunk of `sampling.chunk_size` problems is drawn with
a seed derived from (seed, chunk) and its counts written to their own file, so
an interrupted job resumes where it stopped and gives the same counts as an
uninterrupted one. The pool is split into `cluster.sample.jobs` parts of whole
chunks, sampled by parallel jobs (`sample_counts`) and merged in pool order
(`difficulty_table`); with the local sampler the table is the same for any
number of parts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.atomic import read_parquet, write_parquet
from isocompute.data.schema import ground_truths, problem_ids
from isocompute.errors import InputError
from isocompute.grading import grade
from isocompute.sampling import SamplingParams

log = logging.getLogger(__name__)


def count_correct(sampler, prompt_ids, truths, n: int, params: SamplingParams, seed: int,
                  progress=None) -> np.ndarray:
    completions = sampler.sample(prompt_ids, n, params, seed=seed, progress=progress)
    out = np.zeros(len(prompt_ids), dtype=np.int64)
    for i, (group, truth) in enumerate(zip(completions, truths)):
        texts = sampler.decode(group)
        out[i] = sum(grade(t, truth) for t in texts)
    return out


def chunk_range(n_problems: int, chunk_size: int, part: int = 0, parts: int = 1) -> range:
    """The chunks (of `chunk_size` problems) that part `part` of `parts` samples: a contiguous run of
    whole chunks, so that every chunk keeps its seed however the pool is split into jobs."""
    n_chunks = (n_problems + chunk_size - 1) // chunk_size
    return range(part * n_chunks // parts, (part + 1) * n_chunks // parts)


def chunk_seed(seed: int, chunk: int) -> int:
    """The seed of one chunk's draws (its extra draws for Extremely Hard add 50021)."""
    return seed * 100003 + chunk


@dataclass(frozen=True)
class Draws:
    """What fixes the difficulty draws: `samples` per problem, up to `extra_samples_k` in total
    for problems with none correct (or for every problem, `k_for_all`), the sampling params,
    and the seed of each chunk of `chunk_size` problems (`chunk_seed`)."""

    samples: int
    extra_samples_k: int
    params: SamplingParams
    seed: int
    chunk_size: int
    k_for_all: bool = False


def sample_counts(pool: pd.DataFrame, sampler, render, draws: Draws, *, chunk_dir: Path,
                  chunks: range | None = None, progress_factory=None) -> pd.DataFrame:
    """Per-problem correct counts over `draws.samples` draws for the problems of `chunks` (all by
    default); problems with none correct get draws up to `extra_samples_k` in total (Extremely Hard),
    or every problem does with `k_for_all` (mixture components defined over K samples)."""
    samples, extra_samples_k, params, seed = draws.samples, draws.extra_samples_k, draws.params, draws.seed
    chunk_size, k_for_all = draws.chunk_size, draws.k_for_all
    chunk_dir.mkdir(parents=True, exist_ok=True)
    truths = list(ground_truths(pool))
    ids = list(problem_ids(pool))
    if chunks is None:
        chunks = chunk_range(len(pool), chunk_size)
    bounds = {c: (c * chunk_size, min(len(pool), (c + 1) * chunk_size)) for c in chunks}
    total = sum(hi - lo for lo, hi in bounds.values())
    bar = progress_factory(total=total, desc=f"avg@{samples}") if progress_factory else None
    parts = []
    for c, (lo, hi) in bounds.items():
        path = chunk_dir / f"chunk{c:05d}.parquet"
        part = _cached_chunk(path)
        if part is not None:
            if list(part["problem_id"]) == ids[lo:hi]:
                parts.append(part)
                if bar is not None:
                    bar.update(hi - lo)
                continue
        prompts = render(pool["prompt"].iloc[lo:hi])
        correct = count_correct(sampler, prompts, truths[lo:hi], samples, params, seed=chunk_seed(seed, c),
                                progress=bar)
        correct_k = correct.copy()
        extra = extra_samples_k - samples
        zero = np.arange(len(correct)) if k_for_all else np.flatnonzero(correct == 0)
        if extra > 0 and len(zero):
            more = count_correct(sampler, [prompts[i] for i in zero], [truths[lo + i] for i in zero],
                                 extra, params, seed=chunk_seed(seed, c) + 50021)
            correct_k[zero] += more
        part = pd.DataFrame({
            "problem_id": ids[lo:hi], "samples": samples, "correct": correct,
            "samples_k": np.where((correct == 0) | k_for_all, max(samples, extra_samples_k), samples),
            "correct_k": correct_k,
        })
        write_parquet(path, part)
        parts.append(part)
    if bar is not None:
        bar.close()
    columns = ["problem_id", "samples", "correct", "samples_k", "correct_k"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def _cached_chunk(path: Path) -> pd.DataFrame | None:
    """A chunk's counts saved by an earlier job, or None: absent, or torn (a job killed while
    copying it) and counted again."""
    if not path.is_file():
        return None
    try:
        return read_parquet(path)
    except InputError as exc:
        log.warning("%s; counting the chunk again", exc)
        return None


def difficulty_table(pool: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """The difficulty table of the pool from the counts of all its chunks (in pool order):
    + avg@samples and each problem's family."""
    if list(counts["problem_id"]) != list(problem_ids(pool)):
        raise InputError(f"difficulty counts cover {len(counts)} problems, not the pool's {len(pool)} in its "
                         "order; re-run the difficulty_chunk jobs")
    table = counts.reset_index(drop=True)
    table["avg_at_samples"] = table["correct"] / table["samples"]
    table["family"] = pool["extra_info"].map(lambda e: e.get("family") or "all").to_numpy()
    return table
