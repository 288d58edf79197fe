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
point is decorated with `@register_backend("<name>")` (the one `Registry` of
strategies, as the analysis' methods and pools), and `<name>` in the schema's
`train.backend` enum. `train_run` checks what every backend is given (a rung's stop
step) before calling it.
"""

from __future__ import annotations

import importlib
import time
from typing import Callable

from isocompute.errors import ConfigError, InputError
from isocompute.registry import Registry

# The backends by config value; a backend's module is imported when it is first asked for.
BACKENDS = Registry("backend", key="train.backend", error=ConfigError, package=__name__)
register_backend, get_backend = BACKENDS.register, BACKENDS.get

# What each backend checks of a study before any job (what it cannot run), as
# "module:function(cfg, cells)" of a light module (no torch, no engine), imported
# only for the configured backend.
CONFIG_CHECKS = {"verl": "isocompute.train.backends.verl.limits:check_study_cells"}


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


def stop_step_within(stop_at_step: int, M_max: int) -> int:
    """A rung's stop step (`--stop-at-step`), checked: 0 < stop <= M_max. The one check of it,
    before any backend (`train_run`) and before a verl command is printed (`verl-command`)."""
    if not 0 < int(stop_at_step) <= M_max:
        raise InputError(f"--stop-at-step: expected a step in [1, M_max = {M_max}], got {stop_at_step}")
    return int(stop_at_step)


def train_run(cfg: dict, cell, paths, stop_at_step: int | None = None, **hooks) -> dict:
    """Train one grid cell with the configured backend; returns the run summary (run.json, or a
    rung marker when `stop_at_step` stops it below M_max at a rung of an adaptive sweep). The
    backend is given a checked `stop_at_step` (`stop_step_within`) or none."""
    backend = cfg["train"]["backend"]
    entry = get_backend(backend)
    if stop_at_step is not None:
        stop_at_step = stop_step_within(stop_at_step, cell.M_max)
        hooks["stop_at_step"] = stop_at_step
    start = time.perf_counter()
    paths.marker.unlink(missing_ok=True)  # the run directory changes: the full run is not complete
    summary = entry(cfg, cell, paths, **hooks)
    return {"backend": backend, "split": cell.split, "B_p": cell.B_p, "n": cell.n,
            "replicate": getattr(cell, "replicate", 0), "M_max": cell.M_max,
            **({} if stop_at_step is None else {"stop_at_step": stop_at_step}),
            "session_wall_s": time.perf_counter() - start, **(summary or {})}
