"""Difficulty against the base model: avg@16 per problem (METHODS section 2).

Sampling is chunked: each chunk's counts are written to their own file with a
seed derived from (seed, chunk), so an interrupted stage resumes where it
stopped and gives the same table as an uninterrupted one.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.atomic import write_parquet
from isocompute.data.schema import ground_truths, problem_ids
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


def sample_difficulty(pool: pd.DataFrame, sampler, render, *, samples: int, extra_samples_k: int,
                      params: SamplingParams, seed: int, chunk_size: int, chunk_dir: Path,
                      progress_factory=None) -> pd.DataFrame:
    """Per-problem correct counts over `samples` draws; problems with none
    correct get draws up to `extra_samples_k` in total (Extremely Hard)."""
    chunk_dir.mkdir(parents=True, exist_ok=True)
    truths = list(ground_truths(pool))
    ids = list(problem_ids(pool))
    n_chunks = (len(pool) + chunk_size - 1) // chunk_size
    bar = progress_factory(total=len(pool), desc=f"avg@{samples}") if progress_factory else None
    parts = []
    for c in range(n_chunks):
        path = chunk_dir / f"chunk{c:05d}.parquet"
        lo, hi = c * chunk_size, min(len(pool), (c + 1) * chunk_size)
        if path.is_file():
            part = pd.read_parquet(path)
            if list(part["problem_id"]) == ids[lo:hi]:
                parts.append(part)
                if bar is not None:
                    bar.update(hi - lo)
                continue
        prompts = render(pool["prompt"].iloc[lo:hi])
        correct = count_correct(sampler, prompts, truths[lo:hi], samples, params, seed=seed * 100003 + c,
                                progress=bar)
        correct_k = correct.copy()
        extra = extra_samples_k - samples
        zero = np.flatnonzero(correct == 0)
        if extra > 0 and len(zero):
            more = count_correct(sampler, [prompts[i] for i in zero], [truths[lo + i] for i in zero],
                                 extra, params, seed=seed * 100003 + c + 50021)
            correct_k[zero] += more
        part = pd.DataFrame({
            "problem_id": ids[lo:hi], "samples": samples, "correct": correct,
            "samples_k": np.where(correct == 0, max(samples, extra_samples_k), samples),
            "correct_k": correct_k,
        })
        write_parquet(path, part)
        parts.append(part)
    if bar is not None:
        bar.close()
    table = pd.concat(parts, ignore_index=True)
    table["avg_at_samples"] = table["correct"] / table["samples"]
    table["family"] = pool["extra_info"].map(lambda e: e.get("family") or "all").to_numpy()
    return table
