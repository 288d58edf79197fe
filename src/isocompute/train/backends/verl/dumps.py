"""verl's validation dumps in the project's format: after training, each sample
gets its index within its problem and its completion length in tokens, which
scoring reads (`isocompute.layout.RunFiles.generations`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from isocompute import atomic
from isocompute.train.run_logs import read_jsonl

log = logging.getLogger(__name__)


def annotate_dump(records: list[dict], count_tokens=None) -> list[dict]:
    """Add `sample` (index of the completion within its problem, in dump order) and,
    with a token counter, `n_tokens`; verl's own keys are left as they are.

    verl dumps the samples of one prompt next to each other (sorted by uid);
    problems are keyed by `problem_id` from the reward function, else the input text.
    """
    seen: dict[str, int] = {}
    out = []
    for rec in records:
        key = rec.get("problem_id") or rec.get("input", "")
        rec = dict(rec)
        rec["sample"] = seen.get(key, 0)
        seen[key] = rec["sample"] + 1
        if count_tokens is not None and "n_tokens" not in rec:
            rec["n_tokens"] = int(count_tokens(rec.get("output") or ""))
        out.append(rec)
    return out


def annotate_dumps(generations: Path, model: str) -> int:
    """Annotate every dump of a run that lacks `sample`; returns the files rewritten."""
    todo = []
    for path in sorted(Path(generations).glob("*.jsonl")):
        records = read_jsonl(path)
        if records and "sample" not in records[0]:
            todo.append((path, records))
    if not todo:
        return 0
    count = token_counter(model)
    for path, records in todo:
        atomic.write_jsonl(path, annotate_dump(records, count))
    return len(todo)


def token_counter(model: str):
    """Completion length in tokens, re-tokenised from the decoded text (verl dumps text only);
    exact up to the stop token, which decoding drops."""
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(model)
    except Exception as exc:  # the dumps stay valid without n_tokens
        log.warning("cannot load the tokenizer of %s (%s); dumps get no n_tokens", model, exc)
        return None
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])
