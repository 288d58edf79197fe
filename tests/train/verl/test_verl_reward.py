"""verl's reward function (`train/backends/verl/reward.py`): the project's grader
behind verl's custom-reward signature, loaded by path and called the way
verl 0.9.1 loads and calls it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from isocompute.train.backends.verl import reward
from isocompute.train.backends.verl.overrides import REWARD_FUNCTION_NAME, reward_function_path


def test_reward_function_grades_verl_style_calls():
    call = dict(data_source="math__combined", ground_truth="\\frac{3}{4}",
                extra_info={"index": 7, "problem_id": "math-0000007", "num_turns": 1,
                            "rollout_reward_scores": {}})
    right = reward.compute_score(solution_str="so the answer is $\\boxed{\\dfrac{3}{4}}$", **call)
    wrong = reward.compute_score(solution_str="I get \\boxed{0.7}", **call)
    assert right == {"score": 1.0, "acc": 1.0, "timed_out": 0.0, "problem_id": "math-0000007",
                     "data_source": "math__combined"}
    assert wrong == {"score": 0.0, "acc": 0.0, "timed_out": 0.0, "problem_id": "math-0000007",
                     "data_source": "math__combined"}
    # Extra keyword arguments of other reward managers and a missing extra_info are fine.
    none = reward.compute_score("math", "", "4", None, reward_router_address=None)
    assert none == {"score": 0.0, "acc": 0.0, "timed_out": 0.0, "problem_id": "", "data_source": "math"}


def test_verl_loads_the_reward_function_by_path_and_its_metrics_skip_the_id():
    """What verl 0.9.1 does with it: load by path (reward.custom_reward_function), call it
    per rollout, and aggregate validation metrics with a string-valued problem_id present."""
    from verl.trainer.ppo.metric_utils import process_validation_metrics
    from verl.utils.import_utils import load_extern_object

    fn = load_extern_object(module_path=str(reward_function_path()), object_name=REWARD_FUNCTION_NAME)
    results = [fn(data_source="math", solution_str=f"\\boxed{{{a}}}", ground_truth="2",
                  extra_info={"problem_id": pid}) for pid, a in [("p1", 2), ("p1", 3), ("p2", 2), ("p2", 2)]]
    infos = {"reward": [r["score"] for r in results], **{k: [r[k] for r in results] for k in results[0]}}
    metrics = process_validation_metrics(["math"] * 4, ["u1", "u1", "u2", "u2"], infos)
    assert metrics["math"]["acc"]["mean@2"] == pytest.approx(0.75)
    assert "problem_id" not in metrics["math"] and "data_source" not in metrics["math"]


def test_a_timed_out_rollout_scores_zero_and_verl_counts_it(monkeypatch):
    """A rollout math-verify could not decide in time: reward 0 like a wrong one, and
    `timed_out` 1.0, which verl's validation metrics average into the share of timeouts."""
    from verl.trainer.ppo.metric_utils import process_validation_metrics

    from isocompute.grading import Verdict

    def judged(completion, truth, timeout_s):
        assert timeout_s == reward.GRADE_TIMEOUT_S
        return (Verdict.TIMED_OUT, "timeout") if "tower" in completion else (Verdict.CORRECT, "numeric")

    monkeypatch.setattr(reward, "judge", judged)
    results = [reward.compute_score("math", text, "2", {"problem_id": pid})
               for pid, text in [("p1", "tower"), ("p1", "\\boxed{2}"), ("p2", "tower"), ("p2", "\\boxed{2}")]]
    assert [(r["score"], r["timed_out"]) for r in results] == [(0.0, 1.0), (1.0, 0.0), (0.0, 1.0), (1.0, 0.0)]
    infos = {"reward": [r["score"] for r in results], **{k: [r[k] for r in results] for k in results[0]}}
    metrics = process_validation_metrics(["math"] * 4, ["u1", "u1", "u2", "u2"], infos)
    assert metrics["math"]["timed_out"]["mean@2"] == pytest.approx(0.5)
    assert metrics["math"]["acc"]["mean@2"] == pytest.approx(0.5)


def test_the_reward_file_loads_stand_alone():
    """verl's reward workers load the file by path: it must not pull in the backend
    package (run_verl, the trainer side) or anything heavy, only the grader."""
    code = ("import importlib.util, json, sys\n"
            f"spec = importlib.util.spec_from_file_location('reward', {str(reward_function_path())!r})\n"
            "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('isocompute', 'torch', 'verl', 'transformers', 'pandas'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    # The grader package (split into modules) and the leaves it writes its cache with; nothing else.
    assert "isocompute.grading" in loaded
    leaves = {"isocompute", "isocompute.atomic", "isocompute.errors"}
    assert all(m in leaves or m.startswith("isocompute.grading.") or m == "isocompute.grading" for m in loaded), loaded
