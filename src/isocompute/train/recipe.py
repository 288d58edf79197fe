"""The training recipe of one grid cell (docs/methods.md section 3) as plain numbers.

The one place that derives a cell's learning rate, warm-up, regularisation and
evaluation schedule from the config. Both backends (local, verl) and
`isocompute plan` read a `Recipe`; none of them derives these values itself.
The evaluation schedule is shared by every run of a split: by default the
split's log-spaced compute points (`schedule`), so that runs of every
batch size are validated at the same compute. Pure: no torch, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from isocompute.errors import ConfigError
from isocompute.schedule import compute_schedule_steps

LR_EXPONENTS = {"sqrt": 0.5, "linear": 1.0, "constant": 0.0}


def scaled_lr(lr_base: float, rollouts_per_step: int, B_ref: int, scaling: str) -> float:
    """lr = lr_base * (B / B_ref)^p, p = 1/2 (sqrt), 1 (linear) or 0 (constant)."""
    if scaling not in LR_EXPONENTS:
        raise ValueError(f"lr scaling must be one of {sorted(LR_EXPONENTS)}, got {scaling!r}")
    return float(lr_base) * (rollouts_per_step / float(B_ref)) ** LR_EXPONENTS[scaling]


def warmup_lr(lr: float, step: int, warmup_steps: int) -> float:
    """Learning rate of update `step` (1-based): linear over the first warm-up updates, then constant.

    Update 1 already moves (lr / warmup_steps): unlike a schedule indexed from
    0, no step of the compute budget is spent at lr = 0.
    """
    if warmup_steps <= 0:
        return lr
    return lr * min(1.0, step / warmup_steps)


def evaluation_steps(M_max: int, K: int) -> tuple[int, ...]:
    """The paper's schedule: a validation point (and a checkpoint) at 0, every K-th step, and the last."""
    return tuple(sorted(set(range(0, M_max + 1, K)) | {M_max}))


def study_compute_range(cfg: dict, cell) -> tuple[float, float]:
    """(first, last) compute point of the schedule every run of `cell`'s split shares:
    train.eval_min_compute (default: the split's smallest batch) to the split's C_max.

    A variant's run is not one of the split's grid: its schedule spans its own batch
    to its own C_max. A train job is given the range its rule derived from the full
    config (its params' `schedule`, isocompute.jobs.train_params), not the grid."""
    if "schedule" in cfg:
        return float(cfg["schedule"]["min_compute"]), float(cfg["schedule"]["C_max"])
    spec = None if getattr(cell, "variant", "") else cfg["grid"].get(cell.split)
    c_max = float(spec["C_max"]) if spec else float(cell.C_max)
    lo = cfg["train"]["eval_min_compute"]
    if lo is None:
        lo = float(min(spec["B_p"]) * min(spec["n"])) if spec else float(cell.B_p * cell.n)
    if not 0 < lo <= c_max:
        raise ConfigError(f"config key 'train.eval_min_compute': expected a compute in (0, C_max = {c_max:g}] "
                          f"of grid.{cell.split}, got {lo:g}")
    return float(lo), c_max


def validation_steps(cfg: dict, cell) -> tuple[int, ...]:
    """The steps at which `cell` validates and checkpoints, under train.eval_schedule.

    compute: the split's compute points (eval_points_per_octave per doubling
    from study_compute_range), each at the run's nearest step, plus 0 and M_max.
    steps: every train.eval_interval steps, plus 0 and M_max.
    """
    t = cfg["train"]
    if t["eval_schedule"] == "steps":
        return evaluation_steps(cell.M_max, int(t["eval_interval"]))
    lo, c_max = study_compute_range(cfg, cell)
    points = int(round(math.log2(c_max / lo) * t["eval_points_per_octave"])) + 1
    return compute_schedule_steps(cell.B_p * cell.n, cell.M_max, points, min_compute=lo, c_max=c_max)


def probe_steps(cfg: dict, cell) -> dict[int, float]:
    """{step: nominal compute} of the interference probe: for each train.probe_at fraction
    of the split's C_max, the run's nearest step (at least 1, at most M_max). Every run
    records the nominal compute, so runs of every batch size are compared at the same C."""
    t = cfg["train"]
    if not t["probe_problems"]:
        return {}
    _, c_max = study_compute_range(cfg, cell)
    B = cell.B_p * cell.n
    return {min(max(1, int(math.floor(f * c_max / B + 0.5))), cell.M_max): f * c_max for f in t["probe_at"]}


