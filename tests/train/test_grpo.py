"""The GRPO loss math against hand-computed values (and the grid enumeration)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isocompute.errors import ConfigError
from isocompute.grid import grid_cells
from isocompute.train import grpo, recipe


def test_lr_scaling_hand_values():
    assert recipe.scaled_lr(1e-4, 256, 64, "sqrt") == pytest.approx(2e-4)
    assert recipe.scaled_lr(1e-4, 256, 64, "linear") == pytest.approx(4e-4)
    assert recipe.scaled_lr(1e-4, 256, 64, "constant") == pytest.approx(1e-4)
    assert recipe.scaled_lr(1e-6, 8192, 1024, "sqrt") == pytest.approx(1e-6 * math.sqrt(8))
    with pytest.raises(ValueError):
        recipe.scaled_lr(1e-4, 8, 8, "cubic")


def test_warmup_is_linear_from_the_first_update_then_constant():
    assert [recipe.warmup_lr(1.0, s, 4) for s in (1, 2, 3, 4, 5, 100)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert recipe.warmup_lr(2.0, 1, 0) == 2.0


def test_grpo_advantages_hand_values():
    # Group 0: rewards 1,0,0,0 -> mean 1/4, unbiased std 1/2 -> +1.5, -0.5 x3.
    # Group 1: 1,0 -> mean 1/2, std sqrt(1/2) -> +-0.7071. Group 2: all ones -> 0.
    rewards = torch.tensor([1, 0, 0, 0, 1, 0, 1, 1], dtype=torch.float32)
    mask = torch.tensor([[1, 1, 0]] * 8)
    mask[3] = torch.tensor([1, 1, 1])
    index = np.array([0, 0, 0, 0, 1, 1, 2, 2])
    adv = grpo.grpo_advantages(rewards, mask, index)
    expected = torch.tensor([1.5, -0.5, -0.5, -0.5, 1 / math.sqrt(2), -1 / math.sqrt(2), 0, 0])
    assert torch.allclose(adv[:, 0], expected, atol=1e-5)
    assert torch.equal(adv == 0, (mask == 0) | (expected == 0)[:, None].expand_as(mask))  # masked tokens carry 0
    dr = grpo.grpo_advantages(rewards, mask, index, norm_by_std=False)
    assert torch.allclose(dr[:4, 0], torch.tensor([0.75, -0.25, -0.25, -0.25]))


def test_outcome_reward_sits_on_the_last_response_token():
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    r = grpo.outcome_token_rewards(torch.tensor([1.0, 1.0]), mask)
    assert r.tolist() == [[0, 0, 1, 0], [1, 0, 0, 0]]


def test_on_policy_token_mean_loss_and_gradient():
    # Row 0 (2 tokens, A=1.5), row 1 (1 token, A=-0.5): token-mean loss = -(1.5*2 - 0.5*1)/3.
    log_prob = torch.log(torch.tensor([[0.5, 0.4], [0.3, 0.9]])).requires_grad_(True)
    mask = torch.tensor([[1, 1], [1, 0]])
    adv = torch.tensor([[1.5, 1.5], [-0.5, -0.5]]) * mask
    loss, metrics = grpo.policy_loss(log_prob.detach(), log_prob, adv, mask, clip_ratio=0.2)
    assert loss.item() == pytest.approx(-(1.5 * 2 - 0.5) / 3)
    loss.backward()
    assert torch.allclose(log_prob.grad, -adv / 3)
    assert metrics["actor/pg_clipfrac"] == 0.0


def test_clipped_ratio_hand_values():
    old = torch.zeros(1, 4)
    ratio = torch.tensor([[1.5, 0.5, 1.5, 0.5]])
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    log_prob = torch.log(ratio).requires_grad_(True)
    loss, _ = grpo.policy_loss(old, log_prob, adv, torch.ones(1, 4), clip_ratio=0.2)
    # per token: max(-A r, -A clip(r)) = -1.2 (clipped), -0.5, 1.5, 0.8 (clipped)
    assert loss.item() == pytest.approx((-1.2 - 0.5 + 1.5 + 0.8) / 4)
    loss.backward()
    # clipped tokens carry no gradient; d(-A r)/d log r = -A r
    assert torch.allclose(log_prob.grad, torch.tensor([[0.0, -0.5, 1.5, 0.0]]) / 4)


def test_low_var_kl_and_entropy_hand_values():
    log_prob = torch.log(torch.tensor([[0.5, 0.2]]))
    ref = torch.log(torch.tensor([[0.25, 0.2]]))
    mask = torch.tensor([[1, 1]])
    # k3 = exp(ref - lp) - (ref - lp) - 1: token 0: 0.5 + ln 2 - 1; token 1: 0.
    assert grpo.kl_loss(log_prob, ref, mask).item() == pytest.approx((0.5 + math.log(2) - 1) / 2, rel=1e-5)
    logits = torch.zeros(1, 2, 7)
    assert grpo.entropy(logits, mask).item() == pytest.approx(math.log(7), rel=1e-5)


def test_objective_composes_like_verl_actor():
    torch.manual_seed(0)
    logits = torch.randn(3, 4, 5, requires_grad=True)
    responses = torch.randint(0, 5, (3, 4))
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
    adv = torch.tensor([1.0, -0.5, 0.2])[:, None] * mask
    ref = torch.log_softmax(torch.randn(3, 4, 5), -1).gather(-1, responses[..., None]).squeeze(-1)
    w = grpo.LossWeights(kl_coef=0.1, entropy_coef=0.01)
    loss, m = grpo.grpo_objective(logits, responses, mask, adv, w, ref)
    lp = torch.log_softmax(logits, -1).gather(-1, responses[..., None]).squeeze(-1)
    pg = -(adv * mask).sum() / mask.sum()
    p = torch.softmax(logits, -1)
    ent = (-(p * torch.log(p)).sum(-1) * mask).sum() / mask.sum()
    kl = ((torch.exp(ref - lp) - (ref - lp) - 1) * mask).sum() / mask.sum()
    assert loss.item() == pytest.approx((pg - 0.01 * ent + 0.1 * kl).item(), rel=1e-5)
    assert m["actor/kl_loss"] == pytest.approx(kl.item(), rel=1e-5)
    unreg, m2 = grpo.grpo_objective(logits, responses, mask, adv, grpo.LossWeights())
    assert unreg.item() == pytest.approx(pg.item(), rel=1e-5) and "actor/kl_loss" not in m2


def test_decoupled_rows_take_n_train_per_group():
    index = np.repeat(np.arange(3), 8)
    rows = grpo.decoupled_rows(index, 2, np.random.default_rng(0))
    assert len(rows) == 6 and np.bincount(index[rows]).tolist() == [2, 2, 2]
    assert grpo.decoupled_rows(np.array([0, 0, 1]), 4, np.random.default_rng(0)).tolist() == [0, 1, 2]


def test_zero_variance_filter_keeps_groups_with_signal():
    rewards = np.array([1, 1, 0, 1, 0, 0])
    assert grpo.nonconstant_group_rows(rewards, np.repeat([0, 1, 2], 2)).tolist() == [2, 3]


def test_grid_cells_enumerates_b_max_and_m_max():
    cfg = {"splits": {"names": ["easy", "hard"]},
           "grid": {"hard": {"B_p": [4, 2], "n": [2, 4], "B_max": 8, "C_max": 100},
                    "easy": {"B_p": [2], "n": [2, 64], "B_max": 512, "C_max": 100}}}
    cells = [(c.split, c.B_p, c.n, c.M_max) for c in grid_cells(cfg)]
    # easy bp2_n64 (B=128 > C_max) cannot take a step; hard bp4_n4 (B=16) exceeds B_max.
    assert cells == [("easy", 2, 2, 25), ("hard", 2, 2, 25), ("hard", 2, 4, 12), ("hard", 4, 2, 12)]
    with pytest.raises(ConfigError, match="grid.tri"):
        grid_cells({"splits": {"names": ["easy"]}, "grid": {"tri": {"B_p": [1], "n": [1], "B_max": 1, "C_max": 1}}})


def test_vectorised_advantage_equals_verls_grpo_estimator_on_random_batches():
    # The local backend uses verl's vectorised estimator; the verl backend runs "grpo".
    from verl.trainer.ppo import core_algos

    g = torch.Generator().manual_seed(0)
    for n in (1, 2, 5, 8):
        index = np.repeat(np.arange(6), n)
        rewards = torch.randint(0, 2, (len(index),), generator=g).float()
        mask = (torch.rand(len(index), 7, generator=g) > 0.3).long()
        mask[:, 0] = 1
        for norm in (True, False):
            ours = grpo.grpo_advantages(rewards, mask, index, norm_by_std=norm)
            theirs, _ = core_algos.compute_grpo_outcome_advantage(
                grpo.outcome_token_rewards(rewards, mask), mask.float(), index, norm_adv_by_std_in_grpo=norm)
            assert torch.allclose(ours, theirs, atol=1e-6)


def test_objective_is_that_of_the_sampling_distribution_logits_over_temperature():
    """verl's actor divides logits by the rollout temperature before log-probs, entropy and KL;
    the objective at temperature T equals the T = 1 objective of logits / T, and differs from it
    on the raw logits."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 5, 11, generator=g, requires_grad=True)
    responses = torch.randint(0, 11, (4, 5), generator=g)
    mask = torch.ones(4, 5, dtype=torch.long)
    adv = torch.randn(4, 1, generator=g).expand(4, 5)
    ref = grpo.token_log_probs(torch.randn(4, 5, 11, generator=g) / 0.6, responses)
    hot = grpo.LossWeights(kl_coef=1e-2, entropy_coef=1e-2, temperature=0.6)
    cold = grpo.LossWeights(kl_coef=1e-2, entropy_coef=1e-2)
    loss_t, m_t = grpo.grpo_objective(logits, responses, mask, adv, hot, ref)
    loss_1, m_1 = grpo.grpo_objective(logits / 0.6, responses, mask, adv, cold, ref)
    assert loss_t.item() == pytest.approx(loss_1.item(), rel=1e-6)
    assert m_t["actor/entropy"] == pytest.approx(m_1["actor/entropy"], rel=1e-6)
    raw, m_raw = grpo.grpo_objective(logits, responses, mask, adv, cold, ref)
    assert abs(m_raw["actor/entropy"] - m_t["actor/entropy"]) > 1e-3


