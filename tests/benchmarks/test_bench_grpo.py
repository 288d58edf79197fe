"""benchmarks/bench_grpo_vs_trl.py --quick, on a tiny model: both measurements of every
backend run to the end (TRL where ISOCOMPUTE_TRL_PYTHON names a venv with it) and report what they measured (not how fast: no timing asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support import REPO, require_slow


@pytest.mark.slow
def test_quick_bench_measures_the_local_backend_and_trl(tmp_path):
    import torch

    from support import TINY_CONFIG
    from isocompute.config import check_config
    from isocompute.data.pool import build_pool
    from isocompute.model.embedded import build_embedded_base_model

    torch.set_num_threads(1)
    cfg = check_config(json.loads(json.dumps(TINY_CONFIG)))
    pool = build_pool(cfg)
    build_embedded_base_model(cfg, pool, tmp_path / "model")
    pool.iloc[:40].to_parquet(tmp_path / "train.parquet")
    pool.iloc[40:44].to_parquet(tmp_path / "val.parquet")
    require_slow("runs the benchmark bench_grpo_vs_trl.py")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_grpo_vs_trl.py"), "--quick",
                           "--model", str(tmp_path / "model"), "--train-file", str(tmp_path / "train.parquet"),
                           "--val-file", str(tmp_path / "val.parquet"),
                           *(["--trl-python", os.environ["ISOCOMPUTE_TRL_PYTHON"]]
                             if os.environ.get("ISOCOMPUTE_TRL_PYTHON") else [])],
                          capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    results = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("JSON "))[5:])["results"]
    # TRL lives in a venv of its own (verl breaks with it installed): measured when one is given.
    assert set(results) == {"local"} | ({"trl"} if os.environ.get("ISOCOMPUTE_TRL_PYTHON") else set())
    for backend, r in results.items():
        assert r["steady"]["rollouts"] == 3 * 4 * 4, backend   # 3 timed steps of B_p 4 x n 4
        assert r["job"]["rollouts"] == 6 * 4 * 4, backend
        assert r["steady"]["rollouts_per_cpu_s"] > 0 and r["job"]["rollouts_per_cpu_s"] > 0
        for measure in ("steady", "job"):   # --quick: one run, its own range
            assert r[measure]["repeats"] == 1, (backend, measure)
            assert r[measure]["rollouts_per_cpu_s_range"] == [r[measure]["rollouts_per_cpu_s"]] * 2
    # The local job ran its validation schedule (step 0 and the last step at least); TRL has none.
    assert results["local"]["job"]["evaluations"] >= 2
    assert results.get("trl", {"job": {"evaluations": 0}})["job"]["evaluations"] == 0
    assert 0 < results["local"]["steady"]["peak_share_cpu"] < 1
