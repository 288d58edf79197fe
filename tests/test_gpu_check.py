"""benchmarks/gpu_check.py, the prepared check for a machine with one GPU, in its
--dry-run mode: the plan it would run, the Snakemake dry run of its verl cell
through the train and score rules, and verl's own resolution of that command."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO


def test_gpu_check_dry_run_plans_every_step_and_verl_resolves_its_command(tmp_path):
    out = tmp_path / "plan.json"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--dry-run",
                           "--work", str(tmp_path / "work"), "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    plan = json.loads(out.read_text())
    assert plan["dry_run"] is True
    assert plan["data"]["jobs"] == {"pool": 1, "base_model": 1, "difficulty_chunk": 1, "difficulty": 1, "splits": 1}
    # The local backend: two cells, each on CUDA and on the CPU, with the train rule's command.
    cells = plan["local"]["cells"]
    assert [c["cell"] for c in cells] == ["easy/bp8_n8", "easy/bp16_n8"]
    for cell in cells:
        assert '"device": "cuda"' in cell["cuda"]["command"] and '"device": "cpu"' in cell["cpu"]["command"]
        assert cell["cuda"]["command"].split()[1] == "train"
    assert '"backend": "vllm"' in plan["vllm"]["sample"]["command"]
    # verl: one cell through the train rule (with its options file) and then the score rule.
    jobs = plan["verl"]["train_and_score"]["jobs"]
    assert jobs["train"] == 1 and jobs["score"] == 1 and jobs["train_options"] == 1
    resolved = plan["verl"]["command"]["resolved"]
    assert resolved is not None, plan["verl"]["command"].get("error")
    assert resolved["trainer.nnodes"] == 1 and resolved["trainer.n_gpus_per_node"] == 1
    assert resolved["trainer.total_training_steps"] == 5
    assert (resolved["data.train_batch_size"], resolved["actor_rollout_ref.rollout.n"]) == (4, 8)
    assert resolved["actor_rollout_ref.rollout.name"] == "vllm"
    assert resolved["actor_rollout_ref.model.path"].endswith("results/gpu_check/model/base")
