"""The local GRPO backend on a tiny real model: the shared-prompt forward equals a
plain one, a killed and restarted run reproduces an uninterrupted one, and a
checkpoint from another config is not resumed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from isocompute.config import check_config
from isocompute.grid import Cell
from isocompute.layout import RunPaths
from isocompute.train.backends import train_run

from support import TINY_CONFIG, require_slow, run_benchmark

pytestmark = pytest.mark.slow   # each test trains (the module's fixture pretrains the base model)


class Killed(RuntimeError):
    pass


@pytest.fixture(scope="module")
def tiny_model_and_splits(tmp_path_factory):
    """A briefly pretrained tiny model and small train/val split files cut from the pool."""
    require_slow("pretrains a base model and trains")
    from isocompute.data.pool import build_pool
    from isocompute.model.embedded import build_embedded_base_model

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("tiny_train")
    cfg = check_config(json.loads(json.dumps(TINY_CONFIG)))
    pool = build_pool(cfg)
    build_embedded_base_model(cfg, pool, root / "model")
    easy = pool[pool["extra_info"].map(lambda e: e["family"] == "add_small")].reset_index(drop=True)
    easy.iloc[:24].to_parquet(root / "train.parquet")
    easy.iloc[24:30].to_parquet(root / "val.parquet")
    return root


def tiny_cfg(**train):
    return check_config({"seed": 0, "splits": {"names": ["easy", "hard"]}, "sampling": {"max_new_tokens": 8},
                         "train": {"eval_schedule": "steps", "eval_interval": 2, "lr_base": 1e-3, "B_ref": 8,
                                   "warmup_steps": 2, **train},
                         "eval": {"samples": 4}})


def paths_for(root: Path, run: str) -> RunPaths:
    return RunPaths(root / run, root / "train.parquet", root / "val.parquet", str(root / "model"))


def eval_rows(paths: RunPaths) -> dict:
    """Every validation dump, step by step (what the scoring reads)."""
    return {p.stem: p.read_text() for p in sorted(paths.generations.glob("*.jsonl"))}


def metric_rows(paths: RunPaths, drop=("timing_s/", "perf/rollouts_per_s", "perf/tokens_per_s", "time/")) -> list:
    rows = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    return [(r["step"], {k: v for k, v in r["data"].items() if not k.startswith(drop)}) for r in rows]


def test_grouped_prompt_forward_equals_a_plain_forward(tiny_model_and_splits):
    from isocompute.model.io import load_policy, render_prompts
    from isocompute.data.schema import read_problems
    from isocompute.sampling import pack_prompts
    from isocompute.train.backends.local import pack_responses, response_logits

    model, tok = load_policy(tiny_model_and_splits / "model")
    prompts = render_prompts(tok, read_problems(tiny_model_and_splits / "train.parquet")["prompt"][:3])
    prompts[1] = prompts[1][3:]  # unequal prompt lengths exercise the left padding
    g = torch.Generator().manual_seed(0)
    completions = [[int(t) for t in torch.randint(3, 60, (int(k),), generator=g)] for k in (5, 1, 3, 4, 2, 5)]
    row_group = torch.tensor([0, 0, 1, 1, 2, 2])
    pb = pack_prompts(prompts, tok.pad_token_id, "cpu")
    responses, mask = pack_responses(completions, tok.pad_token_id, "cpu")
    shared = response_logits(model, pb, row_group, responses, mask)
    ids = torch.cat([pb[0][row_group], responses], 1)
    attn = torch.cat([pb[1][row_group], mask], 1)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    P = pb[0].shape[1]
    plain = model(input_ids=ids, attention_mask=attn, position_ids=pos).logits[:, P - 1:-1]
    assert torch.allclose(shared[mask.bool()], plain[mask.bool()], atol=1e-4)


def test_killed_run_resumes_to_the_same_evaluations(tiny_model_and_splits):
    root = tiny_model_and_splits
    cfg = tiny_cfg()
    cell = Cell("easy", 3, 4, 7, 84)  # K = 2: evaluations at 0, 2, 4, 6, 7
    straight = paths_for(root, "straight")
    summary = train_run(cfg, cell, straight)
    assert summary["steps"] == 7 and summary["eval_steps"] == [0, 2, 4, 6, 7]

    resumed = paths_for(root, "resumed")

    def kill_at(step_to_kill):
        def hook(step):
            if step == step_to_kill:
                raise Killed(step)
        return hook

    # Killed after step 5's records but before any checkpoint past 4; then after step 6's
    # evaluation but before its checkpoint; then finished.
    for kill in (5, 6):
        with pytest.raises(Killed):
            train_run(cfg, cell, resumed, on_step_end=kill_at(kill))
    summary = train_run(cfg, cell, resumed)
    assert summary["resumed_from"] == 4 and summary["steps"] == 7

    assert eval_rows(resumed) == eval_rows(straight)
    assert metric_rows(resumed) == metric_rows(straight)
    assert [r[0] for r in metric_rows(resumed)] == list(range(8))
    assert resumed.pass_rates.read_text() == straight.pass_rates.read_text()
    # The scored tables agree too.
    from isocompute.metrics import eval_table

    def table(paths):
        df = pd.concat([pd.read_json(p, lines=True) for p in sorted(paths.generations.glob("*.jsonl"))])
        df = df.assign(problem=df["problem_id"], correct=df["score"] > 0.5)
        return eval_table(df[["step", "problem", "sample", "correct", "n_tokens"]], 4, B_p=3, n=4)

    pd.testing.assert_frame_equal(table(resumed), table(straight))
    rec = json.loads((straight.generations / "2.jsonl").read_text().splitlines()[0])
    assert set(rec) == {"input", "output", "gts", "score", "step", "problem_id", "sample", "n_tokens"}
    assert rec["step"] == 2 and isinstance(rec["score"], float)


def test_rungs_resume_to_the_uninterrupted_run(tiny_model_and_splits):
    """An adaptive sweep's rungs: stopped (checkpointed) at step 3, then 5 (neither an evaluation
    step), then trained to M_max, the run equals one trained straight through, and no step is
    trained twice. A rung asked for again once the run is past it trains nothing."""
    root = tiny_model_and_splits
    cfg = tiny_cfg()
    cell = Cell("easy", 3, 4, 7, 84)  # K = 2: evaluations at 0, 2, 4, 6, 7
    straight = paths_for(root, "rung_straight")
    train_run(cfg, cell, straight)
    rungs = paths_for(root, "rungs")
    first = train_run(cfg, cell, rungs, stop_at_step=3)
    assert (first["steps"], first["stop_at_step"], first["resumed_from"]) == (3, 3, None)
    assert first["eval_steps"] == [0, 2] and [r[0] for r in metric_rows(rungs)] == [0, 1, 2, 3]
    second = train_run(cfg, cell, rungs, stop_at_step=5)
    assert (second["steps"], second["resumed_from"]) == (5, 3)
    last = train_run(cfg, cell, rungs)
    assert (last["steps"], last["resumed_from"]) == (7, 5) and "stop_at_step" not in last
    assert eval_rows(rungs) == eval_rows(straight)
    assert metric_rows(rungs) == metric_rows(straight)
    assert rungs.pass_rates.read_text() == straight.pass_rates.read_text()
    states = [torch.load(p.run_dir / "checkpoint" / "state.pt", weights_only=False) for p in (rungs, straight)]
    for key in ("model", "sampling_generator", "torch_rng"):
        got, want = (s[key] for s in states)
        assert all(torch.equal(got[k], want[k]) for k in want) if key == "model" else torch.equal(got, want)
    again = train_run(cfg, cell, rungs, stop_at_step=3)
    assert (again["steps"], again["resumed_from"]) == (7, 7) and eval_rows(rungs) == eval_rows(straight)
    with pytest.raises(Exception, match="--stop-at-step"):
        train_run(cfg, cell, rungs, stop_at_step=8)


def test_changed_config_starts_fresh_and_raised_budget_continues(tiny_model_and_splits, caplog):
    root = tiny_model_and_splits
    paths = paths_for(root, "changed")
    train_run(tiny_cfg(), Cell("easy", 2, 2, 2, 8), paths)
    # Same training config, larger budget: continues from step 2.
    summary = train_run(tiny_cfg(), Cell("easy", 2, 2, 4, 16), paths)
    assert summary["resumed_from"] == 2
    with caplog.at_level("WARNING"):
        summary = train_run(tiny_cfg(lr_base=5e-4), Cell("easy", 2, 2, 4, 16), paths)
    assert summary["resumed_from"] is None and "another config" in caplog.text
    assert [r[0] for r in metric_rows(paths)] == [0, 1, 2, 3, 4]


def test_regularisation_only_on_regularized_splits_and_filters(tiny_model_and_splits):
    root = tiny_model_and_splits
    cfg = tiny_cfg(zero_variance_filter=True, decoupled_baseline={"enabled": True, "n_train": 2})
    hard = paths_for(root, "hard")
    train_run(cfg, Cell("hard", 2, 4, 2, 16), hard)
    data = [d for s, d in metric_rows(hard) if s > 0]
    assert all("actor/kl_loss" not in d for d in data)
    # decoupled baseline: at most n_train = 2 of each group's 4 rollouts enter the loss
    assert all(d["actor/rows_in_loss"] <= 4 for d in data)
    easy = paths_for(root, "easy_reg")
    train_run(tiny_cfg(), Cell("easy", 2, 2, 2, 8), easy)
    data = [d for s, d in metric_rows(easy) if s > 0]
    assert all("actor/kl_loss" in d and d["actor/kl_coef"] == 1e-3 for d in data)
    assert all(np.isfinite(d["actor/grad_norm"]) for d in data)
    # How far the policy is from the base model on the step's tokens (verl's trainer mode logs the
    # same): nothing at step 1, and update 1 (lr / warmup_steps) has moved it by step 2.
    moved = [d["isocompute/ref_probs_diff_mean"] for d in data]
    assert moved[0] < 1e-7 < 1e-5 < moved[1], moved
    assert all("isocompute/ref_probs_diff_mean" not in d for s, d in metric_rows(hard))


def test_extra_evaluation_sets_are_validated_at_the_same_steps_and_scored_apart(tiny_model_and_splits):
    """eval.extra_sets: each set is dumped beside the own split's at every evaluation step, with the
    same samples per problem; a set without extra_info gets problem ids; scoring reads it apart."""
    from isocompute.scoring import ScoredRun, ScoreSettings, score_run

    root = tiny_model_and_splits
    aime = pd.read_parquet(root / "val.parquet").iloc[:3].drop(columns=["extra_info", "ability"])
    aime.to_parquet(root / "aime.parquet")
    base = paths_for(root, "sets")
    paths = RunPaths(base.run_dir, base.train_file, base.val_file, base.model,
                     (("other", root / "train.parquet"), ("aime24", root / "aime.parquet")))
    summary = train_run(tiny_cfg(), Cell("easy", 2, 2, 4, 16), paths)
    assert (summary["val_problems"], summary["eval_set_problems"]) == (6, {"other": 24, "aime24": 3})
    paths.marker.write_text(json.dumps(summary))  # what the train stage writes last, and scoring checks
    own = sorted(int(p.stem) for p in paths.generations.glob("*.jsonl"))
    assert own == [0, 2, 4]
    for name, problems in (("other", 24), ("aime24", 3)):
        assert sorted(int(p.stem) for p in paths.set_generations(name).glob("*.jsonl")) == own
        rows = pd.read_json(paths.set_generations(name) / "2.jsonl", lines=True)
        assert len(rows) == problems * 4 and rows["problem_id"].nunique() == problems
    assert pd.read_json(paths.set_generations("aime24") / "0.jsonl", lines=True)["problem_id"].iloc[0] == "aime24-0"
    metrics = [json.loads(line)["data"] for line in paths.metrics.read_text().splitlines()]
    assert all("val/aime24/score/mean" in m for m in metrics if "val/score/mean" in m)
    table = score_run(paths.run_dir, ScoredRun("easy", 2, 2), ScoreSettings(4), eval_set="aime24")
    assert table["step"].tolist() == own and (table["eval_set"] == "aime24").all()
    assert table["avg@4"].between(0, 1).all()
    assert "eval_set" not in score_run(paths.run_dir, ScoredRun("easy", 2, 2), ScoreSettings(4)).columns


def wandb_offline_runs(folder: Path) -> list[tuple[dict, list[dict]]]:
    """Each offline W&B run under `folder`/wandb, oldest first: ({project, name}, its history rows).
    Its .wandb file is W&B's record log (LevelDB's log format of protobuf Records, after a 7-byte
    header), which wandb 0.31's Python side no longer reads back."""
    import struct

    from wandb.proto import wandb_internal_pb2 as pb

    out = []
    for path in sorted(folder.glob("wandb/offline-run-*/run-*.wandb")):
        data, pos, chunk, run, history = path.read_bytes(), 7, b"", {}, []
        assert data[:4] == b":W&B"
        while pos + 7 <= len(data):
            left = 32768 - pos % 32768
            length, kind = struct.unpack("<HB", data[pos + 4:pos + 7]) if left >= 7 else (0, 0)
            if kind == 0:  # a block's zero padding
                pos += left
                continue
            chunk, pos = chunk + data[pos + 7:pos + 7 + length], pos + 7 + length
            if kind in (1, 4):  # a whole record, or its last fragment
                rec = pb.Record()
                rec.ParseFromString(chunk)
                chunk, what = b"", rec.WhichOneof("record_type")
                if what == "run":
                    run = {"project": rec.run.project, "name": rec.run.display_name}
                elif what == "history":
                    items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in rec.history.item}
                    history.append({k: v for k, v in items.items() if not k.startswith("_") or k == "_step"})
        out.append((run, history))
    return out


