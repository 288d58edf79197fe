"""The problem pool: the embedded integer-arithmetic pool (stands in for
Guru-Math on a laptop) and the loader that maps real datasets (a Hugging Face
dataset name or a local parquet/jsonl file) to the same verl schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.atomic import read_parquet
from isocompute.data.schema import make_row, validate_frame
from isocompute.errors import ConfigError, InputError

EMBEDDED_SOURCE = "isocompute/arith"


@dataclass(frozen=True)
class Family:
    name: str
    operands: int
    digits: tuple[int, int]
    ops: str
    corpus_accuracy: float

    @classmethod
    def from_config(cls, d: dict) -> "Family":
        return cls(d["name"], int(d["operands"]), tuple(d["digits"]), d["ops"], float(d["corpus_accuracy"]))


def evaluate(expression: str) -> int:
    """Value of a generated expression (digits and + - * only: eval is safe)."""
    if not set(expression) <= set("0123456789+-*"):
        raise ValueError(f"unexpected expression {expression!r}")
    return int(eval(expression, {"__builtins__": {}}, {}))  # noqa: S307


def draw_expression(fam: Family, rng: np.random.Generator) -> str:
    parts = []
    for i in range(fam.operands):
        d = int(rng.integers(fam.digits[0], fam.digits[1] + 1))
        lo = 0 if d == 1 else 10 ** (d - 1)
        parts.append(str(int(rng.integers(lo, 10**d))))
        if i < fam.operands - 1:
            parts.append(fam.ops[int(rng.integers(len(fam.ops)))])
    return "".join(parts)


def draw_unique(fam: Family, count: int, rng: np.random.Generator, exclude: set[str] = frozenset(),
                max_tries_factor: int = 50) -> list[str]:
    """`count` distinct expressions of a family not in `exclude`."""
    out: list[str] = []
    seen = set(exclude)
    tries = 0
    while len(out) < count:
        tries += 1
        if tries > max_tries_factor * count + 1000:
            raise ConfigError(
                f"config key 'pool.families' ({fam.name}): cannot draw {count} distinct problems; "
                f"widen digits/operands or lower pool.n_problems")
        e = draw_expression(fam, rng)
        if e not in seen:
            seen.add(e)
            out.append(e)
    return out


def problem_text(expression: str) -> str:
    return f"Compute {expression}."


def family_quotas(n_problems: int, n_families: int) -> list[int]:
    base, rem = divmod(n_problems, n_families)
    return [base + (i < rem) for i in range(n_families)]


def embedded_pool(families: list[Family], n_problems: int, seed: int, instruction: str) -> pd.DataFrame:
    """Deterministic, seeded pool of graded-difficulty arithmetic problems."""
    rows = []
    index = 0
    for fam_i, (fam, quota) in enumerate(zip(families, family_quotas(n_problems, len(families)))):
        rng = np.random.default_rng([seed, 1, fam_i])
        for expr in draw_unique(fam, quota, rng):
            rows.append(make_row(
                data_source=EMBEDDED_SOURCE, problem=problem_text(expr), instruction=instruction,
                answer=str(evaluate(expr)), index=index, problem_id=f"arith-{index:06d}", family=fam.name))
            rows[-1]["extra_info"]["expression"] = expr
            index += 1
    return pd.DataFrame(rows)


# --- real datasets -----------------------------------------------------------

def _read_local(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InputError(f"config key 'pool.path': file not found: {path}")
    if path.suffix == ".parquet":
        return read_parquet(path)
    if path.suffix in (".jsonl", ".json"):
        try:
            return pd.read_json(path, lines=path.suffix == ".jsonl")
        except ValueError as exc:
            raise InputError(f"{path}: not valid JSON lines ({exc})") from exc
    raise InputError(f"config key 'pool.path': expected a .parquet or .jsonl file, got {path.name}")


def _read_hub(name: str, subset: str | None, split: str) -> pd.DataFrame:
    import datasets  # deferred: heavy, and only the cluster configs need it

    try:
        ds = datasets.load_dataset(name, subset, split=split)
    except Exception as exc:  # network, auth or name errors all stop here
        raise InputError(f"config key 'pool.name': cannot load Hugging Face dataset {name!r} "
                         f"(subset={subset!r}, split={split!r}): {exc}") from exc
    return ds.to_pandas()


def _answer_of(row: pd.Series, answer_field: str, source: str):
    if "reward_model" in row and isinstance(row["reward_model"], dict) and "ground_truth" in row["reward_model"]:
        return row["reward_model"]["ground_truth"]
    if answer_field in row:
        return row[answer_field]
    raise InputError(f"{source}: no answer column {answer_field!r} and no reward_model.ground_truth")


def _problem_of(row: pd.Series, problem_field: str, source: str) -> str:
    prompt = row.get("prompt")
    if prompt is not None and not isinstance(prompt, str) and len(prompt):
        # verl-style chat prompt: keep the last user turn's text.
        users = [m["content"] for m in prompt if m["role"] == "user"]
        if users:
            return users[-1]
    if isinstance(prompt, str) and prompt:
        return prompt
    if problem_field in row and isinstance(row[problem_field], str):
        return row[problem_field]
    raise InputError(f"{source}: no problem column {problem_field!r} and no chat 'prompt'")


def normalise_dataset(raw: pd.DataFrame, *, source: str, pool: dict, max_problems: int | None,
                      seed: int) -> pd.DataFrame:
    """Map a real dataset to the verl schema with stable problem ids, by the config's `pool`
    section (problem_field, answer_field, instruction, data_source)."""
    problem_field, answer_field, instruction = pool["problem_field"], pool["answer_field"], pool["instruction"]
    data_source_prefix = pool["data_source"]
    if data_source_prefix is not None:
        if "data_source" not in raw.columns:
            raise InputError(f"{source}: config key 'pool.data_source' set but the data has no data_source column")
        raw = raw[raw["data_source"].astype(str).str.startswith(data_source_prefix)]
        if raw.empty:
            raise InputError(f"{source}: no rows with data_source starting with {data_source_prefix!r}")
    raw = raw.reset_index(drop=True)
    if max_problems is not None and len(raw) > max_problems:
        keep = np.sort(np.random.default_rng([seed, 2]).choice(len(raw), max_problems, replace=False))
        raw = raw.iloc[keep].reset_index(drop=True)
    rows = []
    for i, row in raw.iterrows():
        problem = _problem_of(row, problem_field, source)
        answer = _answer_of(row, answer_field, source)
        if answer is None or (isinstance(answer, float) and np.isnan(answer)) or str(answer).strip() == "":
            raise InputError(f"{source}: row {i} has an empty answer")
        ds = str(row["data_source"]) if "data_source" in raw.columns else Path(source).stem
        # A prompt that already carries the instruction is kept as is.
        instr = "" if "boxed" in problem else instruction
        rows.append(make_row(data_source=ds, problem=problem, instruction=instr, answer=str(answer),
                             index=i, problem_id=f"{ds}-{i:07d}", family=ds))
    return validate_frame(pd.DataFrame(rows), source)


def build_pool(cfg: dict) -> pd.DataFrame:
    """The pool a config asks for (cfg is the full, checked config)."""
    pool = cfg["pool"]
    if pool["source"] == "embedded":
        fams = [Family.from_config(f) for f in pool["families"]]
        return embedded_pool(fams, pool["n_problems"], cfg["seed"], pool["instruction"])
    if pool["source"] == "file":
        path = Path(pool["path"])
        raw, source = _read_local(path), str(path)
    else:
        raw, source = _read_hub(pool["name"], pool["subset"], pool["split"]), pool["name"]
    return normalise_dataset(raw, source=source, pool=pool, max_problems=pool["max_problems"], seed=cfg["seed"])


def dumps_row(row: dict) -> str:
    return json.dumps(row, sort_keys=True)
