"""The two backends optimise the same GRPO objective (issue 21, item 3): one fixed batch
(prompt and response tokens, response masks, logits, reference log-probs, rewards,
groups) through the local backend's loss (`isocompute.train.grpo`) and through the path
verl 0.9.1's V1 trainer runs: the GRPO estimator it calls (`core_algos`' per-group
"grpo", not the vectorised one the local backend uses), the FSDP engine's log-probs and
entropy of logits / temperature (`verl.utils.torch_functional`), and the actor loss of
its engine workers (`verl.workers.utils.losses.ppo_loss`), fed the unpadded
(prompt + response) layout and global batch info the engine gives it.

Compared: the advantages, the policy-gradient loss, the KL and entropy terms, the total
loss, and its gradient with respect to the logits. Both sides are float32 arithmetic
on the same inputs; TOL bounds the absolute differences (they are ~1e-7 in practice).
"""

from __future__ import annotations

import numpy as np
import pytest
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


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
@pytest.mark.parametrize("seed", [0, 1])
def test_local_loss_terms_equal_verls_actor_path_on_one_batch(agg, seed):
    diffs = max_abs_diffs(agg, seed)
    values = diffs.pop("_values")
    # The batch is not degenerate: the KL and entropy terms are not 0 (on-policy, the policy
    # loss's value is -mean(A), about 0 where a mode averages whole groups; its gradient is not).
    assert abs(values["entropy"]) > 0.1 and abs(values["kl_loss"]) > 0.01, values
    assert values["grad_norm"] > 1e-3, values
    bad = {k: d for k, d in diffs.items() if d > TOL}
    assert not bad, f"local vs verl ({agg}, seed {seed}): max abs differences above {TOL}: {bad}; values {values}"


def test_the_constant_group_has_zero_advantage_and_the_others_do_not():
    batch = fixed_batch(0)
    adv = grpo.grpo_advantages(batch["rewards"], batch["mask"], batch["group"])
    per_row = (adv * batch["mask"]).sum(-1) / batch["mask"].sum(-1)
    assert torch.all(per_row[2 * N:] == 0) and torch.all(per_row[:2 * N].abs() > 0.1)


def test_clipping_agrees_off_policy():
    """The clipped ratio itself (old != new log-probs): grpo.policy_loss against verl's
    vanilla loss through ppo_loss's config (clip_ratio_c = 3, dual clip)."""
    from verl.trainer.ppo import core_algos
    from verl.workers.config import FSDPActorConfig

    batch = fixed_batch(1)
    mask = batch["mask"]
    g = torch.Generator().manual_seed(5)
    new = torch.log_softmax(batch["logits"], -1).gather(-1, batch["responses"][..., None]).squeeze(-1)
    old = new + 0.6 * torch.randn(new.shape, generator=g)  # ratios well outside [0.8, 1.2]
    adv = grpo.grpo_advantages(batch["rewards"], mask, batch["group"])
    mine, m_metrics = grpo.policy_loss(old, new, adv, mask, clip_ratio=0.2)
    config = FSDPActorConfig(strategy="fsdp2", ppo_mini_batch_size=len(mask), ppo_micro_batch_size_per_gpu=1,
                             rollout_n=N, clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.2)
    theirs, t_metrics = core_algos.get_policy_loss_fn("vanilla")(old, new, adv, mask.bool(), "token-mean", config)
    assert float(t_metrics["actor/pg_clipfrac"]) > 0.1  # clipping is exercised
    assert abs(mine.item() - theirs.item()) <= TOL
    assert abs(float(m_metrics["actor/pg_clipfrac"]) - float(t_metrics["actor/pg_clipfrac"])) <= TOL
