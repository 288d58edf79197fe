"""verl's reward function for the cluster backend: the project's one grader
(`isocompute.grading.judge`) behind verl's custom-reward signature.

verl 0.9 loads this file by path (`reward.custom_reward_function.path/name`)
and calls it once per rollout from its reward workers. The returned dict's
extra keys become verl's `reward_extra_info`: they travel into its validation
dumps (`validation_data_dir`), which is how each dumped sample carries its
`problem_id`; verl's validation
metrics skip string-valued keys, `acc` makes verl report
`val-core/<source>/acc/mean@k`, and `timed_out` (1.0 for a rollout math-verify
could not decide in time, rewarded 0 like a wrong one) gives
`val-aux/<source>/timed_out/mean@k`, the share of timeouts. verl's training
metrics take no extra keys (and its V1 trainer's rollout dumps drop them): the
project's trainer mode counts a training step's `timed_out` into its metrics
(`verl.timeouts`, `verl.scheduled`).
"""

from __future__ import annotations

from typing import Any

# Only the grader: verl's reward workers load this file by path, so it must not
# pull in the backend package around it (run_verl, overrides) or anything heavy.
from isocompute.grading import Verdict, judge

# Per-comparison bound of the grader (seconds). A rollout batch of 65k
# completions must not stall on one pathological answer.
GRADE_TIMEOUT_S = 2.0


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  **kwargs) -> dict:
    """{'score': 1.0 or 0.0, 'acc': the same, 'timed_out': 1.0 if the grader ran out of time
    (score 0.0) else 0.0, 'problem_id': extra_info's id (or ''), 'data_source': the sample's}.

    The 0/1 outcome reward of docs/methods.md section 3: every split and evaluation set is
    graded the same way. `data_source` is echoed so that the validation dumps say which
    evaluation set a sample is of (`verl.eval_sets.split_dumps`). `kwargs` takes whatever else a
    verl reward manager passes (reward-model addresses, tokenizers).
    """
    verdict, _ = judge(solution_str or "", str(ground_truth), timeout_s=GRADE_TIMEOUT_S)
    score = 1.0 if verdict.correct else 0.0
    problem_id = ""
    if isinstance(extra_info, dict) and extra_info.get("problem_id") is not None:
        problem_id = str(extra_info["problem_id"])
    return {"score": score, "acc": score, "timed_out": float(verdict is Verdict.TIMED_OUT),
            "problem_id": problem_id, "data_source": str(data_source)}