def run_seed(cfg: dict, cell) -> int:
    """The seed a run trains with: the config's seed, plus the cell's seed replicate."""
    return int(cfg["seed"]) + int(getattr(cell, "replicate", 0))


MIN_EVALUATIONS = 3


def check_schedules(cfg: dict, cells) -> None:
    """Every run gets at least MIN_EVALUATIONS validation points (a sigmoid needs them)."""
    for cell in cells:
        steps = validation_steps(cfg, cell)
        if len(steps) < MIN_EVALUATIONS:
            key = ("train.eval_points_per_octave" if cfg["train"]["eval_schedule"] == "compute"
                   else "train.eval_interval")
            raise ConfigError(f"config key '{key}': run {cell.split}/{cell.name} ({cell.M_max} steps) would "
                              f"validate only at steps {list(steps)}; at least {MIN_EVALUATIONS} are needed")


# --- recipe variants (config `variants`) ------------------------------------------

def variant_config(cfg: dict, variant: str) -> dict:
    """The config variant `variant`'s runs train with: the study's, with its train overrides."""
    from isocompute.config import deep_update

    if variant not in cfg.get("variants", {}):
        raise ConfigError(f"no variant {variant!r} in the config's variants")
    return {**cfg, "train": deep_update(cfg["train"], cfg["variants"][variant]["train"])}


def cell_config(cfg: dict, cell) -> dict:
    """The config `cell` trains with: the study's for a grid cell, its variant's for a variant's."""
    variant = getattr(cell, "variant", "")
    return variant_config(cfg, variant) if variant else cfg


def check_variant_recipes(cfg: dict, cells) -> None:
    """What a variant's recipe needs of its cells: a decoupled baseline's gradient takes fewer
    rollouts per problem than are sampled (n_train < n)."""
    for cell in cells:
        decoupled = cell_config(cfg, cell)["train"]["decoupled_baseline"]
        if decoupled["enabled"] and decoupled["n_train"] >= cell.n:
            raise ConfigError(f"config key 'variants.{cell.variant}.train.decoupled_baseline.n_train': expected "
                              f"fewer than the n = {cell.n} rollouts sampled at {cell.split}/{cell.name}, got "
                              f"{decoupled['n_train']} (a plain run of n is the {cell.n}/{cell.n} baseline)")


@dataclass(frozen=True)
class Recipe:
    """What one grid cell trains with, beyond (B_p, n, M_max) themselves."""
    lr: float                      # peak learning rate, after B-scaling
    warmup_steps: int
    regularized: bool              # KL to the base model + entropy bonus (Easy), or neither
    kl_coef: float                 # 0.0 on unregularised splits
    entropy_coef: float            # 0.0 on unregularised splits
    eval_steps: tuple[int, ...]    # validation (and checkpoint) steps, 0 and M_max included
    seed: int                      # the run's training seed: config seed + the cell's replicate
    probe_steps: dict              # step -> nominal compute of the interference probe ({} = off)

    def lr_at(self, step: int) -> float:
        """The learning rate of update `step` (1-based), warm-up included."""
        return warmup_lr(self.lr, step, self.warmup_steps)

    def evaluates_at(self, step: int) -> bool:
        return step in self.eval_steps


def cell_recipe(cfg: dict, cell) -> Recipe:
    """The recipe of `cell` (a grid.Cell) under config `cfg` (checked, defaults filled)."""
    t = cfg["train"]
    regularized = cell.split in t["regularized_splits"]
    return Recipe(
        lr=scaled_lr(t["lr_base"], cell.B_p * cell.n, t["B_ref"], t["lr_scaling"]),
        warmup_steps=int(t["warmup_steps"]),
        regularized=regularized,
        kl_coef=float(t["kl_coef"]) if regularized else 0.0,
        entropy_coef=float(t["entropy_coef"]) if regularized else 0.0,
        eval_steps=validation_steps(cfg, cell),
        seed=run_seed(cfg, cell),
        probe_steps=probe_steps(cfg, cell),
    )