# --- verl 0.9.1 as the oracle ------------------------------------------------------------
# grpo.py writes verl's core_algos functions out in the same operations and order (so the
# local backend needs no verl at run time, docs/gpu_check.md). On random batches its values,
# metrics and gradients equal verl's exactly (tolerance 0: torch.equal) on the CPU, in float32
# and bfloat16; a verl upgrade that changes the math fails here by name.

def _random_batch(g, B=12, R=9, V=37, dtype=torch.float32):
    logits = (3 * torch.randn(B, R, V, generator=g)).to(dtype)
    responses = torch.randint(0, V, (B, R), generator=g)
    mask = (torch.rand(B, R, generator=g) > 0.25).long()
    mask[:, 0] = 1
    mask[-1] = 0  # a fully masked row (seq-mean modes leave it out)
    return logits, responses, mask


def _verl_policy_config(clip_ratio):
    from omegaconf import OmegaConf

    return OmegaConf.create({"clip_ratio": clip_ratio, "clip_ratio_low": None, "clip_ratio_high": None,
                             "clip_ratio_c": 3.0, "global_batch_info": {}})


def test_advantages_equal_verls_vectorised_estimator_exactly():
    from verl.trainer.ppo import core_algos

    g = torch.Generator().manual_seed(1)
    for n, labels in ((1, None), (3, None), (8, None), (4, [7, 2, 9, 100, 3, 5])):
        index = np.repeat(np.arange(6) if labels is None else np.array(labels), n)
        rewards = torch.randint(0, 2, (len(index),), generator=g).float() * torch.rand(len(index), generator=g)
        mask = (torch.rand(len(index), 5, generator=g) > 0.3).long()
        for norm in (True, False):
            ours = grpo.grpo_advantages(rewards, mask, index, norm_by_std=norm)
            theirs, _ = core_algos.compute_grpo_vectorized_outcome_advantage(
                grpo.outcome_token_rewards(rewards, mask), mask.float(), index, norm_adv_by_std_in_grpo=norm)
            assert torch.equal(ours, theirs), (n, labels, norm)


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_policy_kl_entropy_and_aggregation_equal_verls_exactly(mode):
    from verl.trainer.ppo import core_algos

    g = torch.Generator().manual_seed(2)
    for dtype in (torch.float32, torch.bfloat16):
        logits, responses, mask = _random_batch(g, dtype=dtype)
        mat = torch.randn(*mask.shape, generator=g)
        assert torch.equal(grpo.agg_loss(mat, mask.float(), mode), core_algos.agg_loss(mat, mask.float(), mode))
        lp = torch.log_softmax(logits.float(), -1).gather(-1, responses[..., None]).squeeze(-1)
        old = lp + 0.3 * torch.randn(*lp.shape, generator=g)  # off-policy: both clips bind somewhere
        adv = torch.randn(len(mask), 1, generator=g) * mask
        for clip in (0.1, 0.2):
            ours_lp, theirs_lp = lp.clone().requires_grad_(True), lp.clone().requires_grad_(True)
            ours, om = grpo.policy_loss(old, ours_lp, adv, mask, clip, mode)
            theirs, tm = core_algos.get_policy_loss_fn("vanilla")(old, theirs_lp, adv, mask.float(), mode,
                                                                  _verl_policy_config(clip))
            (ours + 0).backward(), (theirs + 0).backward()
            assert torch.equal(ours, theirs) and om == tm and torch.equal(ours_lp.grad, theirs_lp.grad)
            assert 0 < om["actor/pg_clipfrac"] < 1
        ref = old - 0.5
        for kl_type in ("low_var_kl", "kl", "mse", "abs"):
            assert torch.equal(grpo.kl_loss(lp, ref, mask, kl_type, mode),
                               core_algos.agg_loss(core_algos.kl_penalty(lp, ref, kl_type), mask.float(), mode))
        ours_x, theirs_x = logits.clone().requires_grad_(True), logits.clone().requires_grad_(True)
        ours, theirs = grpo.entropy(ours_x, mask, mode), core_algos.compute_entropy_loss(theirs_x, mask.float(), mode)
        ours.float().backward(), theirs.float().backward()
        assert torch.equal(ours, theirs) and torch.equal(ours_x.grad, theirs_x.grad)


