"""Record-breaking points against hand-computed cases (docs/methods.md section 6)."""

import numpy as np
import pandas as pd
import pytest

from isocompute.analysis.fits.records import (ema, metric_bins, record_mask, record_points, record_points_by_run,
                                              running_average, running_frontier)


def test_bins_are_robust_to_float_edges():
    # In floats 0.29 / 0.01 = 28.999999999999996 and 0.57 / 0.01 = 56.99999999999999:
    # a bare floor would put them one bin low.
    assert 0.29 / 0.01 < 29 and 0.57 / 0.01 < 57 and 0.58 / 0.01 < 58
    edges = [k / 100 for k in range(101)]
    assert metric_bins(edges, 0.01).tolist() == list(range(101))
    assert metric_bins([0.12, 0.29, 0.57, 0.0, 1.0], 0.01).tolist() == [12, 29, 57, 0, 100]
    assert metric_bins([0.124999, 0.125], 0.005).tolist() == [24, 25]
    assert metric_bins([0.3], 0.1).tolist() == [3]   # 0.3 / 0.1 = 2.9999999999999996


def test_bins_reject_non_positive_width():
    with pytest.raises(ValueError):
        metric_bins([0.1], 0.0)


def test_record_mask_hand_case():
    v = [0.30, 0.305, 0.31, 0.309, 0.33, 0.33, 0.32, 0.35]
    # bins: 30, 30, 31, 30, 33, 33, 32, 35
    assert np.flatnonzero(record_mask(v, 0.01)).tolist() == [0, 2, 4, 7]


def test_first_point_is_a_record_and_equal_bins_keep_the_earliest():
    assert record_mask([0.5], 0.01).tolist() == [True]
    assert record_mask([0.31, 0.315, 0.319, 0.32], 0.01).tolist() == [True, False, False, True]
    # a drop and a recovery to an already reached bin is not a record
    assert record_mask([0.4, 0.2, 0.4, 0.41], 0.01).tolist() == [True, False, False, True]


def test_record_mask_at_float_edge():
    # 0.29 must be bin 29, strictly above 0.28's bin 28 (a bare floor gives 28).
    assert record_mask([0.28, 0.29], 0.01).tolist() == [True, True]
    assert record_mask([0.56, 0.57, 0.58], 0.01).tolist() == [True, True, True]
    # values within the rounding of an edge count as on it
    assert record_mask([0.289999999999, 0.29], 0.01).tolist() == [True, False]


def test_ema_hand_case_and_off_by_default():
    assert np.allclose(ema([0.3, 0.5, 0.5], 0.5), [0.3, 0.4, 0.45])
    assert np.allclose(ema([0.3, 0.5, 0.5], None), [0.3, 0.5, 0.5])
    assert np.allclose(ema([[0.2, 0.4], [0.0, 1.0]], 0.25, axis=1), [[0.2, 0.25], [0.0, 0.25]])
    with pytest.raises(ValueError):
        ema([0.1, 0.2], 1.5)


def test_record_mask_with_ema():
    # raw bins 30, 50, 50 -> smoothed 0.3, 0.4, 0.45 -> bins 30, 40, 45: all records
    assert record_mask([0.3, 0.5, 0.5], 0.01, ema_alpha=0.5).tolist() == [True, True, True]
    assert record_mask([0.3, 0.5, 0.5], 0.01).tolist() == [True, True, False]


def test_record_points_sorts_by_compute_and_keeps_columns():
    curve = pd.DataFrame({"B_p": 4, "n": 2, "step": [2, 0, 1, 3], "compute": [16, 0, 8, 24],
                          "avg@4": [0.35, 0.30, 0.35, 0.36]})
    rec = record_points(curve, "avg@4")
    assert rec["step"].tolist() == [0, 1, 3]
    assert rec["bin"].tolist() == [30, 35, 36]
    assert {"B_p", "n", "compute"} <= set(rec.columns)


def test_record_points_with_ema_reports_smoothed_values():
    curve = pd.DataFrame({"step": [0, 1, 2], "compute": [0, 1, 2], "avg@4": [0.3, 0.5, 0.5]})
    rec = record_points(curve, "avg@4", ema_alpha=0.5)
    assert np.allclose(rec["smoothed"], [0.3, 0.4, 0.45])
    assert rec["avg@4"].tolist() == [0.3, 0.5, 0.5]


def test_record_points_by_run_is_per_run():
    evals = pd.DataFrame({"B_p": [1, 1, 1, 2, 2, 2], "n": [1, 1, 1, 1, 1, 1], "step": [0, 1, 2] * 2,
                          "compute": [0, 1, 2, 0, 2, 4], "avg@4": [0.1, 0.2, 0.2, 0.5, 0.4, 0.6]})
    rec = record_points_by_run(evals)
    assert rec.groupby("B_p")["step"].apply(list).to_dict() == {1: [0, 1], 2: [0, 2]}


def test_running_frontier():
    assert running_frontier([0, 2, 1, 3], [0.1, 0.3, 0.5, 0.2]).tolist() == [0.1, 0.5, 0.5, 0.5]
    # points sharing a compute share the best of them
    assert running_frontier([1, 1], [0.2, 0.4]).tolist() == [0.4, 0.4]


def test_running_average_hand_cases():
    assert running_average([1, 2, 3, 4, 5], 3).tolist() == [1.5, 2, 3, 4, 4.5]
    assert running_average([1, 2, 3, 4, 5], 1).tolist() == [1, 2, 3, 4, 5]
    out = running_average([1, np.nan, 3, 4], 3)
    assert out.tolist() == [1, 2, 3.5, 3.5]
    assert running_average([[0, 3, 6], [1, 1, 1]], 3).tolist() == [[1.5, 3, 4.5], [1, 1, 1]]
    with pytest.raises(ValueError):
        running_average([1, 2], 0)
