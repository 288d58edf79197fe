"""The allocation advisor: from a finished analysis, what to train at a budget C.

The paper's prescription (section 4.3): tune n by the law n*(C), pick the
smallest stable B_p, and give the rest of the budget to the steps M. Here,
from the tables `run_analysis` writes (fits, the n* law per B_p and, with a
bootstrap, the replicate fits and the law of every replicate):

- B_p: the smallest B_p whose fixed-B_p frontier at C the study cannot tell
  below the best B_p's: the `ci` bootstrap interval of (best - this) at C
  reaches 0 (replicates paired; cells are resampled independently, so each
  replicate is a draw of both frontiers). B_p's effect is small and noisy
  (paper Fig. 10), so the cheapest B_p inside the noise is the stable choice;
- n*: that B_p's law at C, with the percentile interval of its replicates'
  laws at C, when the law's direction is established (`claims`); otherwise
  the frontier's own n* at C with its bootstrap band (ties spanning every
  tied n). A band wider than `claims.SPAN` doublings is "undetermined", and
  the advice is then the smallest n in the band (the fewest rollouts per
  step, so the most steps), not a point the data cannot single out;
  n: n* snapped to the nearest n studied at that B_p (in log2);
- M = C / (B_p n), rounded to whole steps;
- reward: that B_p's frontier at C, with its selection-aware bootstrap band
  (`bootstrap.frontier_reward_band`, as frontier.csv's).

Outside the studied compute range every fitted curve is extrapolated and the
factor is stated; beyond `max_extrapolation` it is refused unless allowed.
Pure functions over the analysis tables; reading them is the CLI's job.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from isocompute.analysis.fits.sigmoid import USABLE
from isocompute.analysis.frontier.bootstrap import frontier_reward_band, n_star_band, replicate_frontiers
from isocompute.analysis.frontier.claims import law_established, n_star_claim, no_effect_groups
from isocompute.analysis.frontier.envelope import frontier
from isocompute.analysis.frontier.nstar import GOOD_LAW, n_star_sigmoid
from isocompute.errors import InputError

B_P_RULE = ("smallest B_p whose frontier at C is within the noise of the best B_p's: the {ci:g}% bootstrap "
            "interval of (best - this) at C reaches 0")
B_P_RULE_NO_BOOT = ("the B_p with the best frontier at C (no bootstrap replicates stored, so the noise between "
                    "B_p cannot be told; re-run the analysis with analysis.bootstrap > 0)")
B_P_RULE_ONLY = "the only B_p with both a usable n* law and a frontier at C"
TABLE_COLUMNS = ["budget", "extrapolation", "direction", "B_p", "n_star", "n_star_lo", "n_star_hi", "n_star_claim",
                 "n", "M", "reward", "reward_lo", "reward_hi", "frontier_n_star"]


@dataclass(frozen=True)
class Advice:
    """What to train at `budget` rollouts, and why. NaN marks an interval the analysis cannot give."""

    budget: float
    B_p: int
    B_p_rule: str
    n_star: float               # the law of B_p at the budget
    n_star_lo: float
    n_star_hi: float
    n_star_claim: str           # `claims.n_star_claim`: "n* = 8 [4, 16]" or "undetermined: [2, 64]"
    n_star_source: str          # 'law' (established direction) or 'frontier' (its n* and band at C)
    n: int                      # n_star snapped to the nearest n studied at B_p
    n_grid: tuple[int, ...]     # the n studied at B_p
    M: int                      # steps: budget / (B_p n), rounded
    compute_used: float         # B_p n M
    reward: float               # B_p's frontier at the budget
    reward_lo: float
    reward_hi: float
    frontier_n_star: float      # the n attaining that frontier (the data's, not the law's)
    cell_reward: float          # the fitted curve of (B_p, n) itself at the budget
    compute_lo: float           # the studied compute range (usable runs)
    compute_hi: float
    extrapolation: float        # 1 inside the range, else how many times outside
    direction: str              # 'inside', 'above' or 'below'
    ci: float
    candidates: tuple[dict, ...]  # per B_p: reward, reward_lo/hi, gap_lo/hi to the best, within
    notes: tuple[str, ...]

    def as_dict(self) -> dict:
        """Plain JSON-able values; NaN (no interval) becomes None."""
        out = asdict(self)
        out["n_grid"], out["notes"] = list(self.n_grid), list(self.notes)
        out["candidates"] = [{k: _plain(v) for k, v in c.items()} for c in self.candidates]
        return {k: _plain(v) for k, v in out.items()}


def rollouts_text(value: float) -> str:
    """Rollouts as people write them: 1,048,576; 3 significant digits when not whole."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"


