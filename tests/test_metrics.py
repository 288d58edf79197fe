"""Validation metric estimators against brute-force enumeration, and the evaluation table."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from isocompute.errors import InputError
from isocompute.metrics import cumulative_tokens, eval_table, pass_at_k, worst_at_k


@pytest.mark.parametrize("N", range(1, 8))
def test_estimators_match_enumeration_of_k_subsets(N):
    for k in range(1, N + 1):
        for c in range(N + 1):
            outcomes = [1] * c + [0] * (N - c)
            subsets = list(combinations(outcomes, k))
            assert pass_at_k(N, c, k) == pytest.approx(np.mean([max(s) for s in subsets]))
            assert worst_at_k(N, c, k) == pytest.approx(np.mean([min(s) for s in subsets]))


def _samples(correct_by_step: dict[int, list[list[int]]]) -> pd.DataFrame:
    rows = []
    for step, problems in correct_by_step.items():
        for p, outcomes in enumerate(problems):
            for j, c in enumerate(outcomes):
                rows.append({"step": step, "problem": f"p{p}", "sample": j, "correct": bool(c), "n_tokens": 5 + j})
    return pd.DataFrame(rows)


def test_eval_table_hand_values():
    samples = _samples({0: [[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]],
                        10: [[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]]})
    tokens = pd.Series({0: 0.0, 10: 500.0})
    t = eval_table(samples, 4, B_p=2, n=8, tokens=tokens, split="easy", run="bp2_n8")
    assert list(t.columns[:7]) == ["split", "run", "B_p", "n", "step", "compute", "tokens"]
    assert t["compute"].tolist() == [0, 160] and t["tokens"].tolist() == [0.0, 500.0]
    assert t["avg@4"].tolist() == pytest.approx([(1 + 0 + 4) / 12, (2 + 1 + 4) / 12])
    assert t["best@4"].tolist() == pytest.approx([2 / 3, 1.0])
    assert t["worst@4"].tolist() == pytest.approx([1 / 3, 1 / 3])
    # N = k: the unbiased estimators are the plain ones.
    assert t["pass@4_unbiased"].tolist() == pytest.approx(t["best@4"].tolist())
    assert t["worst@4_unbiased"].tolist() == pytest.approx(t["worst@4"].tolist())
    assert (t["worst@4"] <= t["avg@4"]).all() and (t["avg@4"] <= t["best@4"]).all()
    assert t["response_length"].tolist() == [6.5, 6.5]


def test_eval_table_with_more_samples_than_k():
    # 8 samples, 2 correct: avg/best/worst@4 come from the first four; the estimators use all 8.
    samples = _samples({0: [[0, 0, 0, 0, 1, 1, 0, 0]]})
    t = eval_table(samples, 4, B_p=1, n=1)
    assert t[["avg@4", "best@4", "worst@4"]].iloc[0].tolist() == [0.0, 0.0, 0.0]
    assert t["pass@1"].iloc[0] == pytest.approx(0.25)
    assert t["pass@4_unbiased"].iloc[0] == pytest.approx(1 - 15 / 70)
    assert t["worst@4_unbiased"].iloc[0] == 0.0
    assert np.isnan(t["tokens"].iloc[0])


def test_eval_table_needs_k_samples():
    with pytest.raises(InputError, match="eval.k"):
        eval_table(_samples({0: [[1, 0]]}), 4, B_p=1, n=1)


def test_cumulative_tokens_direct_and_from_verl_response_length():
    direct = [{"step": 0, "data": {"perf/tokens_generated_cumulative": 0}},
              {"step": 1, "data": {"perf/tokens_generated_cumulative": 40, "response_length/mean": 5.0}}]
    assert cumulative_tokens(direct, 8).to_dict() == {0: 0.0, 1: 40.0}
    verl = [{"step": 1, "data": {"response_length/mean": 5.0}}, {"step": 2, "data": {"response_length/mean": 4.0}},
            {"step": 2, "data": {"val-core/x/acc/mean@4": 0.5}}]
    assert cumulative_tokens(verl, 8).to_dict() == {0: 0.0, 1: 40.0, 2: 72.0}
    gap = [{"step": 1, "data": {"response_length/mean": 5.0}}, {"step": 3, "data": {"response_length/mean": 4.0}}]
    s = cumulative_tokens(gap, 8)
    assert s[1] == 40.0 and np.isnan(s[2]) and np.isnan(s[3])
