"""The files of one run directory that both training backends write and that
scoring and analysis read (results/{exp}/runs/{split}/bp{B_p}_n{n}/):

  generations/{step}.jsonl   validation samples, verl's validation_data_dir dump format
                             (input, output, gts, score, step) + problem_id, sample, n_tokens
  metrics.jsonl              per step, verl's file-logger envelope {"step": N, "data": {...}}
  train_pass_rates.jsonl     per step and training problem: {"step", "problem_id", "pass_rate"}
  run.json                   completion marker, written last (the train rule's output)
  evals.parquet              the evaluation table (the score rule's output)

Kept light (no torch) so that the analysis environment can import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunFiles:
    run_dir: Path

    @property
    def generations(self) -> Path:
        return Path(self.run_dir) / "generations"

    @property
    def metrics(self) -> Path:
        return Path(self.run_dir) / "metrics.jsonl"

    @property
    def pass_rates(self) -> Path:
        return Path(self.run_dir) / "train_pass_rates.jsonl"

    @property
    def marker(self) -> Path:
        return Path(self.run_dir) / "run.json"

    @property
    def evals(self) -> Path:
        return Path(self.run_dir) / "evals.parquet"
