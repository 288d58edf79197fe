"""The local backend's GRPO loss against the path verl 0.9.1's V1 trainer runs, on one fixed
batch (prompt and response tokens, response masks, logits, reference log-probs, rewards,
groups): the local loss (`isocompute.train.grpo`), and verl's GRPO estimator (`core_algos`'
per-group "grpo", not the vectorised one the local backend uses), the FSDP engine's log-probs
and entropy of logits / temperature (`verl.utils.torch_functional`) and the actor loss of its
engine workers (`verl.workers.utils.losses.ppo_loss`), fed the unpadded (prompt + response)
layout and global batch info the engine gives it.

`max_abs_diffs` compares the advantages, the policy-gradient loss, the KL and entropy terms, the
total loss and its gradient with respect to the logits. Both sides are float32 arithmetic on the
same inputs; TOL bounds the absolute differences (they are ~1e-7 in practice). The claim that
the backends optimise the same objective rests on it: tests/train/test_backends_agree_loss.py
asserts it, benchmarks/bench_backends_agree.py reports it beside its runs. Imports verl (and
torch) when called.
"""

from __future__ import annotations

import numpy as np
import torch

from isocompute.train import grpo

TOL = 1e-5  # absolute, on every term and on every gradient entry (float32, O(1) values)
TEMPERATURE = 0.6  # the recipe's sampling temperature: both divide the logits by it
GROUPS, N, R, V = 3, 4, 6, 13  # prompts, rollouts per prompt, response tokens, vocabulary


