"""The local GRPO backend: PyTorch + transformers on the CPU or one GPU.

One readable loop, nanoGPT style: each step samples n rollouts for each of B_p
problems, grades them with the project grader, computes group-normalised
advantages and takes exactly one optimiser step. At the recipe's validation
steps (step 0, the split's shared compute points, the last step) it samples the
validation set and dumps the raw generations in verl's format. Its recipe comes from `train.recipe`, its identity from
`train.identity`, its logs and checkpoint from `train.run_logs` and
`train.checkpoint`, its trackers (config `tracking`) from `train.tracking`.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import random
import time
from pathlib import Path

import numpy as np
import torch

from isocompute.grading import TIMEOUTS_METRIC, Verdict, check_timeout_share, grade_many, judge_many, timeout_metrics
from isocompute.sampling import LocalSampler, SamplingParams, pack_prompts
from isocompute.train import grpo, run_logs as files
from isocompute.train.adamw import adamw
from isocompute.train.backends import register_backend
from isocompute.train.backends.local.rollouts import (Problems, derived_seed, evaluate, pack_responses,
                                                      problems_for_step, response_logits, set_training)
from isocompute.train.recipe import cell_recipe

log = logging.getLogger(__name__)


# verl's name for the same comparison (train/backends/verl/scheduled.py STALE_PREFIX).
REF_PROBS_DIFF = "isocompute/ref_probs_diff"


def ref_probs_diff(logits, responses, mask, ref_log_prob, temperature: float) -> dict:
    """How far the policy, before this step's update, is from the base model on the step's sampled
    tokens: mean and max |p_policy - p_base| of the response tokens, as verl's trainer mode logs it
    (verl's calculate_debug_metrics with the reference log-probs in the rollout's place). Zero at
    step 1; at step 2 it measures what update 1 moved (the backends-agree check compares it)."""
    with torch.no_grad():
        policy = grpo.token_log_probs(logits.detach() / temperature, responses).exp()
        diff = (policy - ref_log_prob.exp()).abs()[mask.bool()]
    if diff.numel() == 0:
        return {}
    return {f"{REF_PROBS_DIFF}_mean": float(diff.mean()), f"{REF_PROBS_DIFF}_max": float(diff.max())}


class LocalGRPO:
    """State of one local GRPO run: policy, frozen base (when regularised), optimiser, RNGs."""

    def __init__(self, cfg: dict, cell, model, tokenizer, train: Problems, val: Problems,
                 extra_sets: dict[str, Problems] | None = None):
        t = cfg["train"]
        self.cfg, self.cell, self.tokenizer = cfg, cell, tokenizer
        self.train_set, self.val_set = train, val
        self.extra_sets = extra_sets or {}  # name -> problems (config eval.extra_sets)
        self.model = model
        self.device = next(model.parameters()).device
        self.params = SamplingParams.from_config(cfg)
        self.batch_size = cfg["sampling"]["batch_size"]
        self.recipe = recipe = cell_recipe(cfg, cell)
        self.seed = recipe.seed
        self.regularized = recipe.regularized
        self.weights = grpo.LossWeights(
            clip_ratio=t["clip_ratio"], loss_agg_mode=t["loss_agg_mode"], kl_type=t["kl_type"],
            kl_coef=recipe.kl_coef, entropy_coef=recipe.entropy_coef,
            temperature=self.params.temperature)
        # The KL anchor is the frozen base model; only regularised splits pay for its forward pass.
        self.ref_model = None
        if recipe.kl_coef > 0:
            self.ref_model = copy.deepcopy(model).eval().requires_grad_(False)
        decoupled = t["decoupled_baseline"]
        self.n_train = decoupled["n_train"] if decoupled["enabled"] else None
        self.lr = recipe.lr
        # torch.optim.AdamW's arithmetic, without the torch._dynamo import torch.optim costs (train.adamw).
        self.optimizer = adamw(model.parameters(), lr=self.lr, weight_decay=t["weight_decay"])
        self.generator = torch.Generator(device=self.device).manual_seed(derived_seed(self.seed, 0))
        self.row_rng = np.random.default_rng(derived_seed(self.seed, 2))
        self.sampler = LocalSampler(model, tokenizer, batch_size=self.batch_size)
        random.seed(self.seed)
        np.random.seed(derived_seed(self.seed, 3) % 2**32)
        torch.manual_seed(self.seed)

    # --- one step -------------------------------------------------------------

    def step(self, step: int) -> tuple[dict, list[dict]]:
        """One GRPO step: sample, score, advantages, one update. Returns (metrics, per-problem pass rates)."""
        B_p, n = self.cell.B_p, self.cell.n
        t0 = time.perf_counter()
        rows = problems_for_step(step, B_p, len(self.train_set), self.seed)
        prompts = [self.train_set.prompt_ids[i] for i in rows]
        set_training(self.model, False)
        groups = self.sampler.sample(prompts, n, self.params, generator=self.generator)
        completions = [c for g in groups for c in g]
        t1 = time.perf_counter()

        texts = self.tokenizer.batch_decode(completions, skip_special_tokens=True)
        gts = [self.train_set.ground_truths[i] for i in rows for _ in range(n)]
        # A timed-out rollout (math-verify could not decide it within its budget and
        # one longer retry) is rewarded 0 like a wrong one, and counted: a step with
        # more than grading.max_timeout_share of them fails the run (train_local).
        verdicts = judge_many(texts, gts)
        rewards = np.asarray([v.correct for v in verdicts], dtype=np.float32)
        timeouts = sum(v is Verdict.TIMED_OUT for v in verdicts)
        group_index = np.repeat(np.arange(B_p), n)
        t2 = time.perf_counter()

        metrics = self.update(step, prompts, completions, rewards, group_index)
        t3 = time.perf_counter()

        lengths = np.array([len(c) for c in completions])
        per_group = rewards.reshape(B_p, n).mean(1)
        tokens = int(lengths.sum())
        metrics.update({
            "critic/score/mean": float(rewards.mean()),
            **timeout_metrics(timeouts, len(verdicts)),
            "batch/solve_none": float((per_group == 0).mean()),
            "batch/solve_all": float((per_group == 1).mean()),
            "response_length/mean": float(lengths.mean()),
            "response_length/max": int(lengths.max()),
            "response_length/clip_ratio": float((lengths >= self.params.max_new_tokens).mean()),
            "perf/tokens_generated": tokens,
            "perf/rollouts_per_s": B_p * n / (t3 - t0),
            "perf/tokens_per_s": tokens / (t3 - t0),
            "timing_s/gen": t1 - t0, "timing_s/reward": t2 - t1, "timing_s/update": t3 - t2,
            "timing_s/step": t3 - t0,
        })
        pass_rates = [{"step": step, "problem_id": self.train_set.problem_ids[i], "pass_rate": float(r),
                       "B_p": B_p, "n": n, "compute": step * B_p * n} for i, r in zip(rows, per_group)]
        return metrics, pass_rates

    def update(self, step: int, prompts, completions, rewards: np.ndarray, group_index: np.ndarray) -> dict:
        """Exactly one AdamW step on the GRPO objective of this batch (row b answers prompts[group_index[b]])."""
        t = self.cfg["train"]
        pad = self.tokenizer.pad_token_id
        prompt_batch = pack_prompts(prompts, pad, self.device)
        responses, mask = pack_responses(completions, pad, self.device)
        advantages = grpo.grpo_advantages(torch.as_tensor(rewards, device=self.device), mask, group_index,
                                          norm_by_std=t["norm_adv_by_std"])
        keep, regularised = grpo.loss_rows(rewards, group_index, zero_variance_filter=t["zero_variance_filter"],
                                           n_train=self.n_train, rng=self.row_rng)
        lr = self.recipe.lr_at(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        metrics = {"actor/lr": lr, "actor/rows_in_loss": int(len(keep))}
        self.optimizer.zero_grad(set_to_none=True)
        if len(keep) == 0:
            # Every group filtered out: no gradient. The step still counts (its rollouts were spent).
            metrics.update({"actor/grad_norm": 0.0, "actor/skipped": 1})
            return metrics
        sel = torch.as_tensor(keep, device=self.device)
        row_group = torch.as_tensor(group_index, device=self.device)[sel]
        responses, mask, advantages = responses[sel], mask[sel], advantages[sel]
        ref_log_prob = None
        if self.ref_model is not None:
            with torch.no_grad():
                ref_logits = response_logits(self.ref_model, prompt_batch, row_group, responses, mask)
                ref_log_prob = grpo.token_log_probs(ref_logits / self.weights.temperature, responses)
        set_training(self.model, True)
        logits = response_logits(self.model, prompt_batch, row_group, responses, mask)
        if regularised is not None:
            regularised = torch.as_tensor(regularised, device=self.device)
        loss, loss_metrics = grpo.grpo_objective(logits, responses, mask, advantages, self.weights, ref_log_prob,
                                                 regularised)
        if ref_log_prob is not None:
            metrics.update(ref_probs_diff(logits, responses, mask, ref_log_prob, self.weights.temperature))
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), t["grad_clip"])
        self.optimizer.step()
        set_training(self.model, False)
        metrics.update(loss_metrics)
        metrics.update({"actor/loss": loss.item(), "actor/grad_norm": float(grad_norm), "actor/skipped": 0})
        return metrics

    def evaluate(self, step: int, problems: Problems | None = None) -> list[dict]:
        """Dump records of the validation set (or of `problems`, an extra evaluation set: the
        same samples per problem, the same sampling seed)."""
        return evaluate(LocalSampler(self.model, self.tokenizer, batch_size=self.batch_size),
                        self.val_set if problems is None else problems, self.cfg["eval"]["samples"], self.params,
                        self.seed, step)

    def probe(self, step: int) -> list[dict]:
        """The interference probe (Fig. 11): train.probe_samples completions for each of a fixed
        subset of training problems, the same for every run of the split (chosen by the config's
        seed, not the replicate's), sampled from its own generator so training is untouched."""
        t = self.cfg["train"]
        count = min(t["probe_problems"], len(self.train_set))
        rows = np.random.default_rng([int(self.cfg["seed"]), 5]).permutation(len(self.train_set))[:count]
        generator = torch.Generator(device=self.device).manual_seed(derived_seed(self.seed, 4, step))
        groups = self.sampler.sample([self.train_set.prompt_ids[i] for i in rows], t["probe_samples"], self.params,
                                     generator=generator)
        texts = self.tokenizer.batch_decode([c for g in groups for c in g], skip_special_tokens=True)
        gts = [self.train_set.ground_truths[i] for i in rows for _ in range(t["probe_samples"])]
        rates = np.asarray(grade_many(texts, gts), dtype=float).reshape(count, t["probe_samples"]).mean(1)
        compute = self.recipe.probe_steps[step]
        return [{"step": step, "problem_id": self.train_set.problem_ids[i], "pass_rate": float(r),
                 "samples": t["probe_samples"], "B_p": self.cell.B_p, "n": self.cell.n, "compute": compute,
                 "compute_actual": step * self.cell.B_p * self.cell.n} for i, r in zip(rows, rates)]

    # --- checkpoint state -----------------------------------------------------

    def state_dict(self) -> dict:
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "sampling_generator": self.generator.get_state(),
            "row_rng": self.row_rng.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
            "python_rng": random.getstate(),
            "numpy_rng": np.random.get_state(),
        }
        if torch.cuda.is_available():
            state["cuda_rng"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["sampling_generator"])
        self.row_rng.bit_generator.state = state["row_rng"]
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
        np.random.set_state(state["numpy_rng"])
        if "cuda_rng" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])


