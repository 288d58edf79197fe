"""One criterion for verl's weight sync into its rollout engine (vLLM), for the CPU twin's test
(tests/envs/test_twin_verl_vllm.py) and the GPU check (benchmarks/gpu_check.py): both read a run's
metrics.jsonl and judge it here. Pure: no verl, no torch.

Per step verl logs, on the step's sampled tokens, the rollout engine's probabilities against the
actor's (before the step's update): SYNCED, verl's training/rollout_probs_diff_mean. The
project's trainer mode logs the same with the reference model, the initial weights, in the
rollout's place (STALE, scheduled.stale_rollout_metrics): what SYNCED would read if the sync had
stopped after the first one.

Before the first update both engines hold the initial weights: SYNCED there is the machine's
kernel rounding (the floor) and STALE is 0. A step's rollouts follow a real update from
FIRST_MOVED on: update 1 moves the actor (the recipe's warm-up starts at lr / warmup_steps on
both backends, train.recipe.warmup_lr), so step 2 is the first. There the actor must have moved
(STALE above STALE_FACTOR times the floor: otherwise no update was real and the check could not
tell a stale engine from a synced one), and the engine with it (STALE above STALE_FACTOR times
SYNCED). At every step SYNCED stays below SYNC_TOL. `judge_metrics` judges a run's
metrics.jsonl as the GPU check reports it.
"""

from __future__ import annotations

import json
from pathlib import Path

SYNCED = "training/rollout_probs_diff_mean"
STALE = "isocompute/ref_probs_diff_mean"
# vLLM's and the trainer's float32 probabilities of the same tokens under the same weights differ by
# kernel rounding only: 5.5e-4 to 1.7e-3 on the CPU twin (a stale vLLM reads 6e-2 to 9e-2 after a
# real update there). SYNC_TOL bounds the rounding with room; the discriminating checks are relative.
SYNC_TOL, STALE_FACTOR = 1e-2, 10
FIRST_MOVED = 2  # the first step whose rollouts follow an update at a positive learning rate


def step_pairs(metrics: Path) -> dict[int, dict]:
    """{step: {SYNCED, STALE}} of a metrics.jsonl (verl's file-logger envelope), steps that logged
    either (verl logs SYNCED only where the rollout returns its log-probs)."""
    rows = [json.loads(line) for line in Path(metrics).read_text().splitlines() if line.strip()]
    pairs = {int(r["step"]): {k: r["data"][k] for k in (SYNCED, STALE) if k in r.get("data", {})} for r in rows}
    return {s: d for s, d in pairs.items() if d}


def stale_counterfactual(pairs: dict[int, dict]) -> dict[int, dict]:
    """The same steps as a rollout engine that kept the initial weights would have logged them."""
    return {s: {**d, SYNCED: d[STALE]} for s, d in pairs.items() if STALE in d}


def verdict(pairs: dict[int, dict], first_moved: int = FIRST_MOVED) -> dict:
    """Judge the sync on {step: {SYNCED, STALE}}: {"ok", "floor", "judged" (steps), "failures"}.
    Not ok when it cannot judge: no step before `first_moved` (no floor) or none from it on."""
    both = {s: d for s, d in sorted(pairs.items()) if SYNCED in d and STALE in d}
    before = [d[SYNCED] for s, d in both.items() if s < first_moved]
    judged = [s for s in both if s >= first_moved]
    failures = [f"step {s}: the rollout's probabilities are not the actor's ({d[SYNCED]:.2e} >= {SYNC_TOL})"
                for s, d in both.items() if not d[SYNCED] < SYNC_TOL]
    if not before or not judged:
        failures.append(f"nothing to judge: steps logged {sorted(both)}, a floor needs one before step "
                        f"{first_moved} and the judgement one from it on")
    floor = max(before) if before else float("nan")
    for s in judged:
        synced, stale = both[s][SYNCED], both[s][STALE]
        if not stale > STALE_FACTOR * floor:
            failures.append(f"step {s}: the actor moved by rounding only (stale {stale:.2e}, floor {floor:.2e}): "
                            "no real update before it")
        if not stale > STALE_FACTOR * synced:
            failures.append(f"step {s}: the rollout reads the initial weights (synced {synced:.2e}, "
                            f"stale {stale:.2e})")
    return {"ok": not failures, "floor": floor, "judged": judged, "failures": failures}


def judge_metrics(metrics: Path) -> dict:
    """A run's metrics.jsonl judged (`verdict` of its `step_pairs`): {"logged", "per_step", and the
    verdict's keys}; {"logged": False, "why"} where there is no such file."""
    metrics = Path(metrics)
    if not metrics.is_file():
        return {"logged": False, "why": f"no {metrics.name}"}
    per_step = step_pairs(metrics)
    return {"logged": bool(per_step), "per_step": per_step, **verdict(per_step)}
