"""Whether `isocompute design`'s assurance is calibrated: on synthetic pilots drawn from known truths,
do designs with predicted assurance p establish their claim about p of the time?

Each pilot is a known truth of one shape (`SHAPES`, strata of `analysis.adaptive.strata` drawn for
the pilot's grid, stated over its C_max x 2^TRUTH_DOUBLINGS), with a true run-to-run sd drawn in
`RUN_SD`. The pilot design (`PILOT`) is run on it (`assurance.simulate_study`: two seeds per cell,
so the tool measures the run-to-run sd itself), analysed by the analysis' chain and read as
`isocompute design` reads a pilot (`pilot.pilot_from_tables`); a pilot the tool refuses
(InputError) is counted and reported, not dropped. For each candidate design (`candidates`: the
tool's default four, the pilot's own, C x4, val x4 and both):

  predicted  `assurance.assess`'s assurance of each claim (rises, determined, U), from the pilot alone,
             as the tool prints it (recalibrated, `recalibrate.MEASURED`); predicted_raw the share
             of the simulated studies before the map, and studies how many they were
  observed   the design run on the known truth, with the same run-to-run sd and fresh noise
             (`outcomes` times), analysed by the same chain (by default with the same bootstrap),
             judged by `assurance.judge`: 0/1 per claim

`reliability_table` bins the predicted assurance (`BINS`) and gives, per claim and bin, the designs,
their mean prediction, the observed success rate and its Clopper-Pearson 95% interval over the
outcomes (`chain.rate`); a bin with at least `MIN_DESIGNS` designs is judged: is the mean prediction
inside the interval? `calibration` pools each claim, or each claim and shape (mean predicted against
observed, Brier score, and how often the truth itself rises over the compared range).

Seeds, all fixed: truth seeds from FIRST_TRUTH (3000 on: used nowhere else in the project), seed s of
shape SHAPES[s mod 6]; the pilot's noise seed is its truth seed; assess's are s * 100003 + 2 i
(Plan.seed = s); the outcomes' s * 100003 + OUTCOME_SEEDS + 100 j + k (design j, outcome k), apart
from both. benchmarks/bench_design_reliability.py prints the tables.
"""

from __future__ import annotations

import logging
import warnings
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isocompute.analysis.adaptive.strata import STRATA, draw_truth
from isocompute.analysis.fits.progress import progress
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.design.assurance import CLAIMS, Plan, assess, default_designs, judge, simulate_study
from isocompute.design.chain import analyse, calibrated_p, rate
from isocompute.design.pilot import MIN_REPLICATES, Pilot, pilot_from_tables
from isocompute.design.power import Design
from isocompute.design.recalibrate import Recalibration, fit
from isocompute.errors import InputError

# rising (n* climbs inside the grid early, mid, or is still climbing at C_max), late (the winner
# leads only in the last two doublings), falling (n* falls with compute), null (n does not matter)
SHAPES = ("early", "mid", "climbing", "late", "falling", "null")
# The strata a sigmoid per run can express (`assurance.simulate_study`): not a collapse, a second rise,
# or correlated evaluation errors.
SIMULATED = tuple(s for s in STRATA if s not in ("unstable", "late_rise", "correlated"))
RUN_SD = (0.005, 0.02)
PILOT = Design("pilot", B_p=(8,), n=(2, 4, 8, 16, 32), c_max=2.0 ** 13, problems=100, per_doubling=2, seeds=2)
# The strata state a shape over a C_max, and put the smallest n's midpoint 3-14 doublings below it.
# Stated over the pilot's C_max x 2^4, the midpoints lie between 2^-10 and 2x the pilot's C_max, most
# rises inside its evaluations (from 2^4 rollouts); over the pilot's own C_max most curves would rise
# before their first evaluation, leaving nothing to find. A 'late' truth's winner at C_max x 2^4 then
# takes the lead beyond every candidate's reach (C x4 at most); 'mid' inside C x4's, 'early' the pilot's.
TRUTH_DOUBLINGS = 4
FIRST_TRUTH = 3000
OUTCOME_SEEDS = 50_000
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
MIN_DESIGNS = 20