# --- the run loop -------------------------------------------------------------------

@register_backend("local")
def train_local(cfg: dict, cell, paths, stop_at_step: int | None = None, on_step_end=None,
                progress_factory=None) -> dict:
    """Train one cell to M_max steps (or to `stop_at_step`, a rung of an adaptive sweep, checkpointed
    there), resuming from the run's checkpoint when it matches.

    The recipe is the full run's either way, so a run stopped at a rung and resumed is
    the uninterrupted run. Order within a step: update, evaluation (if due), metrics and
    pass-rate records, checkpoint (if due). `on_step_end(step)` runs after the records
    and before the checkpoint (tests use it to kill a run at its worst moment).
    """
    from isocompute.train.backends.local.tracking import Trackers
    from isocompute.train.identity import config_hash, training_identity
    from isocompute.train.tracking import prepare as prepare_tracking, tracking_of

    stop = cell.M_max if stop_at_step is None else stop_at_step       # checked by train_run
    tracking = tracking_of(cfg, cell)
    prepare_tracking(tracking)  # a tracker's missing package stops the run before the model loads
    identity = training_identity(cfg, cell, paths)
    trainer, device = _local_trainer(cfg, cell, paths)
    log.info("cell %s bp%d_n%d: B = %d, M_max = %d, stop at %d, %d evaluations, lr = %.3g, regularised = %s, "
             "device = %s, %d train / %d val", cell.split, cell.B_p, cell.n, cell.B_p * cell.n, cell.M_max, stop,
             len(trainer.recipe.eval_steps), trainer.lr,
             trainer.regularized, device, len(trainer.train_set), len(trainer.val_set))
    Path(paths.run_dir).mkdir(parents=True, exist_ok=True)
    session = _Session(cfg, cell, paths, trainer, identity, config_hash(identity))
    state = session.state
    # The trackers get each metrics.jsonl row as it is written (config tracking; none by default).
    if state is not None and session.step >= stop:
        tracking = dataclasses.replace(tracking, backends=())  # nothing left to log
    with Trackers(tracking, cfg, first_step=0 if state is None else session.step + 1) as trackers:
        session.train_to(stop, trackers, on_step_end, progress_factory)
    if state is not None and state["step"] >= stop:
        log.info("run already at step %d (asked for %d)", state["step"], stop)
    return {"steps": session.step, "config_hash": session.run_hash, "wall_s": session.wall(),
            "tokens_cumulative": session.tokens_total, "resumed_from": None if state is None else state["step"],
            "eval_steps": files.generation_steps(paths.generations), "lr": trainer.lr,
            "val_problems": len(trainer.val_set), "eval_set_problems": {n: len(p) for n, p in trainer.extra_sets.items()},
            "regularized": trainer.regularized}


