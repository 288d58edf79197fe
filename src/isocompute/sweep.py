"""The adaptive sweep's rungs (`sweep.mode: adaptive`): the compute each
rung of a split reaches, the step each grid cell stops at, and the decisions
file one rung's decision writes and the next rung reads.

Pure, and light to import (rules/common.smk reads it at every parse): the
pruning rule itself is `analysis.adaptive.decide`, run by `isocompute
adaptive-decide` (rules/sweep.smk); the rung budgets (`SweepSettings.budgets`) need
only the light `schedule` and `config` (no pandas or scipy at parse time). A cell's recipe
is its full run's at every rung (`train.recipe`), so its rungs are prefixes of one run,
resumed, never retrained.

`SweepSettings` is the sweep section as one frozen object, twin of the analysis'
`AnalysisSettings`: the schema checks it (`config.check_section`), the rule
(`analysis.adaptive`), the rung budgets and `replay-adaptive`'s options (`SWEEP_OPTIONS`)
all take it, so every check of a sweep setting is the schema's.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from isocompute.config import check_section, schema_defaults
from isocompute.errors import ConfigError
from isocompute.schedule import first_rung_below_one

_D = schema_defaults("sweep")
SWEEP_KEYS = tuple(_D)                       # the schema's `sweep` keys, in its order
RULE_KEYS = tuple(k for k in SWEEP_KEYS if k != "mode")   # what the pruning rule reads
# replay-adaptive's options of the sweep settings: schema key (the option's dest) -> (flag, type,
# help); the default shown is the schema's. The one table of the names.
SWEEP_OPTIONS = {
    "eta": ("--eta", float, "compute ratio between rungs"),
    "rungs": ("--rungs", int, "number of rungs, the last at C_max"),
    "z": ("--z", float, "band width in standard errors"),
    "neighbours": ("--neighbours", int, "grid steps in log2 n around n* that always continue"),
    "frontier": ("--frontier", str, "the frontier a run must reach: its B_p's (fixed_B_p), or all cells' (joint)"),
}


@dataclass(frozen=True)
class SweepSettings:
    """Every setting of the sweep: the schema's `sweep` section (same names, defaults, checks)."""

    mode: str = _D["mode"]
    eta: float = _D["eta"]
    rungs: int = _D["rungs"]
    z: float = _D["z"]
    neighbours: int = _D["neighbours"]
    min_evals: int = _D["min_evals"]
    frontier: str = _D["frontier"]
    grid_points: int = _D["grid_points"]
    bands: str = _D["bands"]
    mature_width: float = _D["mature_width"]    # legacy: bands pooled only
    epsilon: float = _D["epsilon"]
    epsilon_of: str = _D["epsilon_of"]
    reach: float = _D["reach"]
    inflation: float = _D["inflation"]
    run_effects: bool = _D["run_effects"]
    b_slope: bool = _D["b_slope"]
    insurance: float = _D["insurance"]
    revive: bool = _D["revive"]

    def __post_init__(self):
        check_section("sweep", asdict(self))

    @classmethod
    def from_config(cls, cfg: dict, **overrides) -> "SweepSettings":
        """From a checked config's `sweep` section, with `overrides` (schema keys) on top."""
        return cls(**{k: overrides[k] if k in overrides else cfg["sweep"][k] for k in SWEEP_KEYS})

    @classmethod
    def of(cls, params: "SweepSettings | dict | None" = None) -> "SweepSettings":
        """`params` as settings: settings as they are; a dict of sweep keys over the schema's
        defaults (an unknown key: ConfigError naming it); None: the defaults."""
        if isinstance(params, cls):
            return params
        values = dict(params or {})
        unknown = [k for k in values if k not in SWEEP_KEYS]
        if unknown:
            raise ConfigError(f"config key 'sweep.{unknown[0]}': not a sweep key (expected one of: "
                              f"{', '.join(SWEEP_KEYS)})")
        return cls(**values)

    def regret(self, rise: float) -> float:
        """The regret the sweep accepts where training adds `rise` (the metric's units): epsilon, or
        epsilon x rise (a negative rise counts as 0) when epsilon_of is rise."""
        if self.epsilon_of == "reward":
            return float(self.epsilon)
        return float(self.epsilon) * max(float(rise), 0.0) if math.isfinite(rise) else float("nan")

    def rule(self) -> dict:
        """The rule's keys and values (the replay's `params`)."""
        return {k: getattr(self, k) for k in RULE_KEYS}

    def budgets(self, c_max: float) -> list[float]:
        """Compute of each rung: c_max / eta^(rungs - 1), ..., c_max / eta, c_max (`rungs` values)."""
        if not (c_max > 0 and math.isfinite(c_max)):
            raise ValueError(f"c_max must be a finite number > 0, got {c_max!r}")
        if first_rung_below_one(c_max, self.eta, self.rungs):
            raise ValueError(f"the first rung, C_max / eta^(rungs - 1) = {c_max:g} / {self.eta:g}^{self.rungs - 1}, "
                             f"is below one rollout: fewer rungs or a smaller eta")
        return [float(c_max) / float(self.eta) ** (self.rungs - 1 - r) for r in range(self.rungs)]

