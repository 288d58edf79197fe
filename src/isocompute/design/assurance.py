"""Assurance of a study design from a pilot (`isocompute design PILOT`): the chance that the design,
run for real, establishes each claim the analysis makes, averaged over what the pilot leaves
uncertain, not judged at the pilot's point fit (`power` does that).

Each simulated study draws its truth from one of the pilot's bootstrap replicates
(`pilot.Pilot.replicates`, bootstrap_fits.csv; in turn, without replacement while they last), so
that a replicate in which n = 8 never overtakes 4 is a truth the design meets as often as the
pilot's bootstrap holds it. Each run of the simulated study (each cell, each seed) gets its own
asymptote, its cell's A plus a normal deviation of the pilot's run-to-run sd (`Pilot.run_sd`:
measured between its seeds, or a stated prior); its evaluations are binomial from the design's
validation problems x 4 samples (`power.simulate`'s noise). The study is analysed by the
analysis' own chain (`chain.analyse`) and scored on what summary.csv would say:

  rises       some B_p's law claim is "rises: established"
  determined  some B_p's n* at its last frontier point is determined (its band spans <= 2 doublings)
  U           some B_p's law rises, established, and its upper asymptote's interval spans <= 2
              doublings of n (U_hi - U_lo in log2 n: the law's U is quoted with a usable interval)
  truth rises the drawn truth's own n* (over the design's n) is larger at the top of the comparable
              range than at its bottom, at some B_p: how often there was a rise to find

and on the pilot's fitted null (every n of a B_p on its n = 4 curve, `FittedTruth.truth('null')`,
with the same run-to-run and evaluation noise): the false-claim rate, some B_p claiming a rise or
a fall. Each rate has its Clopper-Pearson interval over the simulated studies (`chain.rate`): it
says how well the simulation pinned the assurance, not how uncertain the truth is (that is inside
the assurance).

Costs come from `isocompute.cluster.plan`'s one cost model: with a config, its cluster.throughput
prices the design's grid as `isocompute plan` does (`cell_costs`, GPU-hours); without one, the
local backend at the unit costs measured on the replication (`design.costs.MEASURED`, CPU-hours,
and the wall clock on `cores`).
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
from isocompute.analysis.frontier.claims import FALLS, RISES, SPAN
from isocompute.cluster.plan import UnitCosts, cell_costs
from isocompute.config import check_config
from isocompute.design.chain import analyse, rate
from isocompute.design.costs import EVAL_SAMPLES, MEASURED
from isocompute.design.pilot import Pilot
from isocompute.design.power import DESIGNS, Design, design_cost, true_n_star
from isocompute.design.recalibrate import MEASURED as MEASURED_RECALIBRATION
from isocompute.design.recalibrate import Recalibration
from isocompute.errors import InputError

CLAIMS = ("rises", "determined", "U")


def simulate_study(d: Design, params, seed: int, run_sd: float = 0.0) -> pd.DataFrame:
    """One simulated study of design `d` on the truth `params(B_p, n)`: every run (cell x seed) with its own
    asymptote, A + N(0, run_sd) (clipped to [0, 1]), and binomial evaluations from d.problems x 4 samples;
    columns of `synthetic_study`, with seed where d.seeds > 1."""
    rng = np.random.default_rng([seed, 7])
    keep = {(c.B_p, c.n) for c in d.cells()}
    parts = []
    for s in range(d.seeds):
        shift = {(b, n): run_sd * rng.standard_normal() for b in d.B_p for n in d.n}

        def run_params(B_p, n, shift=shift):
            p = params(B_p, n)
            return {**p, "A": float(np.clip(p["A"] + shift[(B_p, n)], 0.0, 1.0))}

        evals = synthetic_study(d.B_p, d.n, c_max=d.c_max, eval_steps=d.steps_of, params=run_params,
                                noise=EvalNoise(problems=d.problems, samples=EVAL_SAMPLES, seed=seed * 1009 + s))
        if d.seeds > 1:
            evals.insert(2, "seed", s)
        parts.append(evals)
    evals = pd.concat(parts, ignore_index=True)
    return evals[[c in keep for c in zip(evals["B_p"], evals["n"])]].reset_index(drop=True)


def judge(out: dict, d: Design, params=None) -> dict:
    """What one analysed study (`chain.analyse`'s tables) establishes: 0/1 per claim (module doc), falls,
    and, with the truth's `params`, whether the truth itself rises over the study's comparable range."""
    laws, front = out["n_star_fit"], out["frontier"]
    claims = laws["claim"].astype(str).tolist()
    row = {"rises": float(RISES in claims), "falls": float(FALLS in claims)}
    last = front[np.isfinite(front["reward"].to_numpy(dtype=float))].groupby("B_p").tail(1)
    row["determined"] = float(last["determined"].astype(bool).any()) if len(last) else 0.0
    U = laws[laws["claim"].astype(str) == RISES]
    width = (U["U_hi"] - U["U_lo"]).to_numpy(dtype=float) if {"U_lo", "U_hi"} <= set(U.columns) else np.array([])
    row["U"] = float(bool(np.any(np.isfinite(width) & (width <= SPAN + 1e-9))))
    if params is not None:
        comparable = front[front["comparable"].to_numpy(dtype=bool)]
        rises = False
        for B_p, f in comparable.groupby("B_p"):
            lo, hi = float(f["compute"].min()), float(f["compute"].max())
            ns = [n for n in d.n if (B_p, n) in {(c.B_p, c.n) for c in d.cells()}]
            rises |= bool(true_n_star(d.split, hi, params, B_p, ns) > true_n_star(d.split, lo, params, B_p, ns))
        row["truth_rises"] = float(rises)
    return row


def replication(d: Design, pilot: Pilot, kind: str, index: int, settings: AnalysisSettings, seed: int = 0) -> dict:
    """Simulated study `index` of design `d`: kind 'assurance' on the truth of bootstrap replicate
    `index` (cycling through them), 'fitted_null' on the pilot's fitted null; judged (`judge`)."""
    if kind == "assurance":
        truth = pilot.replicates[index % len(pilot.replicates)]
        params = truth.truth("rise")
    elif kind == "fitted_null":
        truth, params = pilot.point, pilot.point.truth("null")
    else:
        raise ValueError(f"unknown kind {kind!r}: expected 'assurance' or 'fitted_null'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = analyse(simulate_study(d, params, seed * 100003 + index * 2 + (kind == "fitted_null"), pilot.run_sd),
                      settings, budgets=(d.c_max,))
    return {"kind": kind, "index": index, "truth": truth.source, **judge(out, d, params if kind == "assurance" else None)}


def design_costs(d: Design, config: dict | None = None, cores: int = 2, units: UnitCosts = MEASURED) -> dict:
    """The design's price by plan's cost model: GPU-hours of its grid under `config`'s cluster.throughput
    (`plan.cell_costs`, as `isocompute plan` prints them), or, without a config, the local backend's
    CPU-hours and wall hours on `cores` at `units` (`power.design_cost`)."""
    if config is None:
        cost = design_cost(d, units, cores)
        return {"cost": cost["cpu_s"] / 3600.0, "cost_unit": "CPU-h", "wall_h": cost["wall_min"] / 60.0,
                "jobs": cost["jobs"], "rollouts": cost["rollouts"]}
    cfg = copy.deepcopy(config)
    # The price does not depend on the split's name, and a pilot's may be none the config knows.
    split = d.split if d.split in cfg["splits"]["names"] else cfg["splits"]["names"][0]
    part = replace(d, split=split).config()
    cfg["grid"] = part["grid"]
    cfg["splits"]["names"] = [split]
    cfg["train"].update(part["train"])
    cfg["cluster"]["throughput"]["val_problems"] = d.problems
    runs = cell_costs(check_config(cfg))
    runs = runs[runs["group"] == split]
    return {"cost": float(runs["gpu_hours"].sum()), "cost_unit": "GPU-h", "wall_h": float(runs["wall_hours"].max()),
            "jobs": len(runs), "rollouts": int(runs["rollouts"].sum())}


@dataclass(frozen=True)
class Plan:
    """How hard to simulate: `draws` truths from the bootstrap per design, `seeds` simulated studies on each,
    as many on the fitted null (none with `fitted_null` False: its false-claim columns are then NaN); each
    analysed with `bootstrap` replicates; `seed` the noise's; `recalibration` the map from the simulated
    studies' shares to the assurance printed (`recalibrate`: the measured maps by default)."""

    draws: int = 20
    seeds: int = 1
    bootstrap: int = 50
    seed: int = 0
    fitted_null: bool = True
    recalibration: Recalibration = MEASURED_RECALIBRATION

    def studies(self) -> int:
        return self.draws * self.seeds


def assess(designs, pilot: Pilot, plan: Plan = Plan(), config: dict | None = None, cores: int = 2,
           progress=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per design: assurance of each claim, false claims, cost; one row per simulated study).
    `progress(total=...)`, if given, makes a bar that each simulated study advances."""
    settings = AnalysisSettings(bootstrap=plan.bootstrap)
    costs = [design_costs(d, config, cores) for d in designs]       # a config that cannot price them stops here
    kinds = ("assurance", "fitted_null") if plan.fitted_null else ("assurance",)
    total = len(designs) * len(kinds) * plan.studies()
    bar = progress(total=total) if progress is not None and total else None
    rows, studies = [], []
    for d, cost in zip(designs, costs):
        runs = []
        for kind in kinds:
            for i in range(plan.studies()):
                r = replication(d, pilot, kind, i, settings, plan.seed)
                runs.append({"design": d.name, **r})
                if bar is not None:
                    bar.update(1)
        studies += runs
        rows.append(summarise(d, runs, cost, plan.recalibration, plan.studies()))
    if bar is not None:
        bar.close()
    return pd.DataFrame(rows), pd.DataFrame(studies)


def summarise(d: Design, runs: list[dict], cost: dict, recalibration: Recalibration = MEASURED_RECALIBRATION,
              studies: int = 20) -> dict:
    """A design's row: its description, each claim's assurance (`{claim}_raw`: the share of its simulated
    studies; `{claim}`: that share recalibrated, and its interval's ends mapped alike) with its count, the
    false-claim rate on the fitted null, the share of drawn truths that rise, and its cost."""
    sure = [r for r in runs if r["kind"] == "assurance"]
    null = [r for r in runs if r["kind"] == "fitted_null"]
    row = {"design": d.name, "describe": d.describe()}
    for claim in CLAIMS:
        raw, row[f"{claim}_n"], lo, hi = rate([r[claim] for r in sure])
        row[f"{claim}_raw"] = raw
        row[claim], row[f"{claim}_lo"], row[f"{claim}_hi"] = (recalibration(claim, v, studies) for v in (raw, lo, hi))
    row["wrong_way"] = float(np.mean([r["falls"] for r in sure])) if sure else np.nan
    row["truth_rises"] = float(np.mean([r["truth_rises"] for r in sure])) if sure else np.nan
    false = [max(r["rises"], r["falls"]) for r in null]
    row["false_claim"], row["false_claim_n"], row["false_claim_lo"], row["false_claim_hi"] = rate(false)
    return {**row, **cost}


def table_text(table: pd.DataFrame, pilot: Pilot, plan: Plan) -> str:
    """The assurance table as `isocompute design` prints it: a line per design, then the key."""
    head = (f"{'design':<22}{'what':<50}{'rises':>7}{'95% CI':>13}{'n* det':>8}{'U':>6}{'raw r/d/U':>16}"
            f"{'truth':>7}{'false':>7}{'95% CI':>13}{'cost':>10}{'unit':>7}{'wall h':>8}")
    lines = [pilot.describe(), plan.recalibration.describe(), head, "-" * len(head)]
    for r in table.itertuples():
        raw = f"{r.rises_raw:.2f}/{r.determined_raw:.2f}/{r.U_raw:.2f}"
        lines.append(f"{r.design[:21]:<22}{r.describe[:49]:<50}{r.rises:>7.2f}{f'[{r.rises_lo:.2f},{r.rises_hi:.2f}]':>13}"
                     f"{r.determined:>8.2f}{r.U:>6.2f}{raw:>16}{r.truth_rises:>7.2f}{r.false_claim:>7.2f}"
                     f"{f'[{r.false_claim_lo:.2f},{r.false_claim_hi:.2f}]':>13}{r.cost:>10.3g}{r.cost_unit:>7}"
                     f"{r.wall_h:>8.3g}")
    lines.append(f"rises, n* det, U: assurance that some B_p's n*(C) law is 'rises: established', its n* at the top is "
                 f"determined, its law's U has an interval within {SPAN:g} doublings; the share of {plan.draws} truths "
                 f"drawn from the pilot's bootstrap x {plan.seeds} simulated studies each that do (raw r/d/U), "
                 f"recalibrated by the map of the line above; truth: share of drawn truths "
                 f"whose own n* rises over the compared range; false: a rise or fall claimed on the pilot's fitted null; "
                 f"CI: Clopper-Pearson 95% over the simulated studies (mapped alike); cost: plan's cost model; wall h: "
                 f"its wall clock (the longest job on a cluster; the jobs packed on --cores locally)")
    return "\n".join(lines)


# The keys of a design written on the command line (`design_of`), each a field of `Design`.
SPEC_KEYS = {"B_p": "B_p", "n": "n", "C": "c_max", "val": "problems", "dbl": "per_doubling", "seeds": "seeds",
             "B_max": "B_max", "name": "name"}


def _numbers(key: str, text: str) -> tuple[int, ...]:
    """'4,8,16' or '2-32' (the powers of two from 2 to 32)."""
    if "-" in text:
        lo, hi = (int(x) for x in text.split("-"))
        return tuple(2 ** k for k in range(int(np.log2(lo)), int(np.log2(hi)) + 1))
    return tuple(int(x) for x in text.split(","))


def default_designs(base: Design) -> list[Design]:
    """The designs `isocompute design` judges unless told: the pilot's own (`base`), it trained 4x further,
    with 4x the validation problems, and both."""
    further, larger = f"C=2^{round(float(np.log2(base.c_max))) + 2}", f"val={4 * base.problems}"
    texts = ["pilot", f"{further} name=C_x4", f"{larger} name=val_x4", f"{further} {larger} name=C_x4_val_x4"]
    return [design_of(t, base) for t in texts]


def design_of(text: str, base: Design) -> Design:
    """A candidate design from its text: 'pilot' (the pilot's own), a name of `power.DESIGNS` (its first
    word: 'E15'; on the pilot's split), or changes to the pilot's design as KEY=VALUE words (`SPEC_KEYS`:
    B_p=16 or 4,8,16; n=2-32 or 2,4,8; C=2^18; val=400; dbl=4; seeds=2; B_max=256; name=...).
    InputError naming the text when it is none of these."""
    words = text.split()
    if words == ["pilot"]:
        return base
    if words and "=" not in words[0]:
        named = [d for d in DESIGNS if d.name.split()[0] == words[0]]
        if not named or len(words) > 1:
            known = ", ".join(d.name.split()[0] for d in DESIGNS)
            raise InputError(f"--designs {text!r}: not a design (pilot, one of {known}, or KEY=VALUE words: "
                             f"{', '.join(SPEC_KEYS)})")
        return replace(named[0], split=base.split)
    changes = {}
    for word in words:
        key, _, value = word.partition("=")
        if key not in SPEC_KEYS or not value:
            raise InputError(f"--designs {text!r}: {word!r}: expected KEY=VALUE with KEY one of {', '.join(SPEC_KEYS)}")
        try:
            if key in ("B_p", "n"):
                changes[SPEC_KEYS[key]] = _numbers(key, value)
            elif key == "C":
                changes["c_max"] = float(2.0 ** float(value[2:])) if value.startswith("2^") else float(value)
            elif key == "name":
                changes["name"] = value
            else:
                changes[SPEC_KEYS[key]] = int(value)
        except ValueError:
            raise InputError(f"--designs {text!r}: {word!r}: not a number") from None
    return replace(base, **{"name": text, **changes})