def fixed_batch(seed: int = 0) -> dict:
    """B = GROUPS * N rollouts: prompts of 2-4 tokens, responses of 1-R tokens (right-padded),
    0/1 rewards with one group all correct (its advantages are 0), logits and reference
    log-probs drawn once."""
    g = torch.Generator().manual_seed(seed)
    B = GROUPS * N
    prompt_lens = torch.tensor([2 + (i // N) % 3 for i in range(B)])
    response_lens = torch.randint(1, R + 1, (B,), generator=g)
    response_lens[0] = R  # one full-length response
    mask = (torch.arange(R)[None, :] < response_lens[:, None]).float()
    responses = torch.randint(0, V, (B, R), generator=g) * mask.long()
    logits = torch.randn(B, R, V, generator=g) * 2.0
    ref_logits = logits + 0.5 * torch.randn(B, R, V, generator=g)
    ref_log_prob = torch.log_softmax(ref_logits / TEMPERATURE, -1).gather(-1, responses[..., None]).squeeze(-1)
    rewards = torch.tensor([1., 0., 1., 1.,   0., 0., 1., 0.,   1., 1., 1., 1.])  # group 2: constant
    assert len(rewards) == B
    return {"prompt_lens": prompt_lens, "response_lens": response_lens, "mask": mask, "responses": responses,
            "logits": logits, "ref_log_prob": ref_log_prob * mask, "rewards": rewards,
            "group": np.repeat(np.arange(GROUPS), N)}


def local_terms(batch: dict, weights: grpo.LossWeights) -> dict:
    """The local backend: its advantages, then grpo_objective on the raw logits."""
    logits = batch["logits"].clone().requires_grad_(True)
    adv = grpo.grpo_advantages(batch["rewards"], batch["mask"], batch["group"], norm_by_std=True)
    loss, metrics = grpo.grpo_objective(logits, batch["responses"], batch["mask"], adv, weights,
                                        ref_log_prob=batch["ref_log_prob"])
    loss.backward()
    return {"advantages": adv, "pg_loss": metrics["actor/pg_loss"], "entropy": metrics["actor/entropy"],
            "kl_loss": metrics["actor/kl_loss"], "loss": loss.item(), "grad": logits.grad}


def verl_terms(batch: dict, weights: grpo.LossWeights, agg: str) -> dict:
    """verl 0.9.1's V1 trainer path on the same batch (see the module docstring)."""
    from tensordict import TensorDict
    from verl.trainer.ppo import core_algos
    from verl.utils import tensordict_utils as tu
    from verl.utils import torch_functional as verl_F
    from verl.workers.config import FSDPActorConfig
    from verl.workers.utils.losses import ppo_loss

    mask, responses = batch["mask"], batch["responses"]
    B = len(mask)
    # Advantages: the estimator verl's trainer looks up for adv_estimator=grpo, groups by uid.
    token_rewards = torch.zeros(B, R)
    token_rewards[torch.arange(B), batch["response_lens"] - 1] = batch["rewards"]
    uid = np.array([f"uid-{g}" for g in batch["group"]], dtype=object)
    adv, _ = core_algos.get_adv_estimator_fn("grpo")(token_level_rewards=token_rewards, response_mask=mask,
                                                      index=uid, epsilon=1e-6, norm_adv_by_std_in_grpo=True)
    # The engine's no-remove-padding branch: logits / temperature, verl's log-probs and entropy.
    logits = batch["logits"].clone().requires_grad_(True)
    scaled = logits / TEMPERATURE
    log_prob = verl_F.logprobs_from_logits(scaled, responses)  # [B, R]
    ent = verl_F.entropy_from_logits(scaled)  # [B, R]
    # ...handed to ppo_loss as the engine does: one value per (prompt + response) position,
    # position t holding the prediction of token t + 1 (ppo_loss shifts it back).
    P = int(batch["prompt_lens"].max())
    prompts = torch.zeros(B, P, dtype=torch.long)
    attention = torch.zeros(B, P + R, dtype=torch.long)
    flat_lp, flat_ent = [], []
    for i in range(B):
        p, r = int(batch["prompt_lens"][i]), int(batch["response_lens"][i])
        attention[i, P - p:P] = 1  # left-padded prompt
        attention[i, P:P + r] = 1  # right-padded response
        pad = torch.zeros(p - 1)
        flat_lp.append(torch.cat([pad, log_prob[i, :r], torch.zeros(1)]))
        flat_ent.append(torch.cat([pad, ent[i, :r], torch.zeros(1)]))
    data = TensorDict({"prompts": prompts, "responses": responses, "attention_mask": attention,
                       "response_mask": mask, "old_log_probs": log_prob.detach(), "advantages": adv,
                       "ref_log_prob": batch["ref_log_prob"]}, batch_size=[B])
    tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=int(mask.sum()), global_batch_size=B)
    config = FSDPActorConfig(strategy="fsdp2", ppo_mini_batch_size=B, ppo_micro_batch_size_per_gpu=B,
                             rollout_n=N, use_kl_loss=True, kl_loss_coef=weights.kl_coef,
                             kl_loss_type=weights.kl_type, entropy_coeff=weights.entropy_coef,
                             clip_ratio=weights.clip_ratio, clip_ratio_low=weights.clip_ratio,
                             clip_ratio_high=weights.clip_ratio, loss_agg_mode=agg)
    loss, metrics = ppo_loss(config, {"log_probs": torch.cat(flat_lp), "entropy": torch.cat(flat_ent)}, data)
    loss.backward()
    def value(key):  # verl's Metric holds its values in a list (one per micro-batch: one here)
        m = metrics[key]
        return float(torch.as_tensor(m.values).sum()) if hasattr(m, "values") else float(m)

    return {"advantages": adv, "pg_loss": value("actor/pg_loss"), "entropy": value("actor/entropy_loss"),
            "kl_loss": value("kl_loss"), "loss": loss.item(), "grad": logits.grad}


def max_abs_diffs(agg: str = "token-mean", seed: int = 0) -> dict:
    """Term -> max |local - verl| on the fixed batch (also what the agreement benchmark reports)."""
    batch = fixed_batch(seed)
    weights = grpo.LossWeights(clip_ratio=0.2, loss_agg_mode=agg, kl_coef=0.05, entropy_coef=0.01,
                               kl_type="low_var_kl", temperature=TEMPERATURE)
    mine, theirs = local_terms(batch, weights), verl_terms(batch, weights, agg)
    out = {}
    for key in mine:
        a, b = mine[key], theirs[key]
        out[key] = float((torch.as_tensor(a) - torch.as_tensor(b)).abs().max())
    out["_values"] = {**{k: v for k, v in mine.items() if isinstance(v, float)},
                      "grad_norm": float(mine["grad"].norm())}
    return out