@dataclass(frozen=True)
class Study:
    """How the reliability study runs: `pilots` known truths (seeds from `first_truth`, seed s of shape
    shapes[s mod len(shapes)]), each analysed with `pilot_bootstrap` replicates; each candidate's
    assurance from `draws` truths of the pilot's bootstrap, assess's studies analysed with `bootstrap`
    replicates; `outcomes` real runs per design, analysed with `outcome_bootstrap` (default: `bootstrap`,
    so that prediction and outcome are judged alike; the analysis' own 200 asks whether the tool's
    fewer replicates predict a real study's analysis)."""

    pilots: int = 48
    draws: int = 20
    bootstrap: int = 10
    pilot_bootstrap: int = 20
    outcomes: int = 1
    outcome_bootstrap: int | None = None
    first_truth: int = FIRST_TRUTH
    shapes: tuple[str, ...] = SHAPES
    pilot: Design = PILOT

    def __post_init__(self):
        for name, least in (("pilots", 1), ("draws", 1), ("bootstrap", 2), ("pilot_bootstrap", MIN_REPLICATES),
                            ("outcomes", 1), ("outcome_bootstrap", 2)):
            if getattr(self, name) is not None and getattr(self, name) < least:
                raise ValueError(f"{name} {getattr(self, name)}: must be at least {least}")
        if 2 * self.draws >= OUTCOME_SEEDS or self.outcomes > 100:
            raise ValueError(f"draws {self.draws}, outcomes {self.outcomes}: the seeds of assess and the outcomes "
                             f"would meet (module doc)")
        unknown = [s for s in self.shapes if s not in SIMULATED]
        if unknown or not self.shapes:
            raise ValueError(f"shape {unknown[0] if unknown else ''!r}: expected some of {', '.join(SIMULATED)} "
                             "(strata a sigmoid per run can express)")

    def describe(self) -> str:
        last = self.first_truth + self.pilots - 1
        return (f"{self.pilots} pilots (truth seeds {self.first_truth}-{last}; shapes {', '.join(self.shapes)} in "
                f"turn; true run-to-run sd in [{RUN_SD[0]:g}, {RUN_SD[1]:g}]): {self.pilot.describe()}, analysed with "
                f"{self.pilot_bootstrap} bootstrap replicates; candidates "
                f"{', '.join(d.name for d in candidates(self.pilot))}; "
                f"assurance from {self.draws} draws, its studies analysed with {self.bootstrap} replicates; "
                f"{self.outcomes} outcome(s) per design, analysed with {self.outcome_replicates} replicates")

    @property
    def outcome_replicates(self) -> int:
        return self.bootstrap if self.outcome_bootstrap is None else self.outcome_bootstrap

    def tasks(self) -> list[tuple["Study", int]]:
        return [(self, self.first_truth + i) for i in range(self.pilots)]

    def shape(self, truth_seed: int) -> str:
        return self.shapes[truth_seed % len(self.shapes)]          # a seed's shape whatever the first seed


def known_truth(shape: str, truth_seed: int, d: Design = PILOT, doublings: int = TRUTH_DOUBLINGS) -> tuple:
    """(params(B_p, n), true run-to-run sd, the strata's Truth) of a truth of `shape` drawn for design
    `d`'s grid and its C_max x 2^`doublings` (`strata.draw_truth`); the sd drawn uniformly in RUN_SD."""
    truth = draw_truth(shape, truth_seed, b_ps=d.B_p, ns=d.n, c_max=d.c_max * 2.0 ** doublings)
    run_sd = float(np.random.default_rng([truth_seed, 53]).uniform(*RUN_SD))
    return (lambda B_p, n: truth.params[(B_p, n)]), run_sd, truth


