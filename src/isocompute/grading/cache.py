"""Saved verdicts: a run's validation dumps are graded once, then re-scored from here.

`score` (train_stages) loads a GradeCache beside the run, grades only the pairs
it lacks with `judge_many`, and saves it back; a cache from another
GRADER_VERSION is ignored, so a changed grader re-grades everything. Only
definite verdicts (correct or wrong) are saved: a pair that timed out is
graded again by the next scoring.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from isocompute.atomic import write_text
from isocompute.grading.version import GRADER_VERSION

logger = logging.getLogger(__name__)


class GradeCache:
    """Verdicts keyed by (completion, ground_truth), saved as JSON between runs.

    Keys are digests, so a cache of 100k long completions stays a few MB. A
    file written by another GRADER_VERSION loads as empty.
    """

    def __init__(self, grades: dict[str, bool] | None = None) -> None:
        self._grades: dict[str, bool] = dict(grades or {})

    @staticmethod
    def key(completion: str, ground_truth: str) -> str:
        c = str(completion).encode("utf-8", "surrogatepass")
        g = str(ground_truth).encode("utf-8", "surrogatepass")
        # Length-prefixed so no (completion, truth) split can collide with another.
        h = hashlib.blake2b(digest_size=16)
        h.update(len(c).to_bytes(8, "little"))
        h.update(c)
        h.update(g)
        return h.hexdigest()

    def get(self, completion: str, ground_truth: str) -> bool | None:
        return self._grades.get(self.key(completion, ground_truth))

    def put(self, completion: str, ground_truth: str, correct: bool) -> None:
        self._grades[self.key(completion, ground_truth)] = bool(correct)

    def __len__(self) -> int:
        return len(self._grades)

    def __contains__(self, pair: tuple[str, str]) -> bool:
        return self.key(*pair) in self._grades

    def save(self, path: str | os.PathLike) -> None:
        # Compact JSON (not write_json's indented form): a cache holds 100k keys.
        write_text(path, json.dumps({"grader_version": GRADER_VERSION, "grades": self._grades}))

    @classmethod
    def load(cls, path: str | os.PathLike, missing_ok: bool = True) -> "GradeCache":
        path = Path(path)
        if missing_ok and not path.exists():
            return cls()
        with open(path) as f:
            data = json.load(f)
        if data.get("grader_version") != GRADER_VERSION:
            logger.warning(
                "ignoring grade cache %s from grader version %s (now %s)",
                path, data.get("grader_version"), GRADER_VERSION,
            )
            return cls()
        return cls({k: bool(v) for k, v in data["grades"].items()})