def test_token_log_probs_equal_verls_exactly_for_small_and_large_vocabularies():
    from verl.utils import torch_functional as verl_F

    g = torch.Generator().manual_seed(3)
    for dtype in (torch.float32, torch.bfloat16):
        logits, responses, _ = _random_batch(g, B=3, R=4, V=37, dtype=dtype)
        assert torch.equal(grpo.token_log_probs(logits, responses), verl_F.logprobs_from_logits_naive(logits, responses))
        logits, responses, _ = _random_batch(g, B=3, R=4, V=5000, dtype=dtype)  # verl's path without flash-attn
        assert torch.equal(grpo.token_log_probs(logits, responses), verl_F.logprobs_from_logits_v2(logits, responses))


def test_objective_and_its_gradient_equal_verls_composition_exactly():
    """grpo_objective against the same composition of verl's own functions (dp_actor's order)."""
    from verl.trainer.ppo import core_algos
    from verl.utils import torch_functional as verl_F

    g = torch.Generator().manual_seed(4)
    logits, responses, mask = _random_batch(g)
    adv = torch.randn(len(mask), 1, generator=g) * mask
    ref = torch.log_softmax(torch.randn(*logits.shape, generator=g), -1).gather(-1, responses[..., None]).squeeze(-1)
    w = grpo.LossWeights(kl_coef=0.1, entropy_coef=0.01, temperature=0.7)
    ours_x, theirs_x = logits.clone().requires_grad_(True), logits.clone().requires_grad_(True)
    loss, metrics = grpo.grpo_objective(ours_x, responses, mask, adv, w, ref)
    x = theirs_x / w.temperature
    lp = verl_F.logprobs_from_logits_naive(x, responses)
    pg, _ = core_algos.get_policy_loss_fn("vanilla")(lp.detach(), lp, adv, mask.float(), "token-mean",
                                                     _verl_policy_config(0.2))
    ent = core_algos.compute_entropy_loss(x, mask.float(), "token-mean")
    kl = core_algos.agg_loss(core_algos.kl_penalty(lp, ref, "low_var_kl"), mask.float(), "token-mean")
    expected = pg - 0.01 * ent + 0.1 * kl
    loss.backward(), expected.backward()
    assert torch.equal(loss, expected) and torch.equal(ours_x.grad, theirs_x.grad)
    assert (metrics["actor/entropy"], metrics["actor/kl_loss"]) == (ent.item(), kl.item())
