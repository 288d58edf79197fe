"""verl's dumps into the project's run files: validation dumps, annotated, score
into the same table as the local backend's; rollout dumps become the local
backend's training pass rates. Both written by verl 0.9.1's own dump writer.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isocompute.train.backends.verl import dumps as verl_dumps, reward
from isocompute.train.backends.verl.dumps import annotate_dumps
from isocompute.train.backends.verl.files import VerlRunFiles
from isocompute.train.backends.verl.pass_rates import PassRateRecorder, prompt_index, step_pass_rates
from isocompute.train.run_logs import read_jsonl
from support import VENV_BIN


def verl_write_generations():
    """verl 0.9.1's own dump writer (trainer_base._write_generations), lifted from its source:
    the module needs verl's GPU extras to import, the writer itself does not."""
    import verl

    src = Path(verl.__file__).parent / "trainer" / "ppo" / "v1" / "trainer_base.py"
    for node in ast.walk(ast.parse(src.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == "_write_generations":
            node.decorator_list = []
            ns = {"os": os, "json": json, "np": np}
            exec(compile(ast.Module(body=[node], type_ignores=[]), str(src), "exec"), ns)
            return ns["_write_generations"]
    raise AssertionError(f"_write_generations not found in {src}")


# Validation samples of a run with 2 problems x 4 samples at steps 0 and 2.
SAMPLES = {
    0: [("p-a", "2+2", "4", ["\\boxed{4}", "\\boxed{5}", "4", "\\boxed{3}"]),
        ("p-b", "3*3", "9", ["\\boxed{8}", "\\boxed{7}", "\\boxed{6}", "no idea"])],
    2: [("p-a", "2+2", "4", ["\\boxed{4}", "\\boxed{4}", "\\boxed{4}", "\\boxed{4}"]),
        ("p-b", "3*3", "9", ["\\boxed{9}", "\\boxed{7}", "\\boxed{6}", "\\boxed{9}"])],
}


def write_verl_run(run_dir: Path) -> None:
    """A verl run folder as verl writes it: dumps with reward extra info, file-logger metrics."""
    write = verl_write_generations()
    for step, problems in SAMPLES.items():
        inputs, outputs, gts, scores, extra = [], [], [], [], {"reward": [], "score": [], "acc": [],
                                                              "problem_id": [], "uid": []}
        for pid, question, truth, outs in problems:
            for i, out in enumerate(outs):
                r = reward.compute_score("math", out, truth, {"problem_id": pid})
                inputs.append(f"user\n{question}\nassistant\n")
                outputs.append(out)
                gts.append(truth)
                scores.append(r["score"])
                extra["reward"].append(r["score"])
                for k in ("score", "acc", "problem_id"):
                    extra[k].append(r[k])
                extra["uid"].append(f"{pid}-uid_0_{i}")
        write(inputs, outputs, gts, scores, extra, str(run_dir / "generations"), step)
    metrics = [{"step": 0, "data": {"val-core/math/acc/mean@4": 0.25}},
               {"step": 1, "data": {"response_length/mean": 10.0}},
               {"step": 2, "data": {"response_length/mean": 20.0, "val-core/math/acc/mean@4": 0.75}}]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    write_marker(run_dir)


def write_marker(run_dir: Path) -> None:
    """run.json as the train rule leaves it, with what scoring checks the dumps against."""
    (run_dir / "run.json").write_text(json.dumps({"eval_steps": sorted(SAMPLES), "val_problems": 2}))


def write_local_run(run_dir: Path) -> None:
    """The same samples as the local backend dumps them."""
    gens = run_dir / "generations"
    gens.mkdir(parents=True)
    for step, problems in SAMPLES.items():
        lines = []
        for pid, question, truth, outs in problems:
            for i, out in enumerate(outs):
                r = reward.compute_score("math", out, truth, {"problem_id": pid})
                lines.append({"input": f"user\n{question}\nassistant\n", "output": out, "gts": truth,
                              "score": r["score"], "step": step, "problem_id": pid, "sample": i,
                              "n_tokens": len(out.split())})
        (gens / f"{step}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    # 2 problems x 2 rollouts per step: 10 and 20 tokens per rollout on average.
    metrics = [{"step": 0, "data": {"perf/tokens_generated_cumulative": 0}},
               {"step": 1, "data": {"perf/tokens_generated_cumulative": 40}},
               {"step": 2, "data": {"perf/tokens_generated_cumulative": 120}}]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    write_marker(run_dir)


def score(run_dir: Path, out: Path) -> pd.DataFrame:
    params = json.dumps({"eval": {"k": 4, "samples": 4}, "grading": {"max_timeout_share": 0.01}, "seed": 0})
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "score", "--params", params, "--split", "easy",
                           "--bp", "2", "--n", "2", "--run-dir", str(run_dir), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pd.read_parquet(out)


def test_verl_dumps_score_into_the_same_table_as_the_local_backend(tmp_path, monkeypatch):
    verl_run, local_run = tmp_path / "verl", tmp_path / "local"
    write_verl_run(verl_run)
    raw = read_jsonl(verl_run / "generations" / "0.jsonl")
    assert {"input", "output", "gts", "score", "step", "problem_id", "acc", "uid"} <= set(raw[0])
    # run_verl annotates the dumps after training: sample index and completion tokens
    # (the model's tokenizer there; whitespace words here, as in the local fixture).
    monkeypatch.setattr(verl_dumps, "token_counter", lambda model: (lambda text: len(text.split())))
    assert annotate_dumps(verl_run / "generations", "Qwen/Qwen2.5-7B-Instruct") == 2
    assert annotate_dumps(verl_run / "generations", "Qwen/Qwen2.5-7B-Instruct") == 0  # idempotent
    annotated = read_jsonl(verl_run / "generations" / "2.jsonl")
    assert [r["sample"] for r in annotated] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert {k: annotated[5][k] for k in ("input", "output", "gts", "score", "step")} == \
        {"input": "user\n3*3\nassistant\n", "output": "\\boxed{7}", "gts": "9", "score": 0.0, "step": 2}

    write_local_run(local_run)
    from_verl = score(verl_run, tmp_path / "verl.parquet")
    from_local = score(local_run, tmp_path / "local.parquet")
    pd.testing.assert_frame_equal(from_verl, from_local)
    assert list(from_verl["step"]) == [0, 2]
    assert list(from_verl["avg@4"]) == [pytest.approx(2 / 8), pytest.approx(6 / 8)]
    assert list(from_verl["tokens"]) == [0.0, 120.0]


def test_training_pass_rates_come_from_verls_rollout_dumps(tmp_path):
    """verl's per-step rollout dumps -> the local backend's train_pass_rates.jsonl records,
    problems named by rendering the split's prompts the way verl renders and dumps them."""
    from isocompute.data.pool import Family, embedded_pool
    from isocompute.model.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    pool = embedded_pool([Family("a", 2, (1, 1), "+", 0.5)], 3, 0, "Put it in \\boxed{}.")
    pool.to_parquet(tmp_path / "train.parquet")
    index = prompt_index(tmp_path / "train.parquet", str(tmp_path / "tok"))
    assert sorted(index.values()) == ["arith-000000", "arith-000001", "arith-000002"]

    # Two prompts x 3 rollouts at step 5, as verl's trainer dumps them: the input is the
    # left-padded prompt decoded without special tokens, the uid '{prompt}_{session}_{output}'.
    write = verl_write_generations()
    inputs, scores, uids = [], [], []
    for p, (messages, hits) in enumerate([(pool["prompt"][1], 2), (pool["prompt"][2], 0)]):
        ids = tok.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True, tokenize=True)
        ids = [tok.pad_token_id] * 7 + list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        for i in range(3):
            inputs.append(tok.decode(ids, skip_special_tokens=True))
            scores.append(1.0 if i < hits else 0.0)
            uids.append(f"uid{p}_0_{i}")
    files = VerlRunFiles(tmp_path / "run")
    write(inputs, ["out"] * 6, ["4"] * 6, scores, {"uid": uids}, str(files.rollouts), 5)
    write(inputs[:3], ["out"] * 3, ["4"] * 3, [1.0] * 3, {"uid": uids[:3]}, str(files.rollouts), 6)
    recorder = PassRateRecorder(files, index.get)
    assert recorder.collect() == 1 and not (files.rollouts / "5.jsonl").exists()  # step 6 may be unfinished
    assert read_jsonl(files.pass_rates) == [
        {"step": 5, "problem_id": "arith-000001", "pass_rate": pytest.approx(2 / 3)},
        {"step": 5, "problem_id": "arith-000002", "pass_rate": 0.0}]
    assert recorder.collect(final=True) == 1 and read_jsonl(files.pass_rates)[-1]["step"] == 6
    # A prompt the index does not know is still counted, under a digest of its text.
    rec = step_pass_rates([{"step": 1, "input": "??", "score": 1.0, "uid": "u_0_0"}], {}.get)
    assert rec[0]["problem_id"].startswith("input-") and rec[0]["pass_rate"] == 1.0
