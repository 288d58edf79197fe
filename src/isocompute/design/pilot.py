"""A pilot, the finished study a new one is designed from (`isocompute design PILOT`): its fitted
curves, the truths its bootstrap allows, the run-to-run variation between its seeds, and the
design it ran. `read_pilot` is the only reader of disk here; it refuses a pilot it cannot use
with an InputError of one line that names what is missing.

PILOT is a split's analysis (results/<experiment>/analysis/<split>: tables/ and the
evals.parquet beside it), the analysis folder of an experiment (results/<experiment>/analysis,
with --split where it holds several), a tables folder itself, or an evaluation table, which is
then analysed here (the analysis' default settings, its bootstrap included).

Run-to-run variation (`run_to_run_sd`): where some cell of the pilot has 2+ seeds, the seeds'
rewards at matched evaluations over the upper half (in log compute) of each run: the mean
squared difference of two seeds, halved, less the binomial variance of one evaluation
(r (1 - r) / (problems x samples)), pooled over cells; its square root is the sd of a run about
its cell's curve beyond evaluation noise. With one seed per cell nothing measures it, and
RUN_SD_PRIOR is used, and said to be.

The pilot's evidence that n matters, with a run as the unit (`n_effect`): per B_p, each run's
reward interpolated (linear in log2 compute) at four points spread over the upper half of the
compute range every run of the B_p reached, and averaged; a one-way F-test of those run means
across n, its error the spread between a cell's seeds (so a run's own deviation, which moves its
whole curve, is not taken for an effect of n); the smallest p over the B_p, times their number
(Bonferroni). The analysis' own test of an effect of n compares curves fitted to evaluations,
whose errors within a run are not independent: on the reliability study's null truths it found an
effect in 6 of 16 pilots. This one needs 2+ seeds in some cell; with one seed per cell there is
none, and it says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from scipy import stats

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.inputs.read import read_evals
from isocompute.design.chain import analyse
from isocompute.design.costs import EVAL_SAMPLES
from isocompute.design.power import Design
from isocompute.design.truth import FittedTruth, usable_cells
from isocompute.errors import InputError

# A B_p's truth extrapolates in n along its runs' trend (FittedTruth: quadratic in log2 n); fewer
# runs than this leave the trend a line through two points or a constant, which no design should
# be judged on.
MIN_RUNS = 3
MIN_REPLICATES = 2
# The prior sd of a run's asymptote about its cell's, in reward, where the pilot has one seed per
# cell: an assumption, not a measurement. It is the size of the differences between n that the
# replication's steps tried to resolve at the top of their range (0.004-0.014 of fitted reward,
# docs/replication.md), so a design judged with it must resolve effects the size of run noise.
RUN_SD_PRIOR = 0.01
# The points per run at which n_effect reads its reward (module doc).
EFFECT_POINTS = 4
TABLES = "tables"
EVALS_FILE = "evals.parquet"


@dataclass(frozen=True)
class Pilot:
    """What a design is judged on: the pilot's point fits (`point`, whose null is the fitted null), one
    truth per usable bootstrap replicate (`replicates`), the sd of a run's reward about its cell's curve
    (`run_sd`, with `run_sd_from` saying how it was had), and the design the pilot ran (`design`)."""

    source: str
    split: str
    point: FittedTruth
    replicates: tuple[FittedTruth, ...]
    run_sd: float
    run_sd_from: str
    design: Design
    n_effect: tuple[float, int] | None = None

    def describe(self) -> str:
        if self.n_effect is None:
            effect = "no test between seeds: one seed per cell"
        else:
            p, tested = self.n_effect
            effect = f"p = {p:.3g} between seeds ({tested} B_p, Bonferroni)"
        return (f"pilot {self.source} ({self.split}): {self.design.describe()}; {len(self.replicates)} bootstrap "
                f"replicates; run-to-run sd {self.run_sd:.4f} ({self.run_sd_from}); evidence that n matters: {effect}")


def run_to_run_sd(evals: pd.DataFrame, metric: str = "avg@4") -> tuple[float, int] | None:
    """(sd, pairs of matched evaluations) of a run's reward about its cell's beyond evaluation noise,
    from cells with 2+ seeds (module doc); None where no cell has two."""
    if "seed" not in evals.columns or metric not in evals.columns:
        return None
    draws = (evals["problems"] * evals.get("samples", EVAL_SAMPLES)) if "problems" in evals.columns else None
    frame = evals.assign(_draws=np.nan if draws is None else draws)
    excess, pairs = [], 0
    for _, cell in frame[frame["compute"] > 0].groupby(["B_p", "n"]):
        if cell["seed"].nunique() < 2:
            continue
        log_c = np.log2(cell["compute"].to_numpy(dtype=float))
        upper = cell[log_c >= (log_c.min() + log_c.max()) / 2]
        wide = upper.pivot_table(index="step", columns="seed", values=metric).dropna()
        tries = upper.groupby("step")["_draws"].first().reindex(wide.index).to_numpy(dtype=float)
        x = wide.to_numpy(dtype=float)
        for a in range(x.shape[1] - 1):                    # neighbouring seeds: independent pairs
            d2 = (x[:, a] - x[:, a + 1]) ** 2 / 2
            r = (x[:, a] + x[:, a + 1]) / 2
            eval_var = np.where(np.isfinite(tries), r * (1 - r) / np.where(np.isfinite(tries), tries, 1), 0.0)
            excess.extend(d2 - eval_var)
            pairs += len(d2)
    if not pairs:
        return None
    return float(np.sqrt(max(0.0, float(np.mean(excess))))), pairs


def _run_means(runs: pd.DataFrame, metric: str, points: int = EFFECT_POINTS) -> pd.DataFrame | None:
    """One B_p's runs (B_p, n, seed, compute, metric): each run's mean reward at `points` log2-compute points
    over the upper half of the range every run reached (module doc); None where the runs share no range."""
    log_c = np.log2(runs["compute"].to_numpy(dtype=float))
    ranges = runs.assign(_lc=log_c).groupby(["n", "seed"])["_lc"].agg(["min", "max"])
    top, bottom = float(ranges["max"].min()), float(ranges["min"].max())
    if not top > bottom:
        return None
    grid = np.linspace((bottom + top) / 2, top, points)
    rows = []
    for (n, seed), run in runs.assign(_lc=log_c).sort_values("compute").groupby(["n", "seed"]):
        rows.append({"n": n, "seed": seed, "mean": float(np.mean(np.interp(grid, run["_lc"], run[metric])))})
    return pd.DataFrame(rows)


def n_effect(evals: pd.DataFrame, metric: str = "avg@4") -> tuple[float, int] | None:
    """(p, B_p tested) of the run-level test that n matters (module doc), or None where no B_p has a cell
    with 2+ seeds."""
    if "seed" not in evals.columns or metric not in evals.columns:
        return None
    ps = []
    read = evals[(evals["compute"] > 0) & np.isfinite(evals[metric].to_numpy(dtype=float))]
    for _, runs in read.groupby("B_p"):
        means = _run_means(runs, metric)
        if means is None:
            continue
        groups = [g["mean"].to_numpy() for _, g in means.groupby("n")]
        if len(groups) < 2 or len(means) - len(groups) < 1:
            continue
        p = float(stats.f_oneway(*groups).pvalue)
        ps.append(p if np.isfinite(p) else 1.0)     # no spread at all between n: no evidence
    return (min(1.0, min(ps) * len(ps)), len(ps)) if ps else None


def pilot_design(fits: pd.DataFrame, evals: pd.DataFrame | None, split: str) -> Design:
    """The design the pilot ran, as `Design` reads it: its B_p and n, its C_max (the largest compute
    evaluated), its validation size (the evaluations' problems, else 100), its evaluations per doubling
    (the median cell's over its compute range, per seed) and its seeds per cell."""
    f = fits[np.isfinite(fits["compute_min"]) & (fits["compute_min"] > 0)] if "compute_min" in fits else fits
    per_doubling = 2
    if len(f) and "n_evals" in f.columns:
        span = np.log2(f["compute_max"].to_numpy(dtype=float) / f["compute_min"].to_numpy(dtype=float))
        rate = (f["n_evals"].to_numpy(dtype=float) - 1) / np.maximum(span, 1e-9)
        per_doubling = int(max(1, round(float(np.median(rate[span > 0])) if (span > 0).any() else 2)))
    problems, seeds = 100, 1
    if evals is not None:
        if "problems" in evals.columns:
            problems = int(evals["problems"].median())
        if "seed" in evals.columns:
            seeds = int(evals.groupby(["B_p", "n"])["seed"].nunique().max())
            per_doubling = max(1, round(per_doubling / seeds))      # fits.csv counts the evaluations of every seed
    c_max = float(2.0 ** np.ceil(np.log2(float(fits["compute_max"].max()))))
    B_p = tuple(sorted(int(b) for b in fits["B_p"].unique()))
    n = tuple(sorted(int(x) for x in fits["n"].unique()))
    B_max = int((fits["B_p"] * fits["n"]).max())
    return Design("pilot", split=split, B_p=B_p, n=n, c_max=c_max, problems=problems, per_doubling=per_doubling,
                  seeds=seeds, B_max=B_max)


def pilot_from_tables(fits: pd.DataFrame, boot: pd.DataFrame, evals: pd.DataFrame | None, *, split: str,
                      source: str, metric: str = "avg@4", run_sd: float | None = None) -> Pilot:
    """The pilot of a split's tables (fits, bootstrap_fits, and its evaluation table when there is one);
    InputError naming `source` when it cannot be used. `run_sd`, when given, replaces what the seeds say."""
    usable = usable_cells(fits)
    for B_p in sorted(fits["B_p"].unique()):
        runs = usable[usable["B_p"] == B_p]
        if len(runs) < MIN_RUNS:
            raise InputError(f"{source}: fewer than {MIN_RUNS} usable runs in B_p {int(B_p)} ({len(runs)} fitted "
                             f"with status ok or flat and a midpoint): its trend in n cannot be extrapolated")
    point = FittedTruth.from_fits(fits, source=f"{source}/fits.csv")
    replicates = []
    for r, rows in boot.groupby("replicate", sort=True):
        try:
            replicates.append(FittedTruth.from_fits(rows, source=f"{source}/bootstrap_fits.csv replicate {r}"))
        except ValueError:
            continue                                         # a replicate with no usable fit: not a truth
    if len(replicates) < MIN_REPLICATES:
        raise InputError(f"{source}/bootstrap_fits.csv: {len(replicates)} usable replicates (at least "
                         f"{MIN_REPLICATES} needed): run the analysis with analysis.bootstrap > 0")
    measured = None if evals is None else run_to_run_sd(evals, metric)
    if run_sd is not None:
        sd, how = float(run_sd), "given"
    elif measured is not None:
        sd, how = measured[0], f"measured from {measured[1]} matched pairs of seeds' evaluations"
    else:
        sd, how = RUN_SD_PRIOR, "a prior: the pilot has one seed per cell"
    effect = None if evals is None else n_effect(evals, metric)
    return Pilot(source, split, point, tuple(replicates), sd, how, pilot_design(fits, evals, split), effect)


def _tables_folders(path: Path, split: str | None) -> tuple[Path, str]:
    """The tables folder of PILOT and its split (module doc: the forms PILOT takes)."""
    if (path / "fits.csv").is_file() or (path / "bootstrap_fits.csv").is_file():
        return path, split or (path.parent.name if path.name == TABLES else path.name)
    if (path / TABLES).is_dir():
        return path / TABLES, split or path.name
    splits = sorted(p.name for p in path.iterdir() if (p / TABLES).is_dir()) if path.is_dir() else []
    if not splits:
        raise InputError(f"{path}: no analysis tables (expected results/<experiment>/analysis, with "
                         f"<split>/{TABLES}/fits.csv, a tables folder, or an evaluation table)")
    if split is None and len(splits) > 1:
        raise InputError(f"{path}: splits {', '.join(splits)}: choose one with --split")
    split = split or splits[0]
    if split not in splits:
        raise InputError(f"{path}/{split}/{TABLES}: missing: the analysis has splits {', '.join(splits)}")
    return path / split / TABLES, split


def read_pilot(path, split: str | None = None, *, metric: str = "avg@4", run_sd: float | None = None,
               bootstrap: int | None = None) -> Pilot:
    """The pilot at `path` (module doc), checked: InputError of one line naming what is missing.
    An evaluation table is analysed here with `bootstrap` replicates (default: the analysis')."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder (expected a finished study's analysis folder, "
                         "results/<experiment>/analysis, or an evaluation table)")
    if path.is_file():
        evals = read_evals(path)
        if "split" in evals.columns and evals["split"].nunique() > 1:
            names = sorted(evals["split"].astype(str).unique())
            if split is None:
                raise InputError(f"{path}: splits {', '.join(names)}: choose one with --split")
            evals = evals[evals["split"].astype(str) == split]
        settings = AnalysisSettings() if bootstrap is None else AnalysisSettings(bootstrap=bootstrap)
        if settings.bootstrap < MIN_REPLICATES:
            raise InputError(f"--pilot-bootstrap {settings.bootstrap}: at least {MIN_REPLICATES} replicates needed")
        out = analyse(evals.drop(columns=["split"], errors="ignore"), settings, budgets=())
        return pilot_from_tables(out["fits"], out["bootstrap_fits"], out["evals"], split=split or "pilot",
                                 source=str(path), metric=metric, run_sd=run_sd)
    tables, split = _tables_folders(path, split)
    for name, why in (("fits.csv", f"re-run `isocompute analyze` into {tables}"),
                      ("bootstrap_fits.csv", "run the analysis with analysis.bootstrap > 0")):
        if not (tables / name).is_file():
            raise InputError(f"{tables / name}: missing: {why}")
    fits, boot = pd.read_csv(tables / "fits.csv"), pd.read_csv(tables / "bootstrap_fits.csv")
    for name, frame in (("fits.csv", fits), ("bootstrap_fits.csv", boot)):
        need = ("B_p", "n", "status", "R0", "A", "B", "C_mid") + (("replicate",) if name == "bootstrap_fits.csv" else ())
        missing = [c for c in need if c not in frame.columns]
        if missing:
            raise InputError(f"{tables / name}: missing column {missing[0]!r}: re-run `isocompute analyze`")
    beside = tables.parent / EVALS_FILE
    evals = pd.read_parquet(beside) if beside.is_file() else None
    return pilot_from_tables(fits, boot, evals, split=split, source=str(tables), metric=metric, run_sd=run_sd)
