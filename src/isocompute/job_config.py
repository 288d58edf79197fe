"""A job's config: exactly the sections its rule passed (isocompute.jobs builds them).

`job_config` checks the sections against their part of the schema (config.py's
validator: types, enums, bounds, closed objects) and fills nothing in. Reading a
key the rule did not pass raises NotGiven naming it, where a config filled with
the schema's defaults would silently answer with a default. A key the schema
gives no default is optional: absent in a full config too, `.get` returns the
caller's default for it, as for any dict.
"""

from __future__ import annotations

import copy

from isocompute.config import _describe, _packaged_schema, _Strict
from isocompute.errors import ConfigError

# Facts a job is given that are not config keys a user writes: derived by the param
# builders (isocompute.jobs) from the full config, checked here by shape.
JOB_FACTS = {
    # The compute range of the split's shared evaluation schedule (train/recipe.py).
    "schedule": {"type": "object", "additionalProperties": False, "required": ["min_compute", "C_max"],
                 "properties": {"min_compute": {"type": "number", "exclusiveMinimum": 0},
                                "C_max": {"type": "number", "exclusiveMinimum": 0}}},
}


class NotGiven(ConfigError):
    """A job read a config key its rule did not pass (not a KeyError: `.get` must not hide it)."""


def _resolve(node, root: dict):
    while isinstance(node, dict) and "$ref" in node:
        target = root
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node if isinstance(node, dict) else {}


def _child(node: dict, key, root: dict) -> dict:
    """The schema of `key` of an object whose schema is `node` ({} when unknown)."""
    props = node.get("properties", {})
    if key in props:
        return _resolve(props[key], root)
    return _resolve(node.get("additionalProperties"), root)


class JobConfig(dict):
    """The config a job was given, and nothing else. Nested mappings are JobConfigs too
    (each knows its schema); values in lists stay plain."""

    def __init__(self, data: dict, where: str = "", schema: dict | None = None, root: dict | None = None):
        root = _packaged_schema() if root is None else root
        schema = root if schema is None else schema
        super().__init__({k: JobConfig(v, _join(where, k), _child(schema, k, root), root) if isinstance(v, dict)
                          else v for k, v in data.items()})
        self.where, self.schema, self.root = where, schema, root

    def _not_given(self, key) -> NotGiven:
        given = f"only {sorted(self)} of '{self.where}'" if self.where else f"only the sections {sorted(self)}"
        return NotGiven(f"config key '{_join(self.where, key)}' was not given to this job: its rule passed "
                        f"{given}; pass it in the rule's params (isocompute.jobs) instead of reading a default")

    def __getitem__(self, key):
        if not dict.__contains__(self, key):
            raise self._not_given(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        """The value; for an absent key the schema gives a default to, NotGiven (the rule did
        not pass it); for an absent optional key, `default`."""
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if "default" in _child(self.schema, key, self.root) or key in JOB_FACTS and not self.where:
            raise self._not_given(key)
        return default

    def __deepcopy__(self, memo):
        return JobConfig(copy.deepcopy(dict(self), memo), self.where, self.schema, self.root)

    def __reduce__(self):
        return (JobConfig, (dict(self), self.where, self.schema, self.root))


def _join(where: str, key) -> str:
    return f"{where}.{key}" if where else str(key)


def job_config(sections: dict, schema: dict | None = None) -> JobConfig:
    """The config of a job from the sections its rule passed, each checked against its part of
    the schema (types, enums, bounds, closed objects) but filled with nothing; JOB_FACTS are
    checked by shape. Raises ConfigError naming the first bad key."""
    schema = schema or _packaged_schema()
    if not isinstance(sections, dict):
        raise ConfigError(f"job params: expected a mapping of config sections, got {type(sections).__name__}")
    props = {**schema["properties"], **JOB_FACTS}
    unknown = sorted(set(sections) - set(props))
    if unknown:
        raise ConfigError(f"config key '{unknown[0]}': unknown key (expected one of: {', '.join(sorted(props))})")
    # The whole schema (its $refs point into it), with the job's facts: a section not given is
    # simply absent (the top level requires none), and nothing is filled in.
    sub = {**schema, "properties": props}
    errors = sorted(_Strict(sub).iter_errors(sections),
                    key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        raise ConfigError(_describe(errors[0], schema))
    return JobConfig(copy.deepcopy(sections), schema={**schema, "properties": props}, root=schema)