def _plain(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    return value


def check_budget(budget) -> float:
    """`budget` as a float if it is a finite positive number, else InputError naming it."""
    try:
        value = float(budget)
    except (TypeError, ValueError):
        raise InputError(f"--budget: expected a positive number of rollouts, got {budget!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise InputError(f"--budget: expected a positive number of rollouts, got {budget!r}")
    return value


def usable_fits(fits: pd.DataFrame | None) -> pd.DataFrame:
    """The fits that enter frontiers; InputError when there are none."""
    if fits is None or fits.empty or "status" not in fits.columns:
        raise InputError("the analysis holds no fits (fits.csv missing or empty)")
    ok = fits[fits["status"].isin(USABLE)]
    if ok.empty:
        raise InputError("the analysis holds no usable fit (every run's fit failed: see fits.csv, column status)")
    return ok


def studied_range(fits: pd.DataFrame) -> tuple[float, float]:
    """(lowest, highest) compute of the usable runs' data: the frontier's grid."""
    ok = usable_fits(fits)
    return float(ok["compute_min"].min()), float(ok["compute_max"].max())


def extrapolation_factor(budget: float, lo: float, hi: float) -> tuple[float, str]:
    """(how many times outside [lo, hi] the budget lies, 'inside' / 'above' / 'below')."""
    if budget > hi * (1 + 1e-9):
        return budget / hi, "above"
    if budget < lo * (1 - 1e-9):
        return lo / budget, "below"
    return 1.0, "inside"


def law_n_star(law: pd.Series | dict, budget) -> np.ndarray:
    """n* = 2^(L + (U - L) sigmoid(k (log10 C - c0))) of one law row (or of arrays of parameters)."""
    x = np.log10(np.asarray(budget, dtype=float))
    return 2.0 ** n_star_sigmoid(x, *(np.asarray(law[p], dtype=float) for p in ("L", "U", "k", "c0")))


def law_interval(draws: pd.DataFrame | None, budget: float, ci: float) -> tuple[float, float, int]:
    """Percentile interval of n* at the budget over the replicates' laws: (lo, hi, replicates used)."""
    if draws is None or draws.empty:
        return np.nan, np.nan, 0
    good = draws[draws["status"].isin(GOOD_LAW)]
    if good.empty:
        return np.nan, np.nan, 0
    values = law_n_star(good, budget)
    return (float(np.percentile(values, 50 * (1 - ci))), float(np.percentile(values, 50 * (1 + ci))),
            int(values.size))


def frontier_n_band(boot: pd.DataFrame | None, B_p, budget: float, extrapolate: bool, ci: float):
    """(lo, hi) of the frontier's n* at the budget over B_p's replicates (tied n spanning the band), as
    frontier.csv's n_star_lo / n_star_hi; NaN without replicates."""
    if boot is None or boot.empty or not (boot["B_p"] == B_p).any():
        return np.nan, np.nan
    n_star, n_max, _ = replicate_frontiers(boot[boot["B_p"] == B_p], np.array([budget]), extrapolate=extrapolate,
                                           ties=True)
    lo, hi = n_star_band(n_star, n_max, 50 * (1 - ci), 50 * (1 + ci))
    return float(lo[0]), float(hi[0])


def snap_n(n_star: float, studied) -> int:
    """The studied n nearest to n_star in log2 (a tie goes to the smaller n: more steps)."""
    ns = np.sort(np.asarray(list(studied), dtype=float))
    return int(ns[np.argmin(np.abs(np.log2(ns) - np.log2(n_star)))])


def _replicate_rewards(boot: pd.DataFrame | None, B_p, budget: float, extrapolate: bool) -> pd.Series | None:
    """Reward of B_p's frontier at the budget in every replicate, indexed by replicate."""
    if boot is None or boot.empty:
        return None
    g = boot[boot["B_p"] == B_p]
    if g.empty:
        return None
    _, reward = replicate_frontiers(g, np.array([budget]), extrapolate=extrapolate)
    return pd.Series(reward[:, 0], index=np.sort(g["replicate"].unique()))


def frontier_candidates(tables: dict, budget: float, *, extrapolate: bool, ci: float) -> pd.DataFrame:
    """Per B_p with a usable law: its frontier at the budget (reward, frontier_n_star), the bootstrap band, and the
    interval of the gap to the best B_p's; `within` marks the B_p the study cannot tell below the best."""
    fits, laws = usable_fits(tables.get("fits")), tables.get("n_star_fit")
    if laws is None or laws.empty or "B_p" not in laws.columns:
        raise InputError("the analysis holds no n* law per B_p (n_star_fit.csv missing or empty)")
    lo_q, hi_q = 50 * (1 - ci), 50 * (1 + ci)
    rows, reps = [], {}
    for B_p in sorted(laws.loc[laws["status"].isin(GOOD_LAW), "B_p"]):
        f = frontier(fits[fits["B_p"] == B_p], [budget], extrapolate=extrapolate).iloc[0]
        if not np.isfinite(f["reward"]):
            continue
        boot = tables.get("bootstrap_fits")
        reps[B_p] = _replicate_rewards(boot, B_p, budget, extrapolate)
        band_lo, band_hi = ((np.nan,), (np.nan,)) if reps[B_p] is None else frontier_reward_band(
            boot[boot["B_p"] == B_p], fits[fits["B_p"] == B_p], [budget], extrapolate=extrapolate, ci=ci)
        rows.append({"B_p": int(B_p), "reward": float(f["reward"]), "frontier_n_star": float(f["n_star"]),
                     "reward_lo": float(band_lo[0]), "reward_hi": float(band_hi[0])})
    if not rows:
        raise InputError(f"no B_p has both a usable n* law and a frontier at C = {rollouts_text(budget)}")
    out = pd.DataFrame(rows)
    best = int(out.loc[out["reward"].idxmax(), "B_p"])
    gap_lo, gap_hi = [], []
    for B_p in out["B_p"]:
        if reps[best] is None or reps[B_p] is None:
            gap_lo.append(np.nan)
            gap_hi.append(np.nan)
            continue
        gap = (reps[best] - reps[B_p]).dropna()
        gap_lo.append(float(np.percentile(gap, lo_q)) if gap.size else np.nan)
        gap_hi.append(float(np.percentile(gap, hi_q)) if gap.size else np.nan)
    out["gap_lo"], out["gap_hi"] = gap_lo, gap_hi
    out["best"] = out["B_p"] == best
    # Without replicates only the best counts; with them, a gap interval reaching 0 (the best's own is 0).
    out["within"] = out["best"] | (out["gap_lo"] <= 0)
    return out


def _extrapolation(budget: float, lo: float, hi: float, max_extrapolation: float,
                   allow: bool) -> tuple[float, str, list[str]]:
    """(factor, direction, notes) of `budget` against the studied range [lo, hi]; InputError
    beyond `max_extrapolation` unless `allow`."""
    factor, direction = extrapolation_factor(budget, lo, hi)
    studied = f"the studied compute range [{rollouts_text(lo)}, {rollouts_text(hi)}]"
    if factor > max_extrapolation and not allow:
        raise InputError(f"C = {rollouts_text(budget)} rollouts is {factor:.3g}x {direction} {studied}; refusing to "
                         f"extrapolate beyond {max_extrapolation:g}x (analysis.max_extrapolation, "
                         f"--max-extrapolation; --allow-extrapolation to go on)")
    notes = []
    if direction != "inside":
        notes.append(f"C lies {factor:.3g}x {direction} {studied}: every fitted curve and the n* law are "
                     f"extrapolated")
    return factor, direction, notes


def _n_star_at(tables: dict, pick, budget: float, *, no_effect: bool, extrapolate: bool, ci: float,
               notes: list[str]) -> tuple[str, float, float, float]:
    """(source, n*, its interval) at `budget` for the chosen B_p's row `pick`: the law's where it
    is established (and n has an effect), else the frontier's; what the reader should know is
    appended to `notes`."""
    B_p = int(pick["B_p"])
    laws = tables["n_star_fit"]
    law = laws[laws["B_p"] == B_p].iloc[0]
    if law_established(law) and not no_effect:
        n_star = float(law_n_star(law, budget))
        if not np.isfinite(n_star):
            raise InputError(f"n_star_fit.csv: the n* law of B_p = {B_p} has status {law.get('status')!r} but "
                             f"non-finite parameters (L, U, k, c0 = {[law.get(p) for p in ('L', 'U', 'k', 'c0')]}); "
                             f"re-run the analysis")
        draws = tables.get("n_star_fit_draws")
        draws = None if draws is None or draws.empty else draws[draws["B_p"] == B_p]
        n_lo, n_hi, used = law_interval(draws, budget, ci)
        if not used:
            notes.append("no replicate laws stored (analysis.bootstrap = 0, or an analysis from before "
                         "n_star_fit_draws.csv): n* has no interval")
        return "law", n_star, n_lo, n_hi
    n_lo, n_hi = frontier_n_band(tables.get("bootstrap_fits"), B_p, budget, extrapolate, ci)
    if not np.isfinite(n_lo):
        notes.append("no bootstrap replicates stored (analysis.bootstrap = 0): n* has no interval, and no "
                     "direction of the n* law can be established")
    notes.append(f"the n* law's direction is {law.get('claim', 'not established')}: n* is the frontier's at C, "
                 f"with its bootstrap band, not the law's")
    return "frontier", float(pick["frontier_n_star"]), n_lo, n_hi


def recommend(tables: dict, budget, *, extrapolate: bool, ci: float, max_extrapolation: float,
              allow_extrapolation: bool = False) -> Advice:
    """B_p, n*, n, M and the predicted reward at `budget` from analysis `tables` (keys as
    `run_analysis`'s: fits, n_star_fit, and optionally n_star_fit_draws, bootstrap_fits).

    `extrapolate`, `ci`: the analysis's own settings (params.json), so that at a grid point the reward
    and band are frontier.csv's. Raises InputError on a bad budget, tables without fits or laws, or a
    budget more than `max_extrapolation` times outside the studied range unless `allow_extrapolation`.
    """
    budget = check_budget(budget)
    lo, hi = studied_range(tables.get("fits"))
    factor, direction, notes = _extrapolation(budget, lo, hi, max_extrapolation, allow_extrapolation)
    curves_extrapolate = extrapolate or direction != "inside"
    cands = frontier_candidates(tables, budget, extrapolate=curves_extrapolate, ci=ci)
    has_boot = cands["gap_lo"].notna().any()
    pick = cands[cands["within"]].iloc[0]
    B_p = int(pick["B_p"])
    if len(cands) == 1:
        rule = B_P_RULE_ONLY
    else:
        rule = B_P_RULE.format(ci=100 * ci) if has_boot else B_P_RULE_NO_BOOT

    fits = usable_fits(tables["fits"])
    n_grid = tuple(int(v) for v in sorted(fits.loc[fits["B_p"] == B_p, "n"].unique()))
    no_effect = B_p in no_effect_groups(tables["fits"])
    source, n_star, n_lo, n_hi = _n_star_at(tables, pick, budget, no_effect=no_effect,
                                            extrapolate=curves_extrapolate, ci=ci, notes=notes)
    determined, claim = n_star_claim(n_star, n_lo, n_hi, no_effect=no_effect)
    n = snap_n(n_star, n_grid)
    if not determined and np.isfinite(n_lo):
        inside = [v for v in n_grid if n_lo <= v <= n_hi]
        n = inside[0] if inside else n
        notes.append(f"n* is {claim}: n = {n} is the smallest studied n in the band (the fewest rollouts per "
                     f"step, so the most steps at C); the data do not single out one n")
    if not n_grid[0] / 2 ** 0.5 <= n_star <= n_grid[-1] * 2 ** 0.5:
        notes.append(f"the law's n* = {n_star:.3g} lies beyond the n studied at B_p = {B_p} "
                     f"({n_grid[0]}..{n_grid[-1]}): n = {n} is the nearest studied, not the law's value")
    M = max(1, int(np.floor(budget / (B_p * n) + 0.5)))
    if budget / (B_p * n) < 0.5:
        notes.append(f"C is less than half a step of B_p n = {B_p * n} rollouts: M = 1 spends {B_p * n} rollouts")
    cell = fits[(fits["B_p"] == B_p) & (fits["n"] == n)]
    cell_reward = float(frontier(cell, [budget], extrapolate=curves_extrapolate)["reward"].iloc[0])
    return Advice(budget=budget, B_p=B_p, B_p_rule=rule, n_star=n_star, n_star_lo=n_lo, n_star_hi=n_hi,
                  n_star_claim=claim, n_star_source=source, n=n, n_grid=n_grid, M=M, compute_used=float(B_p * n * M), reward=float(pick["reward"]),
                  reward_lo=float(pick["reward_lo"]), reward_hi=float(pick["reward_hi"]),
                  frontier_n_star=float(pick["frontier_n_star"]), cell_reward=cell_reward, compute_lo=lo, compute_hi=hi,
                  extrapolation=factor, direction=direction, ci=ci,
                  candidates=tuple(cands.to_dict("records")), notes=tuple(notes))


def default_budgets(lo: float, hi: float, *, points: int = 5, max_extrapolation: float = 1.0) -> list[float]:
    """A few budgets across [lo, hi]: up to `points` powers of two spread evenly in log (hi itself when
    none fits), then hi x `max_extrapolation` (the furthest the advisor goes unasked) when above 1."""
    e_lo, e_hi = int(np.ceil(np.log2(lo) - 1e-9)), int(np.floor(np.log2(hi) + 1e-9))
    if e_hi < e_lo:
        budgets = [float(hi)]
    else:
        exps = np.unique(np.round(np.linspace(e_lo, e_hi, min(points, e_hi - e_lo + 1))).astype(int))
        budgets = [float(2.0 ** e) for e in exps]
    if max_extrapolation > 1:
        budgets.append(float(hi * max_extrapolation))
    return budgets


def recommendation_table(tables: dict, budgets=None, *, extrapolate: bool, ci: float,
                         max_extrapolation: float) -> pd.DataFrame:
    """`recommend` at each budget (default: `default_budgets` over the studied range), one row each
    (columns TABLE_COLUMNS); empty when the analysis has no usable fits or laws."""
    try:
        lo, hi = studied_range(tables.get("fits"))
    except InputError:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    if budgets is None:
        budgets = default_budgets(lo, hi, max_extrapolation=max_extrapolation)
    rows = []
    for budget in budgets:
        try:
            a = recommend(tables, budget, extrapolate=extrapolate, ci=ci, max_extrapolation=max_extrapolation)
        except InputError:
            continue
        rows.append({c: getattr(a, c) for c in TABLE_COLUMNS})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)
