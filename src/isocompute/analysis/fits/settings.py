"""The analysis settings: one frozen, validated object from the config's `analysis`
section, with one name per setting, the schema key, from the config to the
figures. The CLI builds it (`from_config`, options mapped onto schema keys),
`run_analysis` reads it, `write_analysis` writes it as params.json
(`as_json`), and the figures, `recommend` and `compare` read it back
(`from_json`); the adaptive rule fits with it.

Validation is the schema's (`config.check_section`), so a value the config
refuses is refused here too. The method and the pooling are names of
registered strategies (`methods.METHODS`, `fits.pooled.POOLS`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from isocompute.analysis.fits.methods import Method, get_method
from isocompute.analysis.fits.sigmoid import FitGrid
from isocompute.config import check_section, schema_defaults

_D = schema_defaults("analysis")
SCHEMA_KEYS = tuple(_D)                   # the schema's `analysis` keys, in its order
BOOTSTRAP_STUDIES = ("fixed_B_p", "fixed_batch", "joint")
# Names params.json used before this object (read back when comparing older analyses).
LEGACY_NAMES = {"n_boot": "bootstrap", "extrapolate": "observed_range"}
DEFAULT_METRIC = f"avg@{schema_defaults('eval')['k']}"


@dataclass(frozen=True)
class AnalysisSettings:
    """Every setting of the analysis. The first block is the schema's `analysis` section
    (same names, same defaults, same checks); `metric` None becomes avg@4 and
    `observed_range` None the method's default (noise: True, paper: False), so the
    object holds what is in force. `seed` is the config's top-level seed (the bootstrap's).
    The last block has no config key: knobs of the code, fixed by a study."""

    method: str = _D["method"]
    metric: str | None = _D["metric"]
    bin_width: float = _D["bin_width"]
    ema_alpha: float | None = _D["ema_alpha"]
    min_compute: float | None = _D["min_compute"]
    grid_points: int = _D["grid_points"]
    window: int = _D["window"]
    bootstrap: int = _D["bootstrap"]
    ci: float = _D["ci"]
    extrapolate_fraction: float = _D["extrapolate_fraction"]
    observed_range: bool | None = _D["observed_range"]
    record_z: float = _D["record_z"]
    se_window: int = _D["se_window"]
    pool: str = _D["pool"]
    pool_degree: int = _D["pool_degree"]
    pool_alpha: float = _D["pool_alpha"]
    n_effect_alpha: float = _D["n_effect_alpha"]
    collapse_alpha: float = _D["collapse_alpha"]
    collapse_window: int = _D["collapse_window"]
    max_extrapolation: float = _D["max_extrapolation"]
    seed: int = 0
    # not in the config
    hist_bins: int = 10                                 # interference histograms (Fig. 11)
    optima_metrics: tuple[str, ...] = ("best@4", "worst@4")   # Fig. 8 and the appendix frontiers
    bootstrap_studies: tuple[str, ...] = ("fixed_B_p",)       # which studies get bootstrap intervals
    bootstrap_unit: str | None = None                   # 'points' or 'seeds' (None: seeds when a cell has several)
    fit_grid: FitGrid | None = None                     # None: the method's grid with the pool keys

    def __post_init__(self):
        section = check_section("analysis", {k: getattr(self, k) for k in SCHEMA_KEYS})
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed: expected an integer, got {self.seed!r}")
        if not isinstance(self.hist_bins, int) or self.hist_bins < 1:
            raise ValueError(f"hist_bins: expected a positive integer, got {self.hist_bins!r}")
        unknown = set(self.bootstrap_studies) - set(BOOTSTRAP_STUDIES)
        if unknown:
            raise ValueError(f"bootstrap_studies: expected some of {', '.join(BOOTSTRAP_STUDIES)}, got {sorted(unknown)}")
        if self.bootstrap_unit not in (None, "points", "seeds"):
            raise ValueError(f"bootstrap_unit: expected 'points', 'seeds' or None, got {self.bootstrap_unit!r}")
        strategy = get_method(section["method"])
        resolved = {"metric": section["metric"] or DEFAULT_METRIC,
                    "observed_range": strategy.observed_range if section["observed_range"] is None
                    else section["observed_range"],
                    "optima_metrics": tuple(self.optima_metrics), "bootstrap_studies": tuple(self.bootstrap_studies)}
        for key, value in resolved.items():
            object.__setattr__(self, key, value)

    @classmethod
    def from_config(cls, cfg: dict, **overrides) -> "AnalysisSettings":
        """From a checked config (its `analysis` section, `seed` and, for the default
        metric, `eval.k`), with `overrides` (schema keys, or `seed`) on top."""
        # Key by key, so that a job's config (job_config.JobConfig) names a key its rule did not pass.
        section = {k: overrides[k] if k in overrides else cfg["analysis"][k] for k in SCHEMA_KEYS}
        section["metric"] = section["metric"] or f"avg@{cfg['eval']['k']}"
        extra = {k: v for k, v in overrides.items() if k not in SCHEMA_KEYS}
        return cls(**section, **{"seed": cfg["seed"], **extra})

    @property
    def strategy(self) -> Method:
        """The registered method (`methods.get_method(self.method)`)."""
        return get_method(self.method)

    @property
    def grid(self) -> FitGrid:
        """The fit grid in force: `fit_grid`, else the method's with the pool keys."""
        if self.fit_grid is not None:
            return self.fit_grid
        return self.strategy.fit_grid(self.pool, self.pool_degree, self.pool_alpha, self.n_effect_alpha,
                                      self.collapse_alpha, self.collapse_window)

    def frontier_kw(self) -> dict:
        """The keywords of a frontier: its grid, and whether curves count beyond their runs' data."""
        return dict(grid_points=self.grid_points, extrapolate=not self.observed_range)

    def as_json(self) -> dict:
        """Plain values for params.json: every field by its name, the fit grid in force."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["optima_metrics"], out["bootstrap_studies"] = list(self.optima_metrics), list(self.bootstrap_studies)
        out["fit_grid"] = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self.grid).items()}
        return out

    @classmethod
    def from_json(cls, values: dict) -> "AnalysisSettings":
        """Read back `as_json` (other keys of params.json, e.g. split, are ignored); also
        params.json of older analyses (n_boot, extrapolate; no method key: the paper's)."""
        values = dict(values)
        if "method" not in values:
            values["method"] = "paper"
        if "extrapolate" in values and "observed_range" not in values:
            values["extrapolate"] = None if values["extrapolate"] is None else not values["extrapolate"]
        values = {LEGACY_NAMES.get(k, k): v for k, v in values.items()}
        known = {f.name for f in fields(cls)}
        kept = {k: v for k, v in values.items() if k in known}
        grid = kept.pop("fit_grid", None)
        settings = cls(**kept)
        if isinstance(grid, dict):
            grid = FitGrid(**{**grid, "b_bounds": tuple(grid["b_bounds"])})
        # The grid in force is written; it is an explicit `fit_grid` only when it is not the method's.
        return settings if grid is None or grid == settings.grid else replace(settings, fit_grid=grid)