def analysed(d: Design, params, seed: int, run_sd: float, bootstrap: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analyse(simulate_study(d, params, seed, run_sd), AnalysisSettings(bootstrap=bootstrap),
                       budgets=(d.c_max,))


def synthetic_pilot(d: Design, params, run_sd: float, seed: int, bootstrap: int, source: str) -> Pilot:
    """The pilot `isocompute design` would read from design `d` run on the truth `params` (noise `seed`):
    its tables analysed with `bootstrap` replicates; InputError where the tool refuses it."""
    return pilot_of(analysed(d, params, seed, run_sd, bootstrap), d, source)


def pilot_of(out: dict, d: Design, source: str) -> Pilot:
    """The pilot `isocompute design` reads from the analysed tables `out` of design `d`."""
    return pilot_from_tables(out["fits"], out["bootstrap_fits"], out["evals"], split=d.split, source=source)


def outcome(d: Design, params, run_sd: float, seed: int, bootstrap: int) -> dict:
    """Design `d` run for real on the known truth `params` (run-to-run sd `run_sd`, noise `seed`), analysed
    with `bootstrap` replicates and judged as assess judges its simulated studies (`assurance.judge`)."""
    return judge(analysed(d, params, seed, run_sd, bootstrap), d, params)


def outcome_seed(truth_seed: int, design: int, k: int) -> int:
    """The noise seed of outcome `k` of candidate `design` on the pilot of `truth_seed` (module doc)."""
    return truth_seed * 100003 + OUTCOME_SEEDS + 100 * design + k


def candidates(base: Design) -> list[Design]:
    """The designs judged on each pilot: those `isocompute design` judges unless told (`default_designs`:
    the pilot's own, C x4, val x4, both), so that it is the tool as used that is judged."""
    return default_designs(base)


@contextmanager
def quiet(name: str = "isocompute"):
    """The analysis' phase lines (INFO on the `name` logger) left out while a pilot is worked on: a
    benchmark's log is its progress over pilots, not a line per analysis of thousands."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def pilot_rows(task: tuple[Study, int]) -> list[dict]:
    """One pilot of the study (`task`: the study and a truth seed): a row per candidate design and claim
    with its predicted assurance and observed outcomes, or one row saying why there is no pilot."""
    with quiet():
        return _pilot_rows(*task)


def _pilot_rows(study: Study, seed: int) -> list[dict]:
    shape = study.shape(seed)
    key = {"truth_seed": seed, "shape": shape}
    try:
        params, run_sd, _ = known_truth(shape, seed, study.pilot)
    except RuntimeError as exc:                      # no truth of this shape for the pilot's grid
        return [{**key, "refused": f"no truth: {exc}"}]
    try:
        pilot = synthetic_pilot(study.pilot, params, run_sd, seed, study.pilot_bootstrap, f"truth {seed} ({shape})")
    except InputError as exc:
        return [{**key, "run_sd": run_sd, "refused": str(exc)}]
    designs = candidates(pilot.design)
    plan = Plan(draws=study.draws, bootstrap=study.bootstrap, seed=seed, fitted_null=False)
    table, _ = assess(designs, pilot, plan)
    rows = []
    for j, (d, predicted) in enumerate(zip(designs, table.itertuples())):
        seen = [outcome(d, params, run_sd, outcome_seed(seed, j, k), study.outcome_replicates)
                for k in range(study.outcomes)]
        for claim in CLAIMS:
            rows.append({**key, "run_sd": run_sd, "run_sd_measured": pilot.run_sd, "design": d.name,
                         "describe": d.describe(), "claim": claim, "predicted": float(getattr(predicted, claim)),
                         "predicted_raw": float(getattr(predicted, f"{claim}_raw")), "studies": plan.studies(),
                         "successes": int(sum(s[claim] for s in seen)), "outcomes": len(seen),
                         "truth_rises": float(np.mean([s["truth_rises"] for s in seen])), "refused": ""})
    return rows


ROW_COLUMNS = ("truth_seed", "shape", "run_sd", "run_sd_measured", "design", "describe", "claim", "predicted",
               "predicted_raw", "studies",
               "successes", "outcomes", "truth_rises", "refused")


def run_study(study: Study, jobs: int = 2) -> pd.DataFrame:
    """Every pilot of `study` (`pilot_rows`), `jobs` at a time in worker processes; progress on stderr
    (`analysis.fits.progress`, shown when the isocompute logger speaks at INFO)."""
    rows = []
    tasks = study.tasks()
    if jobs <= 1:
        for got in progress(map(pilot_rows, tasks), total=len(tasks), desc="reliability: pilots"):
            rows += got
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for got in progress(pool.map(pilot_rows, tasks, chunksize=1), total=len(tasks),
                                desc="reliability: pilots"):
                rows += got
    return pd.DataFrame(rows)


def repredicted(rows: pd.DataFrame, recalibration: Recalibration | None = None) -> pd.DataFrame:
    """`rows` whose `predicted` is the raw share of the simulated studies (`predicted_raw`; rows written
    before it was kept have only the raw one, as `predicted`, also when joined with newer rows), passed
    through `recalibration` if given: how a map is judged on rows it was not applied to when they ran."""
    rows = rows.copy()
    raw = rows["predicted_raw"].fillna(rows["predicted"]) if "predicted_raw" in rows.columns else rows["predicted"]
    studies = rows["studies"] if "studies" in rows.columns else pd.Series(np.nan, index=rows.index)
    studies = studies.fillna(Study.draws).to_numpy(dtype=float)
    rows["predicted_raw"] = raw.to_numpy(dtype=float)
    rows["studies"] = studies
    if recalibration is None:
        rows["predicted"] = rows["predicted_raw"]
    else:
        rows["predicted"] = [recalibration(c, p, int(k)) if isinstance(c, str) else np.nan
                             for c, p, k in zip(rows["claim"], rows["predicted_raw"], studies)]
    return rows


def maps_of(fitted: pd.DataFrame, source: str) -> Recalibration:
    """The maps of `recalibrate.fit`'s table, (c, a, b) per claim to three places."""
    return Recalibration({r.claim: (round(r.c, 3), round(r.a, 3), round(r.b, 3)) for r in fitted.itertuples()},
                         source)


def cross_validate(rows: pd.DataFrame, folds: int = 3, forms=("platt", "beta")) -> pd.DataFrame:
    """How each form of map (`recalibrate.fit`) does on pilots it was not fitted on: the pilots in `folds`
    blocks of consecutive truth seeds; per form, claim and fold, fitted on the other blocks and judged on
    this one: judged bins, bins outside their interval (`reliability_table`) and the Brier score."""
    rows = judged_rows(repredicted(rows))
    seeds = np.sort(rows["truth_seed"].unique())
    out = []
    for form in forms:
        for k, block in enumerate(np.array_split(seeds, folds)):
            held = rows["truth_seed"].isin(block)
            maps = maps_of(fit(rows[~held], boot=0, form=form), f"the other {folds - 1} blocks")
            test = repredicted(rows[held], maps)
            table = reliability_table(test)
            brier = calibration(test).set_index("claim")["brier"]
            for claim in CLAIMS:
                t = table[(table["claim"] == claim) & table["judged"]]
                out.append({"form": form, "claim": claim, "fold": k, "pilots": len(block), "judged": len(t),
                            "outside": int((~t["inside"].astype(bool)).sum()), "brier": float(brier[claim])})
    return pd.DataFrame(out)


def judged_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with a prediction (pilots the tool took), with every column of `pilot_rows`' even when none."""
    rows = rows.reindex(columns=rows.columns.union(ROW_COLUMNS, sort=False))
    return rows[~_refused(rows)]


def _refused(rows: pd.DataFrame) -> pd.Series:
    """Whether each row is a pilot with no prediction (its `refused` text not empty)."""
    said = rows["refused"] if "refused" in rows.columns else pd.Series("", index=rows.index)
    return ~(said.isna() | (said.astype(str) == ""))


def _rate_of(group: pd.DataFrame) -> tuple[float, int, float, float]:
    """Observed success rate over a group's outcomes and its Clopper-Pearson 95% interval (`chain.rate`)."""
    outcomes = np.concatenate([np.r_[np.ones(int(s)), np.zeros(int(o - s))]
                               for s, o in zip(group["successes"], group["outcomes"])])
    return rate(outcomes)


def pilot_interval(group: pd.DataFrame, resamples: int = 2000, seed: int = 0) -> tuple[int, float, float]:
    """(pilots, 2.5% and 97.5% percentiles) of a group's observed success rate over `resamples` resamples
    of its pilots (truth_seed), each pilot's designs and outcomes kept together: the designs of one pilot
    share its truth, which the Clopper-Pearson interval over the outcomes counts as independent."""
    hits = group.groupby("truth_seed")["successes"].sum().to_numpy(dtype=float)
    tries = group.groupby("truth_seed")["outcomes"].sum().to_numpy(dtype=float)
    if not len(hits):
        return 0, np.nan, np.nan
    pick = np.random.default_rng(seed).integers(0, len(hits), size=(resamples, len(hits)))
    rates = hits[pick].sum(axis=1) / tries[pick].sum(axis=1)
    lo, hi = np.quantile(rates, [0.025, 0.975])
    return len(hits), float(lo), float(hi)


def bin_index(predicted, edges) -> np.ndarray:
    """The bin of each prediction among `edges` ([lo, hi), the last closed), as `reliability_table` bins them."""
    edges = np.asarray(edges, dtype=float)
    return np.clip(np.searchsorted(edges, np.asarray(predicted, dtype=float), side="right") - 1, 0, len(edges) - 2)


def reliability_table(rows: pd.DataFrame, bins=BINS, min_designs: int = MIN_DESIGNS) -> pd.DataFrame:
    """Per claim and bin of predicted assurance ([lo, hi), the last closed): designs, mean predicted,
    observed rate with its 95% interval over the outcomes, whether the bin is judged (>= `min_designs`
    designs) and, if so, whether the mean prediction lies inside the interval; beside it, p: how likely
    so far a count of successes is if each design succeeds with its prediction (`chain.calibrated_p`),
    and the pilots the bin's designs come from with the interval of a bootstrap over them
    (`pilot_interval`), both reported, not judged on."""
    rows = judged_rows(rows)
    edges = np.asarray(bins, dtype=float)
    out = []
    for claim in CLAIMS:
        sub = rows[rows["claim"] == claim]
        where = bin_index(sub["predicted"], edges)
        for b in range(len(edges) - 1):
            group = sub[where == b]
            row = {"claim": claim, "bin": f"[{edges[b]:.1f}, {edges[b + 1]:.1f}{']' if b == len(edges) - 2 else ')'}",
                   "designs": len(group), "predicted": float(group["predicted"].mean()) if len(group) else np.nan}
            row["observed"], row["outcomes"], row["lo"], row["hi"] = _rate_of(group) if len(group) else (np.nan, 0,
                                                                                                         np.nan, np.nan)
            row["judged"] = len(group) >= min_designs
            row["inside"] = bool(row["lo"] <= row["predicted"] <= row["hi"]) if row["judged"] else None
            row["p"] = calibrated_p(group["successes"].sum(), group["predicted"]) if len(group) else np.nan
            row["pilots"], row["pilots_lo"], row["pilots_hi"] = pilot_interval(group)
            out.append(row)
    return pd.DataFrame(out)


def calibration(rows: pd.DataFrame, by: tuple[str, ...] = ("claim",)) -> pd.DataFrame:
    """Per claim (and `by`'s other columns): designs, mean predicted against observed with its 95%
    interval, and the Brier score of the predictions against the outcomes (each outcome scored)."""
    out = []
    for keys, group in judged_rows(rows).groupby(list(by), sort=False):
        observed, outcomes, lo, hi = _rate_of(group)
        hits, tries = group["successes"].to_numpy(dtype=float), group["outcomes"].to_numpy(dtype=float)
        p = group["predicted"].to_numpy(dtype=float)
        brier = float(np.sum(hits * (1 - p) ** 2 + (tries - hits) * p ** 2) / np.sum(tries))
        out.append({**dict(zip(by, keys if isinstance(keys, tuple) else (keys,))), "designs": len(group),
                    "predicted": float(p.mean()), "observed": observed, "outcomes": outcomes, "lo": lo, "hi": hi,
                    "brier": brier, "truth_rises": float(group["truth_rises"].mean())})
    return pd.DataFrame(out)


def refusals(rows: pd.DataFrame) -> pd.DataFrame:
    """The pilots with no prediction: truth seed, shape and why (the tool's one line, or no truth drawn)."""
    if "refused" not in rows.columns:
        return pd.DataFrame(columns=["truth_seed", "shape", "refused"])
    return rows[_refused(rows)][["truth_seed", "shape", "refused"]].reset_index(drop=True)


def verdict(table: pd.DataFrame) -> str:
    """Calibrated, as judged here: every bin with at least MIN_DESIGNS designs has its mean prediction inside
    its interval."""
    judged = table[table["judged"].astype(bool)]
    missed = judged[~judged["inside"].astype(bool)]
    head = (f"judged bins (>= {MIN_DESIGNS} designs): {len(judged)} of {len(table)}; mean prediction inside the "
            f"observed 95% interval in {len(judged) - len(missed)}")
    if judged.empty:
        return head + ": nothing judged (too few designs in every bin)"
    family = min(1.0, float(judged["p"].min()) * len(judged))
    return head + (": calibrated" if missed.empty else "; outside: " + ", ".join(
        f"{r.claim} {r.bin} (predicted {r.predicted:.2f}, observed {r.observed:.2f} [{r.lo:.2f}, {r.hi:.2f}])"
        for r in missed.itertuples())) + f"; smallest p x judged bins (Bonferroni): {family:.3g}"


def markdown(frame: pd.DataFrame, digits: int = 2) -> str:
    """`frame` as a markdown table (numbers to `digits` places)."""
    def cell(v):
        if isinstance(v, (bool, np.bool_)) or v is None:
            return "-" if v is None else ("yes" if v else "no")
        if isinstance(v, (float, np.floating)):
            return "-" if not np.isfinite(v) else f"{v:.{digits}f}"
        return str(v)
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)

