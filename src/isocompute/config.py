"""Config loading and validation against the schema (`isocompute/schema.yaml`,
shipped with the package; `config/schema.yaml` links to it).

`check_config` is the one validation: rules/common.smk calls it before any job
is scheduled, every stage calls it on the sections it was given, and it fills
the schema's defaults in the same pass, so a bad key or type stops the run with
one line naming the key and what was expected.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from isocompute.container import check_container
from isocompute.errors import ConfigError
from isocompute.layout import run_name
from isocompute.schedule import first_rung_below_one
from isocompute.topology import check_sampling_engine

SCHEMA_RESOURCE = "schema.yaml"


@functools.lru_cache(maxsize=None)
def _packaged_schema() -> dict:
    return yaml.safe_load(resources.files("isocompute").joinpath(SCHEMA_RESOURCE).read_text())


def load_schema(path: Path | str | None = None) -> dict:
    """The config schema: the packaged one (parsed once per process), or the file at `path`."""
    if path is None:
        return copy.deepcopy(_packaged_schema())
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config schema not found at {path}")
    with open(path) as fh:
        return yaml.safe_load(fh)


def schema_defaults(section: str) -> dict:
    """The schema's default of every key of a top-level section (e.g. 'analysis')."""
    props = _packaged_schema()["properties"][section]["properties"]
    return {key: copy.deepcopy(sub["default"]) for key, sub in props.items() if "default" in sub}


def _key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<top level>"


def _describe(error: jsonschema.ValidationError, schema: dict | None = None) -> str:
    """One line: the key, what was expected, what was found."""
    where = _key_path(error.absolute_path)
    v = error.validator
    if v == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        key = f"{where}.{extra[0]}" if error.absolute_path else extra[0]
        path = list(error.absolute_path)
        if len(path) == 3 and path[0] == "variants" and path[2] == "train" and schema is not None \
                and extra[0] in schema["properties"]["train"]["properties"]:
            return (f"config key '{key}': not a recipe key, so variant '{path[1]}' cannot override it "
                    f"(train.{extra[0]} is the study's, shared by every run); a variant overrides only "
                    f"{', '.join(allowed)}")
        return f"config key '{key}': unknown key (expected one of: {', '.join(allowed)})"
    if v == "type":
        return (f"config key '{where}': expected {error.validator_value}, "
                f"got {type(error.instance).__name__} {error.instance!r}{_type_hint(error)}")
    if v == "enum":
        return f"config key '{where}': expected one of {error.validator_value}, got {error.instance!r}"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sym = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">",
               "exclusiveMaximum": "<"}[v]
        return f"config key '{where}': expected a value {sym} {error.validator_value}, got {error.instance!r}"
    return f"config key '{where}': {error.message}"


def _type_hint(error: jsonschema.ValidationError) -> str:
    """Why a value that looks right is refused."""
    value, expected = error.instance, error.validator_value
    if isinstance(value, float) and not math.isfinite(value):
        return " (numbers must be finite)"
    if isinstance(value, float) and value.is_integer() and "integer" in str(expected):
        return f" (write {int(value)})"
    if isinstance(value, str) and "number" in str(expected):
        try:
            float(value)
        except ValueError:
            return ""
        return (f" (YAML reads {value} as a string; write it with a decimal point, e.g. "
                f"{float(value):.1e})")
    return ""


def _filling_defaults(validator_class):
    """The validator class, extended to fill each object's schema defaults as it
    validates it (jsonschema's documented recipe), so that defaults are
    themselves validated and filled recursively in one pass."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def properties(validator, props, instance, schema):
        if validator.is_type(instance, "object"):
            for key, sub in props.items():
                if key not in instance and "default" in sub:
                    instance[key] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, props, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": properties})


def _is_integer(checker, instance) -> bool:
    """An integer is an int, not an integral float (`C_max: 24.0` would reach a job as --max-steps 6.0)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(checker, instance) -> bool:
    """A number is finite: NaN clears every bound (its comparisons are all false) and .inf any minimum."""
    return isinstance(instance, (int, float)) and not isinstance(instance, bool) and math.isfinite(instance)