def test_trackers_get_every_metrics_row_and_change_nothing(tiny_model_and_splits, tmp_path, monkeypatch):
    """tracking tensorboard + wandb (offline): a run killed after step 3's records (its checkpoint at
    step 2) and resumed hands each tracker every metrics.jsonl row, TensorBoard's events of the
    dead session past the checkpoint purged; the run itself is an untracked one's, and an
    untracked run writes no tracker file anywhere."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    root = tiny_model_and_splits
    cell = Cell("easy", 2, 2, 4, 16)  # evaluations at 0, 2, 4
    monkeypatch.chdir(tmp_path)  # where the default tracking folder (results/...) would go
    plain = paths_for(root, "untracked")
    train_run(tiny_cfg(), cell, plain)
    assert not (tmp_path / "results").exists()

    board_dir = root / "trackers"
    cfg = check_config({**tiny_cfg(), "experiment": "tiny",
                        "tracking": {"backends": ["tensorboard", "wandb"], "dir": str(board_dir)}})
    tracked = paths_for(root, "tracked")

    def kill_at_3(step):
        if step == 3:
            raise Killed(step)

    with pytest.raises(Killed):
        train_run(cfg, cell, tracked, on_step_end=kill_at_3)
    assert train_run(cfg, cell, tracked)["resumed_from"] == 2
    assert metric_rows(tracked) == metric_rows(plain) and eval_rows(tracked) == eval_rows(plain)
    assert {p.name for p in tracked.run_dir.iterdir()} == {p.name for p in plain.run_dir.iterdir()}
    rows = {step: data for step, data in metric_rows(tracked, drop=())}
    assert sorted(rows) == [0, 1, 2, 3, 4]

    board = EventAccumulator(str(board_dir / "tensorboard" / "tiny" / "tiny-easy-bp2_n2"))
    board.Reload()
    tags = board.Tags()["scalars"]
    assert set(tags) == {k for data in rows.values() for k in data}
    for tag in tags:
        logged = {e.step: e.value for e in board.Scalars(tag)}
        assert len(board.Scalars(tag)) == len(logged)  # no step twice: the dead session's step 3 purged
        assert logged == pytest.approx({s: d[tag] for s, d in rows.items() if tag in d}, rel=1e-6), tag
    assert sorted(e.step for e in board.Scalars("val/score/mean")) == [0, 2, 4]

    (first, killed), (second, resumed) = wandb_offline_runs(board_dir)
    assert first == second == {"project": "tiny", "name": "tiny-easy-bp2_n2"}
    assert [h["_step"] for h in killed] == [0, 1, 2, 3] and [h["_step"] for h in resumed] == [3, 4]
    logged = {h.pop("_step"): h for h in killed + resumed}  # the resumed session's step 3 wins
    assert logged == rows
def test_timed_out_rewards_are_zero_counted_per_step_and_fail_the_run_above_the_share(tiny_model_and_splits,
                                                                                       monkeypatch):
    """A rollout the grader could not decide in time is rewarded 0 like a wrong one and counted
    in the step's metrics (grading/timeouts); a step whose share of them is above
    grading.max_timeout_share fails the run, naming it and the step, its count on record."""
    from isocompute.grading import TooManyTimeouts, Verdict, judge_many
    from isocompute.train.backends.local import trainer

    def first_times_out(completions, truths, *args, **kwargs):
        # The step's first rollout times out, whatever it says.
        return [Verdict.TIMED_OUT] + judge_many(completions[1:], truths[1:], *args, **kwargs)

    monkeypatch.setattr(trainer, "judge_many", first_times_out)
    root = tiny_model_and_splits
    cell = Cell("easy", 2, 2, 3, 12)
    tolerant = paths_for(root, "timeouts_tolerated")
    cfg = tiny_cfg()
    cfg["grading"]["max_timeout_share"] = 0.25
    train_run(cfg, cell, tolerant)
    data = [d for s, d in metric_rows(tolerant) if s > 0]
    assert [d["grading/timeouts"] for d in data] == [1, 1, 1]
    assert [d["grading/timeout_share"] for d in data] == [0.25, 0.25, 0.25]
    assert all(d["critic/score/mean"] <= 0.75 for d in data)  # the timed-out rollout earned 0

    strict = paths_for(root, "timeouts_refused")
    with pytest.raises(TooManyTimeouts, match=r"train easy bp2_n2 step 1: 1 of 4 graded pairs timed out "
                                              r"\(share 0\.25 > grading\.max_timeout_share = 0\.01\)"):
        train_run(tiny_cfg(), cell, strict)
    assert [(s, d["grading/timeouts"]) for s, d in metric_rows(strict) if s > 0] == [(1, 1)]


def test_step_benchmark_rebuilds_a_finished_run_and_splits_its_step(tiny_model_and_splits):
    """benchmarks/bench_step.py, run as a user runs it, on a finished run: one row per run, its
    batch, the step's time split into shares of one step, its FLOPs and their rate against the
    matmul peak measured in the same run (nothing here depends on the machine's speed)."""
    import re

    from isocompute import atomic
    from isocompute.cli.common import config_from_params, provenance
    from isocompute.jobs import train_params

    root = tiny_model_and_splits
    paths = paths_for(root, "bench")
    # The train rule's params of a cell, and the run.json `isocompute train` writes from them.
    run_cfg = config_from_params(json.dumps(train_params(tiny_cfg(), Cell("easy", 2, 3, 3, 18))))
    summary = train_run(run_cfg, Cell("easy", 2, 3, 3, int(run_cfg["schedule"]["C_max"])), paths)
    atomic.write_json(paths.marker, provenance(run_cfg, **summary, model=paths.model, train_file=str(paths.train_file),
                                               val_file=str(paths.val_file)))
    out = run_benchmark("bench_step.py", str(paths.run_dir), "--steps", "3", "--warm-up", "1", "--ops").stdout
    row = re.search(r"^bench\s+(\d+)\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                    r"\s+([\d.]+)%$", out, flags=re.M)
    assert row, out
    B, ms, gen, reward, update, gflop, rate, peak, share = (float(v) for v in row.groups())
    assert B == 6 and ms > 0 and gflop > 0 and rate > 0 and peak > 0 and share > 0
    assert 0 < gen + reward + update <= 100.5   # shares of the step's own wall time
    assert "aten::" in out                       # --ops: the profiler's operator table
    refused = run_benchmark("bench_step.py", str(root), returncode=2)   # a folder without run.json, by name
    assert f"{root}: no run.json" in refused.stderr, refused.stderr
