"""Training pass rates from verl's rollout dumps: per step and training
problem, the fraction of its n rollouts that were correct -- the local
backend's train_pass_rates.jsonl records, written while verl runs.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from isocompute.train.backends.verl.files import VerlRunFiles
from isocompute.train.run_logs import append_jsonl, read_jsonl

log = logging.getLogger(__name__)


def prompt_group(uid: str) -> str:
    """The prompt of a rollout from verl's dump key '{prompt uid}_{session}_{output}'."""
    parts = str(uid).rsplit("_", 2)
    return parts[0] if len(parts) == 3 else str(uid)


def step_pass_rates(records, problem_of) -> list[dict]:
    """{'step', 'problem_id', 'pass_rate'} per prompt of one rollout dump (the local backend's records).

    `problem_of(input_text)` names a prompt's problem; a prompt it does not know
    is named by a digest of its text, so its pass rate still counts.
    """
    groups: dict[str, list] = {}
    step = None
    for rec in records:
        step = int(rec["step"])
        groups.setdefault(prompt_group(rec.get("uid", rec.get("input", ""))), []).append(rec)
    out = []
    for recs in groups.values():
        text = recs[0].get("input", "")
        pid = problem_of(text) or "input-" + hashlib.sha256(text.encode()).hexdigest()[:16]
        out.append({"step": step, "problem_id": pid,
                    "pass_rate": float(sum(float(r["score"]) > 0.5 for r in recs) / len(recs))})
    return sorted(out, key=lambda r: r["problem_id"])


def prompt_index(train_file: Path, model: str) -> dict:
    """Input text -> problem_id for a split, rendered as verl renders and dumps prompts
    (chat template with the generation prompt, decoded without special tokens)."""
    import pandas as pd
    from transformers import AutoTokenizer
    from verl.utils.tokenizer.chat_template import apply_chat_template
    from verl.utils.tokenizer.tokenizer import normalize_token_ids

    tok = AutoTokenizer.from_pretrained(model)
    df = pd.read_parquet(train_file, columns=["prompt", "extra_info"])
    index = {}
    for messages, extra in zip(df["prompt"], df["extra_info"]):
        ids = normalize_token_ids(apply_chat_template(tok, [dict(m) for m in messages], tokenize=True,
                                                      add_generation_prompt=True))
        index[tok.decode(ids, skip_special_tokens=True)] = str(extra["problem_id"])
    return index


class PassRateRecorder:
    """Turns verl's per-step rollout dumps into train_pass_rates.jsonl while verl runs.

    verl writes the dumps one after the other from a single thread, so a step's
    file is complete once the next one exists (or verl has exited); each is
    deleted once read, so at most two steps of rollouts are on disk.
    """

    def __init__(self, files: VerlRunFiles, problem_of):
        self.files = files
        self.problem_of = problem_of

    def collect(self, final: bool = False) -> int:
        if not self.files.rollouts.is_dir():
            return 0
        dumps = sorted((p for p in self.files.rollouts.glob("*.jsonl") if p.stem.isdigit()), key=lambda p: int(p.stem))
        ready = dumps if final else dumps[:-1]
        for path in ready:
            records = read_jsonl(path)
            if records:
                append_jsonl(self.files.pass_rates, step_pass_rates(records, self.problem_of))
            path.unlink()
        return len(ready)


def problem_lookup(train_file: Path, model: str):
    """problem_of(input text) for the recorder; without a tokenizer, every prompt gets a digest."""
    try:
        index = prompt_index(train_file, model)
    except Exception as exc:  # pass rates stay usable for distributions without ids
        log.warning("cannot render %s's prompts with %s's tokenizer (%s); pass rates keyed by prompt digest",
                    train_file, model, exc)
        index = {}
    return index.get