def _local_trainer(cfg: dict, cell, paths) -> tuple["LocalGRPO", object]:
    """The policy and its problems loaded on the configured device: (LocalGRPO, device)."""
    from isocompute.data.eval_sets import read_eval_set
    from isocompute.data.schema import read_problems
    from isocompute.errors import InputError
    from isocompute.model.io import load_policy, pick_device

    device = pick_device(cfg["train"]["device"])
    model, tokenizer = load_policy(paths.model, device=device, lean=True)
    train = Problems.from_frame(read_problems(paths.train_file), tokenizer)
    val = Problems.from_frame(read_problems(paths.val_file), tokenizer)
    extra = {name: Problems.from_frame(read_eval_set(path, name), tokenizer) for name, path in paths.eval_sets}
    trainer = LocalGRPO(cfg, cell, model, tokenizer, train, val, extra)
    if cell.B_p > len(train):
        raise InputError(f"{paths.train_file}: {len(train)} training problems, fewer than B_p = {cell.B_p}")
    return trainer, device


class _Session:
    """One training session of a run: resumed from its checkpoint when that matches (else
    fresh, logs reset), its wall clock and token count carried over, and its records."""

    def __init__(self, cfg: dict, cell, paths, trainer: "LocalGRPO", identity: dict, run_hash: str):
        from isocompute.train import checkpoint as ckpt

        self.cfg, self.cell, self.paths, self.trainer = cfg, cell, paths, trainer
        self.identity, self.run_hash = identity, run_hash
        self.checkpoint_file = ckpt.checkpoint_path(paths.run_dir)
        self.state = state = ckpt.load_resumable(self.checkpoint_file, run_hash, cell.M_max)
        if state is None:
            self.step, self.wall_before, self.tokens_total = 0, 0.0, 0
            files.reset_logs(paths, None)
        else:
            trainer.load_state_dict(state)
            self.step, self.wall_before, self.tokens_total = state["step"], state["wall_s"], state["tokens_cumulative"]
            files.reset_logs(paths, self.step)
            log.info("resuming from checkpoint at step %d", self.step)
        self.session_start = time.perf_counter()
        self.trackers = None

    def wall(self) -> float:
        return self.wall_before + time.perf_counter() - self.session_start

    def checkpoint(self, at: int) -> None:
        from isocompute.train import checkpoint as ckpt

        files.sync_logs(self.paths)  # the rows up to `at` on disk before the checkpoint that keeps them
        ckpt.save_checkpoint(self.checkpoint_file, {
            **self.trainer.state_dict(), "step": at, "config_hash": self.run_hash, "identity": self.identity,
            "wall_s": self.wall(), "tokens_cumulative": self.tokens_total})

    def run_eval(self, at: int) -> dict:
        t, trainer, paths = time.perf_counter(), self.trainer, self.paths
        records = trainer.evaluate(at)
        files.write_generations(paths.generations, at, records)
        out = {"val/score/mean": float(np.mean([r["score"] for r in records]))}
        for name, problems in trainer.extra_sets.items():
            records = trainer.evaluate(at, problems)
            files.write_generations(paths.set_generations(name), at, records)
            out[f"val/{name}/score/mean"] = float(np.mean([r["score"] for r in records]))
        return {**out, "timing_s/eval": time.perf_counter() - t}

    def record(self, at: int, metrics: dict) -> None:
        files.append_jsonl(self.paths.metrics, [{"step": at, "data": metrics}], sync=False)
        self.trackers.log(metrics, at)

    def train_to(self, stop: int, trackers, on_step_end=None, progress_factory=None) -> None:
        """Step 0's evaluation on a fresh run, then the steps up to `stop` (see `train_local`)."""
        cell, trainer, paths, cfg = self.cell, self.trainer, self.paths, self.cfg
        self.trackers = trackers
        if self.state is None:
            # Step 0: the base model's evaluation point.
            metrics = {**self.run_eval(0), "perf/tokens_generated_cumulative": 0, "time/wall_s": self.wall()}
            self.record(0, metrics)
            log.info("step 0: val score %.3f", metrics["val/score/mean"])
            self.checkpoint(0)
        bar = (progress_factory or _null_progress)(total=stop, initial=min(self.step, stop), unit="step",
                                                   desc=f"{cell.split} {cell.name}")
        reward_ema = None
        while self.step < stop:
            self.step = step = self.step + 1
            metrics, pass_rates = trainer.step(step)
            self.tokens_total += metrics["perf/tokens_generated"]
            if trainer.recipe.evaluates_at(step):
                metrics.update(self.run_eval(step))
            metrics.update({"perf/tokens_generated_cumulative": self.tokens_total, "time/wall_s": self.wall(),
                            "training/compute_rollouts": step * cell.B_p * cell.n})
            self.record(step, metrics)
            check_timeout_share(metrics[TIMEOUTS_METRIC], cell.B_p * cell.n, cfg["grading"]["max_timeout_share"],
                                f"train {cell.split} {cell.name} step {step}")
            files.append_jsonl(paths.pass_rates, pass_rates, sync=False)
            if step in trainer.recipe.probe_steps:
                files.append_jsonl(paths.probe, trainer.probe(step), sync=False)
            if on_step_end is not None:
                on_step_end(step)
            if trainer.recipe.evaluates_at(step) or step == stop:
                self.checkpoint(step)
            r = metrics["critic/score/mean"]
            reward_ema = r if reward_ema is None else 0.9 * reward_ema + 0.1 * r
            bar.update(1)
            bar.set_postfix(reward=f"{reward_ema:.3f}", rollouts_s=f"{metrics['perf/rollouts_per_s']:.0f}",
                            refresh=False)
            if "val/score/mean" in metrics:
                log.info("step %d: val score %.3f, train reward %.3f, %.0f rollouts/s", step,
                         metrics["val/score/mean"], reward_ema, metrics["perf/rollouts_per_s"])
        bar.close()


class _null_progress:
    def __init__(self, **kw):
        pass

    def update(self, *a):
        pass

    def set_postfix(self, **kw):
        pass

    def close(self):
        pass
