"""Config loading and validation against config/schema.yaml.

The Snakefile calls `check_config` before any job is scheduled, so that a bad
key or type stops the run with one line naming the key and what was expected.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "config" / "schema.yaml"


class ConfigError(ValueError):
    """A config value a user wrote is wrong; the message names the key."""


def load_schema(path: Path | str = SCHEMA_PATH) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config schema not found at {path}")
    with open(path) as fh:
        return yaml.safe_load(fh)


def _key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<top level>"


def _describe(error: jsonschema.ValidationError) -> str:
    """One line: the key, what was expected, what was found."""
    where = _key_path(error.absolute_path)
    v = error.validator
    if v == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        key = f"{where}.{extra[0]}" if error.absolute_path else extra[0]
        return f"config key '{key}': unknown key (expected one of: {', '.join(allowed)})"
    if v == "type":
        return (f"config key '{where}': expected {error.validator_value}, "
                f"got {type(error.instance).__name__} {error.instance!r}")
    if v == "enum":
        return f"config key '{where}': expected one of {error.validator_value}, got {error.instance!r}"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sym = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">",
               "exclusiveMaximum": "<"}[v]
        return f"config key '{where}': expected a value {sym} {error.validator_value}, got {error.instance!r}"
    if v == "required":
        return f"config key '{where}': {error.message}"
    return f"config key '{where}': {error.message}"


def _fill_defaults(instance: Any, schema: dict, root: dict) -> None:
    """Fill schema defaults in place, recursing into objects and arrays."""
    if "$ref" in schema:
        ref = schema["$ref"].split("/")[-1]
        schema = {**root["$defs"][ref], **{k: v for k, v in schema.items() if k != "$ref"}}
    if isinstance(instance, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key in instance:
                _fill_defaults(instance[key], sub, root)
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for item in instance:
            _fill_defaults(item, schema["items"], root)


def check_config(config: dict, schema: dict | None = None) -> dict:
    """Validate `config` in place, fill defaults, and return it.

    Raises ConfigError with a one-line message on the first problem.
    """
    schema = schema or load_schema()
    if not isinstance(config, dict):
        raise ConfigError(f"config: expected a mapping, got {type(config).__name__}")
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        raise ConfigError(_describe(errors[0]))
    _fill_defaults(config, schema, schema)
    # Defaults can themselves be checked (e.g. a default list of families).
    errors = list(validator.iter_errors(config))
    if errors:
        raise ConfigError(_describe(errors[0]))
    _check_semantics(config)
    return config


def _check_semantics(config: dict) -> None:
    """Constraints a JSON schema cannot express."""
    for name, (lo, hi) in config["splits"]["bands"].items():
        if lo > hi:
            raise ConfigError(f"config key 'splits.bands.{name}': expected [low, high] with low <= high, got {[lo, hi]}")
    for name, mix in config["splits"]["mixtures"].items():
        total = sum(mix.values())
        if abs(total - 1.0) > 1e-9:
            raise ConfigError(f"config key 'splits.mixtures.{name}': proportions must sum to 1, got {total}")
    pool = config["pool"]
    if pool["source"] == "huggingface" and not pool["name"]:
        raise ConfigError("config key 'pool.name': expected a Hugging Face dataset name when pool.source is 'huggingface'")
    if pool["source"] == "file" and not pool["path"]:
        raise ConfigError("config key 'pool.path': expected a parquet or jsonl path when pool.source is 'file'")
    model = config["base_model"]
    if model["source"] == "path" and not model["path"]:
        raise ConfigError("config key 'base_model.path': expected a model directory or hub name when base_model.source is 'path'")
    if model["hidden_size"] % model["num_heads"]:
        raise ConfigError("config key 'base_model.num_heads': must divide base_model.hidden_size")
    if "families" in pool:
        names = [f["name"] for f in pool["families"]]
        if len(set(names)) != len(names):
            raise ConfigError("config key 'pool.families': family names must be unique")
        for i, fam in enumerate(pool["families"]):
            if fam["digits"][0] > fam["digits"][1]:
                raise ConfigError(f"config key 'pool.families[{i}].digits': expected [min, max] with min <= max")


def load_config(path: Path | str, overrides: dict | None = None) -> dict:
    """Read a YAML config file (plus optional overrides) and check it."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    with open(path) as fh:
        config = yaml.safe_load(fh) or {}
    if overrides:
        config = deep_update(config, overrides)
    return check_config(config)


def deep_update(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_update(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out
