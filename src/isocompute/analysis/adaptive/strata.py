"""A prior of known truths for judging the adaptive sweep: strata of n*(C) shapes.

One family of curves says little about a rule that must stop runs before their futures are
seen: a rule tuned on early crossovers spends the whole grid on late ones. Here the truths
are drawn from ranges, per stratum, on a grid of B_p x n (default the paper's Easy columns
B_p 16 and 32, n 8..512, C_max 2^22):

- early, mid, late: crossovers (A rising with log2 n up to an n_sat in 32..8192, C_mid later
  with n: `synthetic.crossover_params`' family with a saturation), by lambda = log2(C_max / C_lead), where C_lead is the compute
  from which the C_max winner stays n*: early lambda >= 5, mid 2 <= lambda < 5, late < 2
  (the smallest lambda over the B_p: the latest lead decides the bill); a draw in which the
  smallest n still wins at C_max of some B_p has no crossover and is drawn again;
- climbing: crossovers whose n* is still climbing at C_max: an n beyond the grid (up to 4x
  its largest) would beat the grid's best at C_max by more than 0.005;
- saturating: A saturating in log2 n, C_mid a power of n times (1 + n / k);
- peaked: A peaking at an n inside the grid and declining beyond;
- null: every n on one curve (nothing happens; every n is right);
- unstable: a crossover in which one B_p's runs collapse mid-run (reward falling by 0.05-0.2
  over a doubling of compute from a point in [C_max / 16, C_max / 2]).

The ranges (`draw_truth`) were set from the paper's Easy and Hard figures (base rates 0.3-0.6,
rises of 0.08-0.3 over a run, spreads across n at C_max of up to ~0.1) and this project's own
finished studies, before any rule was judged on them. Those eight strata are drawn from nearly
the sweep's own model (one B per study, log C_mid linear in log2 n, independent noise per
evaluation). Six more (`OUT_OF_MODEL`) are not; their ranges were written down here before any
rule was judged on them, each a crossover (the smallest n loses at C_max) unless said:

- b_varies: B differs with n, B x 2^(beta log2(n / n_0)), beta in [-0.2, 0.2] per doubling of n;
- correlated: a run's evaluations share errors (one validation set): a persistent run-level
  deviation (sd 0.01-0.02) plus a wiggle correlated along log2 compute (Ornstein-Uhlenbeck, sd
  0.01-0.02, correlation length 0.5-2 doublings), on top of the study's independent noise;
- falling: n* falls with compute: A falls with log2 n (0.005-0.025 per doubling from a rise of
  0.1-0.3) while C_mid falls as n^-(0.2..0.8), so large n lead early and small n win late (the
  n* at C_max below the n* at C_max / 2^10 in every B_p);
- late_rise: a second rise the sigmoid does not follow: each run gains a second sigmoid of
  0.03-0.1 x log2(n / n_0) / log2(n_max / n_0) (large n gain most), midpoint in [C_max / 4,
  2 C_max], slope 1.5-3;
- curved: A and log C_mid curved beyond any low-degree trend in log2 n: sines of amplitude
  0.01-0.03 (A) and 0.2-0.5 (log C_mid), periods 1.5-3 doublings of n;
- hard: a Hard-like split: base rates 0.01-0.1, rises 0.01-0.05 plus 0.002-0.01 per doubling of
  n, evaluation noise binomial-like (the study's sd scaled by sqrt(r (1 - r)) / 0.5).

Pure: a truth is a seeded draw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isocompute.analysis.fits.sigmoid import sigmoid_reward

IN_MODEL = ("early", "mid", "late", "climbing", "saturating", "peaked", "null", "unstable")
OUT_OF_MODEL = ("b_varies", "correlated", "falling", "late_rise", "curved", "hard")
STRATA = IN_MODEL + OUT_OF_MODEL
CROSSOVER_STRATA = ("early", "mid", "late", "climbing")
B_PS, NS, C_MAX = (16, 32), (8, 16, 32, 64, 128, 256, 512), 2.0 ** 22
SPAN_DOUBLINGS = 10                 # the probes, and the first matched evaluation, from C_max / 2^10
CLIMB_MARGIN = 0.005                # an n beyond the grid better than its best by this: n* still climbing
LATE, EARLY = 2.0, 5.0              # lambda bounds of the crossover strata
MAX_TRIES = 5_000
VALUE_SPAN, VALUE_POINTS = 24, 8_193  # a run's best checkpoint: searched over 2^-24..1 of its compute


@dataclass(frozen=True)
class Truth:
    """Known curves of a study: sigmoid parameters per (B_p, n) (R0, A, B, C_mid), and collapses
    per (B_p, n) (compute where it starts, reward lost over the doubling after it)."""

    stratum: str
    params: dict
    collapse: dict = field(default_factory=dict)
    lead_doublings: float = float("nan")
    second: dict = field(default_factory=dict)      # (B_p, n) -> (a2, B2, C2): a second rise on top
    noise: dict = field(default_factory=dict)       # how its evaluations err beyond the study's sd (`scoring.study`)

    def reward(self, B_p, n, compute) -> np.ndarray:
        """The true reward of run (B_p, n) at `compute` (rollouts)."""
        p = self.params[(B_p, n)]
        c = np.asarray(compute, dtype=float)
        r = sigmoid_reward(c, p["R0"], p["A"], p["B"], p["C_mid"])
        if (B_p, n) in self.second:
            a2, b2, c2 = self.second[(B_p, n)]
            r = r + a2 * sigmoid_reward(c, 0.0, 1.0, b2, c2)
        if (B_p, n) in self.collapse:
            start, drop = self.collapse[(B_p, n)]
            with np.errstate(divide="ignore"):
                r = r - drop * np.clip(np.log2(np.maximum(c, 1e-300) / start), 0.0, 1.0)
        return r

    def value(self, B_p, n, compute) -> np.ndarray:
        """What run (B_p, n) is worth with `compute` to spend: the true reward of its best checkpoint
        so far, max over c <= compute of `reward` (the study's frontier is a running maximum,
        docs/methods.md, section 6, so the n* it names at a budget is the n whose best checkpoint
        there is best).
        Equal to `reward` for a curve that only rises; after a collapse, the reward before it."""
        c = np.atleast_1d(np.asarray(compute, dtype=float))
        if (B_p, n) not in self.collapse and self.params[(B_p, n)]["A"] >= self.params[(B_p, n)]["R0"]:
            return self.reward(B_p, n, np.asarray(compute, dtype=float))
        top = float(np.max(c))
        grid = np.union1d(np.geomspace(top / 2 ** VALUE_SPAN, top, VALUE_POINTS), c)
        running = np.maximum.accumulate(np.append(self.params[(B_p, n)]["R0"], self.reward(B_p, n, grid)))
        out = running[np.searchsorted(grid, c, side="right")]      # R0 in front: the points <= c
        return out.reshape(np.shape(compute)) if np.ndim(compute) else out[0]

    def best(self, B_p, ns, compute) -> np.ndarray:
        """The true frontier over `ns` at `compute` (best checkpoints so far, `value`): (G,)."""
        return np.max([self.value(B_p, n, compute) for n in ns], axis=0)

    def rise(self, B_p, ns, c_max: float) -> float:
        """What training adds on B_p: the frontier's true reward at `c_max` less the base model's
        (the mean of the runs' R0): the scale of `sweep.epsilon` read as a share of the rise."""
        base = float(np.mean([self.params[(B_p, n)]["R0"] for n in ns]))
        return float(self.best(B_p, ns, c_max)) - base


def _log_uniform(rng, lo, hi):
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _crossover(rng, b_ps, ns, c_max, base=(0.3, 0.6), rise=(0.08, 0.25), per=(0.005, 0.03)) -> dict:
    R0 = rng.uniform(*base)
    a_ref, a_per, c_exp = rng.uniform(*rise), rng.uniform(*per), rng.uniform(0.2, 1.1)
    c_ref, B, bp_exp = _log_uniform(rng, c_max / 2 ** 14, c_max / 2 ** 3), rng.uniform(0.8, 2.5), rng.uniform(0, 0.5)
    d_sat = rng.uniform(2, 10)          # doublings over the smallest n where A stops rising (n 32..8192)
    return {(b, n): {"R0": R0, "A": min(R0 + a_ref + a_per * min(np.log2(n / ns[0]), d_sat), 0.98), "B": B,
                     "C_mid": c_ref * (n / ns[0]) ** c_exp * (b / max(b_ps)) ** bp_exp}
            for b in b_ps for n in ns}


def _b_varies(rng, b_ps, ns, c_max) -> dict:
    params, beta = _crossover(rng, b_ps, ns, c_max), rng.uniform(-0.2, 0.2)
    for (b, n), p in params.items():
        p["B"] *= 2.0 ** (beta * np.log2(n / ns[0]))
    return params


def _falling(rng, b_ps, ns, c_max) -> dict:
    R0, a_ref, a_per = rng.uniform(0.3, 0.6), rng.uniform(0.1, 0.3), rng.uniform(0.005, 0.025)
    c_ref, c_exp, B = _log_uniform(rng, c_max / 2 ** 10, c_max / 2 ** 3), rng.uniform(0.2, 0.8), rng.uniform(0.8, 2.5)
    return {(b, n): {"R0": R0, "A": R0 + a_ref - a_per * np.log2(n / ns[0]), "B": B,
                     "C_mid": c_ref * (n / ns[0]) ** -c_exp * (b / max(b_ps)) ** 0.25}
            for b in b_ps for n in ns}


def _curved(rng, b_ps, ns, c_max) -> dict:
    params = _crossover(rng, b_ps, ns, c_max)
    w_a, p_a, f_a = rng.uniform(0.01, 0.03), rng.uniform(1.5, 3), rng.uniform(0, 2 * np.pi)
    w_c, p_c, f_c = rng.uniform(0.2, 0.5), rng.uniform(1.5, 3), rng.uniform(0, 2 * np.pi)
    for (b, n), p in params.items():
        d = np.log2(n / ns[0])
        p["A"] = max(p["A"] + w_a * np.sin(np.pi * d / p_a + f_a), p["R0"] + 0.01)
        p["C_mid"] *= np.exp(w_c * np.sin(np.pi * d / p_c + f_c))
    return params


def _hard(rng, b_ps, ns, c_max) -> dict:
    return _crossover(rng, b_ps, ns, c_max, base=(0.01, 0.1), rise=(0.01, 0.05), per=(0.002, 0.01))


def _saturating(rng, b_ps, ns, c_max) -> dict:
    R0, a0, a1, s = rng.uniform(0.3, 0.6), rng.uniform(0.08, 0.2), rng.uniform(0.03, 0.15), rng.uniform(1, 4)
    c0, e, k, B = (_log_uniform(rng, c_max / 2 ** 10, c_max / 2 ** 4), rng.uniform(0.3, 0.8),
                   _log_uniform(rng, 32, 512), rng.uniform(0.8, 2.5))
    return {(b, n): {"R0": R0, "A": R0 + a0 + a1 * (1 - np.exp(-np.log2(n / ns[0]) / s)), "B": B,
                     "C_mid": c0 * (n / ns[0]) ** e * (1 + n / k) * (b / max(b_ps)) ** 0.25}
            for b in b_ps for n in ns}


def _peaked(rng, b_ps, ns, c_max) -> dict:
    R0, a0, a1 = rng.uniform(0.3, 0.6), rng.uniform(0.08, 0.2), rng.uniform(0.02, 0.1)
    peak, decline = rng.uniform(1, 4), rng.uniform(0.005, 0.03)
    c0, e, B = _log_uniform(rng, c_max / 2 ** 10, c_max / 2 ** 5), rng.uniform(0.4, 1.0), rng.uniform(0.8, 2.5)

    def A(n):
        d = np.log2(n / ns[0])
        return R0 + a0 + a1 * min(d, peak) / peak - decline * max(d - peak, 0.0)
    return {(b, n): {"R0": R0, "A": A(n), "B": B, "C_mid": c0 * (n / ns[0]) ** e * (b / max(b_ps)) ** 0.25}
            for b in b_ps for n in ns}


def _null(rng, b_ps, ns, c_max) -> dict:
    R0 = rng.uniform(0.3, 0.6)
    curve = {"R0": R0, "A": R0 + rng.uniform(0.08, 0.3), "B": rng.uniform(0.8, 2.5),
             "C_mid": _log_uniform(rng, c_max / 2 ** 10, c_max / 2 ** 2)}
    return {(b, n): dict(curve) for b in b_ps for n in ns}


def lead_doublings(truth: Truth, B_p, ns, c_max: float, span: float = SPAN_DOUBLINGS, points: int = 401) -> float:
    """lambda = log2(C_max / C_lead): how long before C_max the C_max winner took the lead for good
    (span when it leads over the whole studied range)."""
    grid = np.geomspace(c_max / 2 ** span, c_max, points)
    curves = np.array([truth.reward(B_p, n, grid) for n in ns])
    winner = np.argmax(curves, axis=0)
    behind = np.flatnonzero(winner != winner[-1])
    return float(span if not behind.size else np.log2(c_max / grid[behind[-1] + 1]))


def _classify(rng, draw, b_ps, ns, c_max) -> tuple[str, Truth]:
    ext = tuple(ns) + (2 * ns[-1], 4 * ns[-1])
    params = draw(rng, b_ps, ext, c_max)
    truth = Truth("", {k: v for k, v in params.items() if k[1] in ns})
    lam = min(lead_doublings(truth, b, ns, c_max) for b in b_ps)
    full = Truth("", params)
    climbing = any(full.reward(b, m, c_max) > truth.best(b, ns, c_max) + CLIMB_MARGIN
                   for b in b_ps for m in ext[len(ns):])
    crossed = all(truth.reward(b, ns[0], c_max) < truth.best(b, ns, c_max) for b in b_ps)
    stratum = ("climbing" if climbing else "none" if not crossed
               else "late" if lam < LATE else "mid" if lam < EARLY else "early")
    return stratum, Truth(stratum, truth.params, lead_doublings=lam)


def draw_truth(stratum: str, seed: int, b_ps=B_PS, ns=NS, c_max: float = C_MAX) -> Truth:
    """A truth of `stratum` (`STRATA`), drawn from the stratum's ranges with `seed`; crossover
    strata by rejection from one family (the first draw that falls in the stratum)."""
    if stratum not in STRATA:
        raise ValueError(f"unknown stratum {stratum!r}: expected one of {', '.join(STRATA)}")
    rng = np.random.default_rng([seed, STRATA.index(stratum)])
    if stratum in OUT_OF_MODEL:
        return _out_of_model(rng, stratum, b_ps, ns, c_max)
    if stratum in CROSSOVER_STRATA or stratum == "unstable":
        for _ in range(MAX_TRIES):
            got, truth = _classify(rng, _crossover, b_ps, ns, c_max)
            if stratum == "unstable" and got != "climbing":
                return _collapse(rng, truth, b_ps, ns, c_max)
            if got == stratum:
                return truth
        raise RuntimeError(f"no {stratum} truth in {MAX_TRIES} draws")
    draw = {"saturating": _saturating, "peaked": _peaked, "null": _null}[stratum]
    truth = Truth(stratum, draw(rng, b_ps, ns, c_max))
    lam = min(lead_doublings(truth, b, ns, c_max) for b in b_ps)
    return Truth(stratum, truth.params, lead_doublings=lam)


def _collapse(rng, truth: Truth, b_ps, ns, c_max) -> Truth:
    """One B_p's runs collapse: each from a compute around a common start, losing a share of its rise."""
    b = b_ps[int(rng.integers(len(b_ps)))]
    start = _log_uniform(rng, c_max / 16, c_max / 2)
    drops = {(b, n): (start * rng.uniform(0.7, 1.4), rng.uniform(0.05, 0.2)) for n in ns}
    return Truth("unstable", truth.params, drops, truth.lead_doublings)


def _n_star(truth: Truth, B_p, ns, compute: float) -> int:
    return ns[int(np.argmax([float(truth.reward(B_p, n, compute)) for n in ns]))]


def _out_of_model(rng, stratum: str, b_ps, ns, c_max) -> Truth:
    """A truth of an OUT_OF_MODEL stratum: the first draw of its family that crosses (the smallest n
    loses at C_max in every B_p; falling: n* lower at C_max than at C_max / 2^SPAN_DOUBLINGS)."""
    draw = {"b_varies": _b_varies, "correlated": _crossover, "falling": _falling, "late_rise": _crossover,
            "curved": _curved, "hard": _hard}[stratum]
    for _ in range(MAX_TRIES):
        params = draw(rng, b_ps, ns, c_max)
        second, noise = {}, {}
        if stratum == "late_rise":
            a2, b2, c2 = rng.uniform(0.03, 0.1), rng.uniform(1.5, 3), _log_uniform(rng, c_max / 4, 2 * c_max)
            span = np.log2(ns[-1] / ns[0])
            second = {(b, n): (a2 * np.log2(n / ns[0]) / span, b2, c2) for b in b_ps for n in ns}
        if stratum == "correlated":
            noise = {"run_sd": rng.uniform(0.01, 0.02), "wiggle_sd": rng.uniform(0.01, 0.02),
                     "wiggle_doublings": rng.uniform(0.5, 2)}
        if stratum == "hard":
            noise = {"binomial": True}
        truth = Truth(stratum, params, second=second, noise=noise)
        if stratum == "falling":
            ok = all(_n_star(truth, b, ns, c_max) < _n_star(truth, b, ns, c_max / 2 ** SPAN_DOUBLINGS) for b in b_ps)
        else:
            ok = all(truth.reward(b, ns[0], c_max) < truth.best(b, ns, c_max) - 1e-9 for b in b_ps)
        if ok:
            lam = min(lead_doublings(truth, b, ns, c_max) for b in b_ps)
            return Truth(stratum, params, lead_doublings=lam, second=second, noise=noise)
    raise RuntimeError(f"no {stratum} truth in {MAX_TRIES} draws")
