"""The two backends optimise the same GRPO objective (issue 21, item 3): one fixed batch
through the local backend's loss and through the path verl 0.9.1's V1 trainer runs
(isocompute.train.backends.verl.loss_parity, whose docstring says which of verl's functions),
every term within TOL; the batch is not degenerate, and the clipping agrees off-policy too.
"""

from __future__ import annotations

import pytest
import torch

from isocompute.train import grpo
from isocompute.train.backends.verl.loss_parity import N, TOL, fixed_batch, max_abs_diffs


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