# The draft's validator with those two types: closed to NaN, infinities and integral floats.
_Strict = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}))
_Validator = _filling_defaults(_Strict)


def check_config(config: dict, schema: dict | None = None) -> dict:
    """Validate `config` in place, fill defaults, and return it.

    Raises ConfigError with a one-line message on the first problem.
    """
    schema = schema or load_schema()
    if not isinstance(config, dict):
        raise ConfigError(f"config: expected a mapping, got {type(config).__name__}")
    errors = sorted(_Validator(schema).iter_errors(config),
                    key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        raise ConfigError(_describe(errors[0], schema))
    _check_semantics(config)
    return config


def _check_semantics(config: dict) -> None:
    """Constraints a JSON schema cannot express."""
    for name, (lo, hi) in config["splits"]["bands"].items():
        if lo > hi:
            raise ConfigError(f"config key 'splits.bands.{name}': expected [low, high] with low <= high, got {[lo, hi]}")
    for name, mix in config["splits"]["mixtures"].items():
        for comp, spec in mix.items():
            if isinstance(spec, dict) and spec["band"][0] > spec["band"][1]:
                raise ConfigError(f"config key 'splits.mixtures.{name}.{comp}.band': expected [low, high] with "
                                  f"low <= high, got {spec['band']}")
        total = sum(spec["share"] if isinstance(spec, dict) else spec for spec in mix.values())
        if abs(total - 1.0) > 1e-9:
            raise ConfigError(f"config key 'splits.mixtures.{name}': proportions must sum to 1, got {total}")
    pool = config["pool"]
    if pool["source"] == "huggingface" and not pool["name"]:
        raise ConfigError("config key 'pool.name': expected a Hugging Face dataset name when pool.source is 'huggingface'")
    if pool["source"] == "file" and not pool["path"]:
        raise ConfigError("config key 'pool.path': expected a parquet or jsonl path when pool.source is 'file'")
    if config["eval"]["samples"] < config["eval"]["k"]:
        raise ConfigError(f"config key 'eval.k': expected at most eval.samples = {config['eval']['samples']} "
                          f"(k of the samples drawn per validation problem), got {config['eval']['k']}")
    model = config["base_model"]
    if model["source"] == "path" and not model["path"]:
        raise ConfigError("config key 'base_model.path': expected a model directory or hub name when base_model.source is 'path'")
    if model["hidden_size"] % model["num_heads"]:
        raise ConfigError("config key 'base_model.num_heads': must divide base_model.hidden_size")
    check_container(config["cluster"]["container"])
    check_sampling_engine(config)
    _check_variants(config)
    _check_eval_sets(config)
    _check_sweep(config)
    _check_schedule(config)
    _check_analysis(config)
    if "families" in pool:
        names = [f["name"] for f in pool["families"]]
        if len(set(names)) != len(names):
            raise ConfigError("config key 'pool.families': family names must be unique")
        for i, fam in enumerate(pool["families"]):
            if fam["digits"][0] > fam["digits"][1]:
                raise ConfigError(f"config key 'pool.families[{i}].digits': expected [min, max] with min <= max")


# The most validations one run may be scheduled (each is a dump, a scoring and a row): a bound that
# keeps a typo (C_max 10^15 with eval_interval 1) from building a schedule that never finishes.
MAX_EVALUATIONS = 100_000


def _check_schedule(config: dict) -> None:
    """A steps schedule validates each run at most MAX_EVALUATIONS times (the compute schedule is bounded
    by its schema keys: points per doubling times doublings)."""
    train = config["train"]
    if train["eval_schedule"] != "steps":
        return
    runs = [(f"grid.{split}", min(spec["B_p"]), min(spec["n"]), spec["C_max"]) for split, spec in config["grid"].items()]
    runs += [(f"variants.{name}.cells[{i}]", cell["B_p"], cell["n"], cell.get("C_max", config["grid"].get(
        cell["split"], {}).get("C_max", 0))) for name, v in config["variants"].items() for i, cell in enumerate(v["cells"])]
    for where, B_p, n, c_max in runs:
        steps = c_max // (B_p * n)
        if steps // train["eval_interval"] > MAX_EVALUATIONS:
            raise ConfigError(f"config key 'train.eval_interval': {where}'s run B_p {B_p}, n {n} takes {steps:,} steps, "
                              f"so every {train['eval_interval']} steps is {steps // train['eval_interval']:,} "
                              f"validations, more than {MAX_EVALUATIONS:,}; a larger eval_interval, a smaller C_max "
                              "or eval_schedule: compute")


def _check_analysis(config: dict) -> None:
    """The analysis reads a metric the score jobs write (with k = eval.k), and fits above a
    min_compute every split's runs reach (both failed only after all training)."""
    k, a = config["eval"]["k"], config["analysis"]
    written = [f"avg@{k}", f"best@{k}", f"worst@{k}", "pass@1", f"pass@{k}_unbiased", f"worst@{k}_unbiased"]
    if a["metric"] is not None and a["metric"] not in written:
        raise ConfigError(f"config key 'analysis.metric': expected one of the metrics the score jobs write with "
                          f"eval.k = {k} ({', '.join(written)}), got {a['metric']!r}")
    for split, spec in config["grid"].items():
        if a["min_compute"] is not None and a["min_compute"] >= spec["C_max"]:
            raise ConfigError(f"config key 'analysis.min_compute': {a['min_compute']:g} leaves grid.{split} "
                              f"(C_max {spec['C_max']:,}) nothing to fit; expected a compute below its C_max")


def _check_sweep(config: dict) -> None:
    """An adaptive sweep's first rung, C_max / eta^(rungs - 1), is at least one rollout of every split."""
    sweep = config["sweep"]
    if sweep["mode"] != "adaptive":
        return
    for split, spec in config["grid"].items():
        if first_rung_below_one(spec["C_max"], sweep["eta"], sweep["rungs"]):
            raise ConfigError(f"config key 'sweep.rungs': the first rung C_max / eta^(rungs - 1) = {spec['C_max']:g} / "
                              f"{sweep['eta']:g}^{sweep['rungs'] - 1} of grid.{split} is below one rollout; "
                              "fewer rungs or a smaller sweep.eta")


def _check_variants(config: dict) -> None:
    """Each variant trains at cells of built splits, each with a compute budget."""
    splits = list(config["splits"]["names"])
    for name, variant in config["variants"].items():
        if name == "figures":           # results/{experiment}/variants/figures/ holds the variants' figures
            raise ConfigError("config key 'variants.figures': 'figures' is the variants' figures folder; "
                              "name the variant otherwise")
        seen = set()
        for i, cell in enumerate(variant["cells"]):
            key = f"variants.{name}.cells[{i}]"
            if cell["split"] not in splits:
                raise ConfigError(f"config key '{key}.split': split {cell['split']!r} is not built "
                                  f"(splits.names is {splits})")
            if "C_max" not in cell and cell["split"] not in config.get("grid", {}):
                raise ConfigError(f"config key '{key}.C_max': expected a compute budget in rollouts "
                                  f"(there is no grid.{cell['split']}.C_max to take it from)")
            where = (cell["split"], cell["B_p"], cell["n"])
            if where in seen:
                raise ConfigError(f"config key '{key}': variant '{name}' names cell {cell['split']}/"
                                  f"{run_name(cell['B_p'], cell['n'])} twice")
            seen.add(where)


def _check_eval_sets(config: dict) -> None:
    """Extra evaluation sets have unique names, and a split set names a built split (a path
    set's file is checked with the other files, by `check_study`)."""
    splits = list(config["splits"]["names"])
    seen = set()
    for i, spec in enumerate(config["eval"].get("extra_sets", [])):
        key = f"eval.extra_sets[{i}]"
        if "split" in spec and spec["split"] not in splits:
            raise ConfigError(f"config key '{key}.split': split {spec['split']!r} is not built "
                              f"(splits.names is {splits})")
        if spec["name"] in seen:
            raise ConfigError(f"config key '{key}.name': evaluation set {spec['name']!r} is named twice")
        seen.add(spec["name"])


# --- reading config files: duplicate keys and syntax errors named by line ----------

class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a key given twice in one mapping is an error
    (plain YAML keeps the last silently: a second `train:` block would replace the first)."""


def _construct_mapping(loader, node, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                              f"(first given at line {seen[key] + 1}); each key may appear once")
        seen[key] = key_node.start_mark.line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_config_file(path: Path | str) -> dict:
    """A config file as a dict; a missing file, a YAML syntax error or a duplicate key stops
    with one line naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.load(path.read_text(), Loader=_StrictLoader)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise ConfigError(f"{path}: YAML syntax error at {where}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config sections at the top level, "
                          f"got {type(data).__name__}")
    return data


def load_config(path: Path | str, overrides: dict | None = None) -> dict:
    """Read a YAML config file (plus optional overrides) and check it."""
    config = read_config_file(path)
    if overrides:
        config = deep_update(config, overrides)
    return check_config(config)


_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")


def is_hub_id(model: str) -> bool:
    """A Hugging Face hub id ('org/name') rather than a local path: no local file of that
    name, and the hub's form (a relative 'a/b' with no leading '.', '/' or '~')."""
    return not Path(model).exists() and bool(_HUB_ID.match(str(model)))


def check_paths(config: dict) -> None:
    """The files a checked config names exist (before any job is scheduled, not in
    `isocompute plan`, which may run before data and weights are fetched).

    A base model given as a Hugging Face hub id ('org/name') that is not a local
    directory is left to the hub or its cache.
    """
    pool = config["pool"]
    if pool["source"] == "file" and not Path(pool["path"]).is_file():
        raise ConfigError(f"config key 'pool.path': file not found: {pool['path']} "
                          f"(expected a parquet or jsonl file of problems)")
    model = config["base_model"]
    if model["source"] == "path":
        path = Path(model["path"]).expanduser()
        if not path.is_dir() and not is_hub_id(model["path"]):
            raise ConfigError(f"config key 'base_model.path': model directory not found: {model['path']} "
                              f"(expected a Hugging Face model directory or a hub id 'org/name')")


def deep_update(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in update.items():
        if isinstance(v, dict) and k in out and isinstance(out[k], dict):
            out[k] = deep_update(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def settings_differing(config: dict, defaults: dict, prefix: str = "") -> list[tuple[str, object]]:
    """(dotted key, value) of every leaf of a checked config that differs from `defaults` (a
    checked empty config: the schema's defaults), in the config's order; a list is one leaf."""
    out: list[tuple[str, object]] = []
    for key, value in config.items():
        name, default = f"{prefix}{key}", defaults.get(key) if isinstance(defaults, dict) else None
        if isinstance(value, dict) and value:
            out += settings_differing(value, default if isinstance(default, dict) else {}, f"{name}.")
        elif value != default:
            out.append((name, value))
    return out


def check_section(section: str, values: dict, schema: dict | None = None) -> dict:
    """One top-level section validated alone, as `check_config` validates it in a whole
    config: a copy with the schema's defaults filled; ConfigError naming `section.key`."""
    schema = schema or _packaged_schema()
    sub = {"type": "object", "properties": {section: schema["properties"][section]}, "$defs": schema.get("$defs", {})}
    instance = {section: copy.deepcopy(values)}
    errors = sorted(_Validator(sub).iter_errors(instance), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        raise ConfigError(_describe(errors[0], schema))
    return instance[section]
