"""Saved verdicts: a run's validation dumps are graded once, then re-scored from here.

`score` (train_stages) loads a GradeCache beside the run, grades only the pairs
it lacks with `judge_many`, and saves it back; a cache from another
GRADER_VERSION is ignored, so a changed grader re-grades everything. Only
definite verdicts (correct or wrong) are saved: a pair that timed out is
graded again by the next scoring. The file carries a digest of its verdicts: a
torn or edited file (or one written before caches had a digest) is ignored with a
warning and rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from isocompute.atomic import error_line, write_text
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

    @staticmethod
    def digest(grades: dict) -> str:
        """A checksum of the verdicts as saved (sorted keys, compact), so an edit shows."""
        text = json.dumps(grades, sort_keys=True, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    def save(self, path: str | os.PathLike) -> None:
        # Compact JSON (not write_json's indented form): a cache holds 100k keys.
        write_text(path, json.dumps({"grader_version": GRADER_VERSION, "digest": self.digest(self._grades),
                                     "grades": self._grades}))

    @classmethod
    def load(cls, path: str | os.PathLike, missing_ok: bool = True) -> "GradeCache":
        """The verdicts saved in `path`; empty (with a warning naming the file) when the file is
        torn, is not a cache, is another GRADER_VERSION's, or its digest does not match."""
        path = Path(path)
        if missing_ok and not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text())
            grades = data["grades"]
            if not isinstance(grades, dict) or not all(isinstance(v, bool) for v in grades.values()):
                raise TypeError("grades is not a mapping of digests to true/false")
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("ignoring grade cache %s: unreadable (%s); it is rebuilt", path, error_line(exc))
            return cls()
        if data.get("grader_version") != GRADER_VERSION:
            logger.warning(
                "ignoring grade cache %s from grader version %s (now %s)",
                path, data.get("grader_version"), GRADER_VERSION,
            )
            return cls()
        if data.get("digest") != cls.digest(grades):
            logger.warning("ignoring grade cache %s: %s; it is rebuilt", path,
                           "its digest does not match its verdicts (edited or damaged)" if "digest" in data
                           else "no digest (written before caches were checksummed)")
            return cls()
        return cls(grades)
