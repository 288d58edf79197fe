"""What every subcommand shares: logging, the `--params` convention of stage
subcommands, provenance beside each result, progress bars, thread limits."""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import sys
import time

from isocompute.config import deep_update
from isocompute.job_config import JobConfig, job_config
from isocompute.errors import InputError

log = logging.getLogger("isocompute")


def setup_logging() -> None:
    """isocompute's own messages from INFO up on stderr; other libraries' (matplotlib's font
    manager, httpx, ...) only from WARNING up, so that a stage's log says what the stage did."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log.setLevel(logging.INFO)


def _json_sections(text: str, flag: str) -> dict:
    try:
        partial = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{flag}: not valid JSON ({exc})") from exc
    if not isinstance(partial, dict):
        raise InputError(f"{flag}: expected a JSON object of config sections, got {type(partial).__name__}")
    return partial


def json_text(obj) -> str:
    """`obj` as indented JSON for stdout, a NaN or infinite number written as null: JSON has no
    NaN, and strict parsers refuse the `NaN` Python's json writes by default."""
    def strict(value):
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, dict):
            return {k: strict(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [strict(v) for v in value]
        return value

    return json.dumps(strict(obj), indent=2, allow_nan=False)


def config_from_params(text: str, options: str | None = None) -> JobConfig:
    """A job's config: exactly the JSON sections its rule passed (isocompute.jobs), checked
    against the schema and filled with nothing, with `options` (keys a rule passes outside
    its params, which are its rerun contract) merged in. Reading anything else raises."""
    partial = _json_sections(text, "--params")
    if options:
        partial = deep_update(partial, _json_sections(options, "--options"))
    return job_config(partial)


def progress(**kw):
    from tqdm import tqdm

    return tqdm(mininterval=2.0, file=sys.stderr, **kw)


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("isocompute", "torch", "transformers", "tokenizers", "math-verify", "pandas", "numpy",
                "snakemake", "verl"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def provenance(cfg: dict, **extra) -> dict:
    """Config (the sections the stage was given), versions and time of a result."""
    return {"config": dict(cfg), "versions": versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **extra}


def set_threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)
    os.environ.setdefault("OMP_NUM_THREADS", str(n))


def add_stage_parser(sub, name: str, func, help_: str, *, params: bool = True):
    """A pipeline-stage subcommand: `--params` (the config sections it reads), logs to stderr;
    `isocompute --help` lists it with the stages (`_stage`), apart from the tools."""
    p = sub.add_parser(name, help=help_, description=help_)
    p.set_defaults(_stage=True)
    if params:
        p.add_argument("--params", required=True, help="JSON of the config sections this stage reads")
    p.set_defaults(func=lambda a: (setup_logging(), func(a))[1])
    return p
