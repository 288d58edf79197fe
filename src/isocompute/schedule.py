"""When a run is validated: the compute-matched evaluation schedule.

Validating every K steps gives a run with B = B_p * n rollouts per step
C_max / (B K) evaluations, so small n is evaluated far more often and its
running maxima are lifted more by noise (docs/methods.md section 11). Evaluating
every run of a study at the same log-spaced compute points removes that
imbalance. `first_rung_below_one` bounds an adaptive sweep's rungs (their compute
is `sweep.SweepSettings.budgets`). Pure Python (math only): the recipe (`train.recipe`), the sweep (`sweep`) and the
analysis all read it from here.
"""

from __future__ import annotations

import math


def compute_points(c_max: float, points: int, min_compute: float | None = None) -> list[float]:
    """`points` log-spaced compute values from `min_compute` to `c_max`, inclusive.

    `min_compute=None` puts one point per doubling: c_max * 2^-(points - 1).
    The values depend only on the study (c_max, points, min_compute), never on
    the run, which is what makes the runs' evaluations line up.
    """
    if points < 1:
        raise ValueError(f"points must be >= 1, got {points!r}")
    if not c_max > 0:
        raise ValueError(f"c_max must be > 0, got {c_max!r}")
    lo = c_max * 2.0 ** -(points - 1) if min_compute is None else float(min_compute)
    if not 0 < lo <= c_max:
        raise ValueError(f"min_compute must be in (0, c_max], got {min_compute!r} with c_max {c_max!r}")
    if points == 1:
        return [float(c_max)]
    ratio = math.log(c_max / lo) / (points - 1)
    return [lo * math.exp(ratio * i) for i in range(points)]


def compute_schedule_steps(B: int, M_max: int, points: int, *, min_compute: float | None = None,
                           c_max: float | None = None) -> tuple[int, ...]:
    """Validation steps of a run with B rollouts per step and M_max steps.

    The run is validated at step 0, at the step nearest each of the study's
    compute points (`compute_points(c_max, points, min_compute)`, c_max
    defaulting to B * M_max) and at its last step M_max. Compute points below
    half a step are left out (a run cannot validate before its first update),
    and points that round to the same step count once, so a run with a large B
    has fewer distinct evaluations at small compute.
    """
    if B < 1 or M_max < 0:
        raise ValueError(f"need B >= 1 and M_max >= 0, got B={B!r}, M_max={M_max!r}")
    if M_max == 0:
        return (0,)
    c_max = B * M_max if c_max is None else c_max
    steps = {0, M_max}
    for c in compute_points(c_max, points, min_compute):
        step = int(math.floor(c / B + 0.5))
        if 1 <= step <= M_max:
            steps.add(step)
    return tuple(sorted(steps))


MAX_RUNGS = 64          # the schema's bound on sweep.rungs (C_max / sqrt(2)^63 is 2^31.5 below C_max)


def first_rung_below_one(c_max: float, eta: float, rungs: int) -> bool:
    """Whether an adaptive sweep's first rung, c_max / eta^(rungs - 1), is below one rollout (in logs:
    eta^(rungs - 1) overflows long before the sweep's bound on rungs)."""
    return (int(rungs) - 1) * math.log(eta) > math.log(c_max)