# The columns of a rung's decisions file, before the rule's own (analysis.adaptive.DECISION_COLUMNS).
DECISION_KEYS = ["split", "run", "B_p", "n", "seed", "rung", "rung_compute", "stop_step"]


def is_adaptive(cfg: dict) -> bool:
    return cfg.get("sweep", {}).get("mode", "grid") == "adaptive"


def rung_computes(cfg: dict, c_max: float) -> list[float]:
    """The compute of each rung, the last at `c_max` (sweep.eta, sweep.rungs)."""
    return SweepSettings.from_config(cfg).budgets(float(c_max))


def decision_rungs(cfg: dict) -> range:
    """The rungs that end in a decision: all but the last, where the survivors finish."""
    return range(int(cfg["sweep"]["rungs"]) - 1)


def last_rung(cfg: dict) -> int:
    return int(cfg["sweep"]["rungs"]) - 1


def stop_step(cell, compute: float) -> int:
    """The step a rung of `compute` stops `cell` at: the last step whose compute is within the
    rung's (the rule at the rung then sees every evaluation the cell made), at least one step,
    at most M_max (the last rung's)."""
    step = int(math.floor(compute / cell.rollouts_per_step * (1 + 1e-9)))
    return min(cell.M_max, max(1, step))


def rung_stop_steps(cfg: dict, cell) -> list[int]:
    """The stop step of each rung of `cell` (the last is M_max)."""
    return [stop_step(cell, c) for c in rung_computes(cfg, cell.C_max)]


def write_decisions(path: Path | str, rows: list[dict], columns: list[str]) -> None:
    """A rung's decisions as CSV (the caller writes atomically)."""
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def continuing_runs(path: Path | str) -> set[str]:
    """The runs (bp{B_p}_n{n}[_s{r}]) a rung's decisions file lets go on to the next rung."""
    with open(path, newline="") as fh:
        return {row["run"] for row in csv.DictReader(fh) if row["continue"].strip().lower() == "true"}


# --- the sweep's DAG, rung by rung (rules/common_sweep.smk) ------------------------------
# `going(split, rung)` is the set of runs the decision at `rung` let go on (in Snakemake:
# the checkpoint's decisions file, read with continuing_runs): the runs trained to the rung
# that go on, and those stopped earlier that the safety net (sweep.revive) resumes. These
# functions are pure over it, so the DAG logic is tested without Snakemake.

def cells_at_rung(cells, split: str, rung: int, going) -> list:
    """The cells of `split` trained to `rung`: all at rung 0, then those the decision at the rung
    below let go on or resumed."""
    out = [c for c in cells if c.split == split]
    if rung == 0:
        return out
    names = going(split, rung - 1)
    return [c for c in out if c.name in names]


def last_rungs(cells, split: str, rung: int, going) -> list[tuple]:
    """(cell, r) for each cell of `split`: the last rung r <= `rung` it was trained to (its
    checkpoint and evaluations there are its latest; every cell trains to rung 0)."""
    last = {c.name: 0 for c in cells if c.split == split}
    for r in range(1, rung + 1):
        last.update((c.name, r) for c in cells_at_rung(cells, split, r, going))
    return [(c, last[c.name]) for c in cells if c.split == split]


def stopped_before(cells, split: str, rung: int, going) -> list[tuple]:
    """(cell, r) of the cells of `split` not trained to `rung`, with the last rung r they were
    trained to: their evaluations count for the decision at `rung`, and a resumed one goes on
    from its checkpoint at r."""
    return [(c, r) for c, r in last_rungs(cells, split, rung, going) if r < rung]


def where_runs_ended(cfg: dict, cells, split: str, going) -> list[tuple]:
    """(cell, rung) of each run of `split` where the sweep ended it: the last rung it was trained
    to, or None for a run that went on to M_max (the last rung is the full run)."""
    final = last_rung(cfg)
    return [(c, None if r == final else r) for c, r in last_rungs(cells, split, final, going)]
