"""Training backends, registered by name behind one interface.

A backend is a function `(cfg, cell, paths: RunPaths, stop_at_step=None, **hooks) -> summary`
that trains one grid cell to M_max steps (or checkpoints and stops at `stop_at_step`, a
rung of an adaptive sweep, keeping the full run's recipe), resuming from the run's own checkpoint,
and writes the shared run files of `isocompute.layout.RunFiles`. It reads its
recipe from `isocompute.train.recipe` and its identity from
`isocompute.train.identity`. Backends live in this package, one module (or
sub-package) per name; `train_run` imports only the configured one, so the
verl backend needs no torch on a login node and the local one no verl engine.

To add a backend: a module `isocompute.train.backends.<name>` whose entry
point is decorated with `@register_backend("<name>")`, and `<name>` in the
schema's `train.backend` enum.
"""

from __future__ import annotations

import importlib
import time
from typing import Callable

from isocompute.errors import ConfigError

_BACKENDS: dict[str, Callable] = {}

# What each backend checks of a study before any job (what it cannot run), as
# "module:function(cfg, cells)" of a light module (no torch, no engine), imported
# only for the configured backend.
CONFIG_CHECKS = {"verl": "isocompute.train.backends.verl.limits:check_study_cells"}


def register_backend(name: str):
    def decorate(fn: Callable) -> Callable:
        _BACKENDS[name] = fn
        return fn
    return decorate


def get_backend(name: str) -> Callable:
    """The entry point of backend `name`, importing its module on first use."""
    if name not in _BACKENDS:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
        if name not in _BACKENDS:
            raise ConfigError(f"config key 'train.backend': unknown backend {name!r}")
    return _BACKENDS[name]


def check_study(cfg: dict) -> list:
    """Every check a checked config allows before any job, in one place for the Snakefile and
    `isocompute check-config`: the files it names, a grid that keeps cells, a schedule that
    gives each run enough evaluations, and the configured backend's own limits, for the grid
    and for each recipe variant (with its recipe). Returns the grid's cells; raises
    ConfigError naming the key."""
    from isocompute.config import check_paths
    from isocompute.data.eval_sets import check_eval_sets
    from isocompute.grid import grid_cells, variant_cells
    from isocompute.train.recipe import check_schedules, check_variant_recipes, variant_config

    check_paths(cfg)
    check_eval_sets(cfg)
    cells = grid_cells(cfg)
    check_schedules(cfg, cells)
    check_backend = _backend_check(cfg["train"]["backend"])
    if check_backend is not None:
        check_backend(cfg, cells)
    variants = variant_cells(cfg)
    check_variant_recipes(cfg, variants)
    for name in sorted({c.variant for c in variants}):
        own = [c for c in variants if c.variant == name]
        try:
            check_schedules(variant_config(cfg, name), own)
        except ConfigError as exc:
            raise ConfigError(f"variant '{name}': {exc}") from None
        if check_backend is not None:
            check_backend(variant_config(cfg, name), own)
    return cells


def _backend_check(backend: str) -> Callable | None:
    spec = CONFIG_CHECKS.get(backend)
    if spec is None:
        return None
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def train_run(cfg: dict, cell, paths, stop_at_step: int | None = None, **hooks) -> dict:
    """Train one grid cell with the configured backend; returns the run summary (run.json, or a
    rung marker when `stop_at_step` stops it below M_max at a rung of an adaptive sweep)."""
    backend = cfg["train"]["backend"]
    entry = get_backend(backend)
    start = time.perf_counter()
    paths.marker.unlink(missing_ok=True)  # the run directory changes: the full run is not complete
    if stop_at_step is not None:
        hooks["stop_at_step"] = stop_at_step
    summary = entry(cfg, cell, paths, **hooks)
    return {"backend": backend, "split": cell.split, "B_p": cell.B_p, "n": cell.n,
            "replicate": getattr(cell, "replicate", 0), "M_max": cell.M_max,
            **({} if stop_at_step is None else {"stop_at_step": int(stop_at_step)}),
            "session_wall_s": time.perf_counter() - start, **(summary or {})}
