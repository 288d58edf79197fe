"""The GRPO loss math of docs/methods.md section 3 as pure tensor functions.

Shapes: B rollouts (rows), R response tokens, V vocabulary. Advantages, the
clipped policy loss, the KL estimator, entropy and loss aggregation are verl
0.9.1's `core_algos` functions, written out here in the same operations and
order, so the local backend and the verl backend optimise the same objective
without the local backend importing verl (whose import pulls in Ray: ~10 s and
~3,500 modules per job start; docs/gpu_check.md). verl stays the oracle:
tests/train/test_grpo.py checks every function here against its `core_algos`
counterpart on random batches. This module also adds what verl leaves to its
trainer (row selection for the decoupled baseline and the zero-variance filter)
in the same shape. Learning rate and warm-up are the recipe's (`train.recipe`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F


# --- verl's helpers (verl.utils.torch_functional, verl.utils.groupwise) -------------

def masked_sum(values: torch.Tensor, mask: torch.Tensor, axis=None) -> torch.Tensor:
    """Sum of `values` where `mask` is non-zero (NaNs outside the mask ignored)."""
    return (torch.where(mask.bool(), values, 0.0) * mask).sum(axis=axis)


def masked_mean(values: torch.Tensor, mask: torch.Tensor, axis=None) -> torch.Tensor:
    return masked_sum(values, mask, axis) / (mask.sum(axis=axis) + 1e-8)


@torch.no_grad()
def group_mean_std(scores: torch.Tensor, group: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-group mean and unbiased std of [B] scores, groups 0..G-1 (`group` [B] long);
    singleton groups get mean 0, std 1 (verl's group_mean_std with eps = 0)."""
    scores = scores.reshape(-1).to(torch.float32)
    G = int(group.max().item()) + 1 if group.numel() else 0
    zeros = torch.zeros(G, device=scores.device, dtype=torch.float32)
    count = zeros.clone().index_add_(0, group, torch.ones_like(scores))
    mean = zeros.clone().index_add_(0, group, scores) / count.clamp_min(1.0)
    centered = scores - mean[group]
    var = zeros.clone().index_add_(0, group, centered * centered) / (count - 1.0).clamp_min(1.0)
    std = torch.sqrt(torch.clamp(var, min=0.0))
    single = count <= 1.0
    return torch.where(single, 0.0, mean), torch.where(single, 1.0, std)


def agg_loss(loss_mat: torch.Tensor, loss_mask: torch.Tensor, loss_agg_mode: str) -> torch.Tensor:
    """[B, R] per-token losses -> scalar, one data-parallel rank (verl's agg_loss, dp_size 1)."""
    if loss_agg_mode == "token-mean":
        return masked_sum(loss_mat, loss_mask) / loss_mask.sum()
    if loss_agg_mode == "seq-mean-token-sum":
        seq_losses = torch.sum(loss_mat * loss_mask, dim=-1)
        seq_mask = (torch.sum(loss_mask, dim=-1) > 0).float()  # fully masked rows do not count
        return masked_sum(seq_losses, seq_mask) / seq_mask.sum()
    if loss_agg_mode == "seq-mean-token-mean":
        tokens = torch.sum(loss_mask, dim=-1)
        seq_losses = torch.sum(loss_mat * loss_mask, dim=-1) / (tokens + 1e-8)
        seq_mask = (tokens > 0).float()
        return masked_sum(seq_losses, seq_mask) / seq_mask.sum()
    raise ValueError(f"Invalid loss_agg_mode: {loss_agg_mode}")


# --- advantages -------------------------------------------------------------------

def outcome_token_rewards(rewards: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """[B] outcome rewards placed on each row's last response token -> [B, R] (verl's layout)."""
    token_rewards = torch.zeros_like(response_mask, dtype=torch.float32)
    last = (response_mask.sum(-1).long() - 1).clamp(min=0)
    token_rewards[torch.arange(len(rewards)), last] = rewards.float()
    return token_rewards


def grpo_advantages(rewards: torch.Tensor, response_mask: torch.Tensor, group_index: np.ndarray,
                    norm_by_std: bool = True, eps: float = 1e-6) -> torch.Tensor:
    """A_i = (r_i - mean_g r) / (std_g r + eps) per group g (std unbiased), broadcast to [B, R]."""
    # verl's vectorised GRPO estimator (compute_grpo_vectorized_outcome_advantage): the same
    # statistics as its per-row loop ("grpo"; unbiased std, singleton groups mean 0 / std 1).
    with torch.no_grad():
        scores = outcome_token_rewards(rewards, response_mask).sum(dim=-1)
        _, labels = np.unique(np.asarray(group_index), return_inverse=True)  # any labels -> 0..G-1
        g = torch.from_numpy(labels.reshape(-1).astype(np.int64)).to(scores.device)
        mean_g, std_g = group_mean_std(scores, g)
        scalars = (scores - mean_g[g]) / (std_g[g] + eps) if norm_by_std else scores - mean_g[g]
        return scalars.unsqueeze(-1) * response_mask.float()


def decoupled_rows(group_index: np.ndarray, n_train: int, rng: np.random.Generator) -> np.ndarray:
    """Rows entering the gradient: a random n_train of each group (all rows of smaller groups).

    The baseline was already estimated from the whole group; this is the
    appendix's decoupled-baseline ablation.
    """
    group_index = np.asarray(group_index)
    rows = []
    for g in np.unique(group_index):
        members = np.flatnonzero(group_index == g)
        take = min(n_train, len(members))
        rows.append(np.sort(rng.choice(members, size=take, replace=False)))
    return np.sort(np.concatenate(rows)) if rows else np.zeros(0, dtype=np.int64)


def nonconstant_group_rows(rewards: np.ndarray, group_index: np.ndarray) -> np.ndarray:
    """Rows whose group has rewards that are not all equal (the zero-variance filter keeps these)."""
    rewards, group_index = np.asarray(rewards, dtype=float), np.asarray(group_index)
    keep = np.zeros(len(rewards), dtype=bool)
    for g in np.unique(group_index):
        members = group_index == g
        keep[members] = np.ptp(rewards[members]) > 0
    return np.flatnonzero(keep)


def loss_rows(rewards: np.ndarray, group_index: np.ndarray, *, zero_variance_filter=False,
              n_train: int | None = None, rng: np.random.Generator | None = None
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """Which of the B rows enter one step's loss, after the advantages were computed on all of them.

    Returns (rows, regularised): `rows` [b] index the rows of the loss (a random n_train of
    each group under the decoupled baseline; without zero-variance groups when
    `zero_variance_filter` is True); `regularised` [b] bool marks which of those enter the KL
    and entropy terms when the filter applies to those terms only ('kl_entropy'), else None
    (every row of the loss).
    """
    rows = np.arange(len(rewards))
    if n_train is not None:  # baseline from all n, gradient from n_train of them
        rows = decoupled_rows(group_index, n_train, rng)
    if zero_variance_filter is True:
        rows = np.intersect1d(rows, nonconstant_group_rows(rewards, group_index))
    if zero_variance_filter == "kl_entropy":
        return rows, np.isin(rows, nonconstant_group_rows(rewards, group_index))
    if zero_variance_filter not in (False, True):
        raise ValueError(f"zero_variance_filter must be False, True or 'kl_entropy', got {zero_variance_filter!r}")
    return rows, None


# --- losses ---------------------------------------------------------------------------

def token_log_probs(logits: torch.Tensor, tokens: torch.Tensor, small_vocab: int = 4096) -> torch.Tensor:
    """log p(token) of each response token: logits [B, R, V], tokens [B, R] -> [B, R].

    verl's default path without flash-attn (logprobs_from_logits_v2) loops over
    rows to bound memory for 150k-token vocabularies; for small ones its
    vectorised log-softmax (logprobs_from_logits_naive) is the same math
    without a Python loop per row.
    """
    if logits.shape[-1] <= small_vocab:
        return F.log_softmax(logits, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    if logits.dtype in (torch.float32, torch.float64):
        picked = torch.gather(logits, dim=-1, index=tokens.unsqueeze(-1)).squeeze(-1)
        return picked - torch.stack([torch.logsumexp(row, dim=-1) for row in logits])
    return torch.stack([F.log_softmax(row, dim=-1).gather(-1, t.unsqueeze(-1)).squeeze(-1)
                        for row, t in zip(logits, tokens, strict=True)])  # bf16: logsumexp is unstable


def policy_loss(old_log_prob: torch.Tensor, log_prob: torch.Tensor, advantages: torch.Tensor,
                response_mask: torch.Tensor, clip_ratio: float = 0.2,
                loss_agg_mode: str = "token-mean") -> tuple[torch.Tensor, dict]:
    """verl's 'vanilla' PPO clipped-ratio loss (dual-clip c = 3), aggregated by `loss_agg_mode`
    (compute_policy_loss_vanilla, symmetric clip range, no rollout correction weights)."""
    mask, clip_c = response_mask.float(), 3.0
    negative_approx_kl = torch.clamp(log_prob - old_log_prob, min=-20.0, max=20.0)
    ratio = torch.exp(negative_approx_kl)
    ppo_kl = masked_mean(-negative_approx_kl, mask)
    pg_losses1 = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(ratio, 1 - clip_ratio, 1 + clip_ratio)
    clip_pg_losses1 = torch.maximum(pg_losses1, pg_losses2)
    pg_clipfrac = masked_mean(torch.gt(pg_losses2, pg_losses1).float(), mask)
    pg_losses3 = -advantages * clip_c
    clip_pg_losses2 = torch.min(pg_losses3, clip_pg_losses1)
    pg_clipfrac_lower = masked_mean(torch.gt(clip_pg_losses1, pg_losses3) * (advantages < 0).float(), mask)
    pg_losses = torch.where(advantages < 0, clip_pg_losses2, clip_pg_losses1)
    metrics = {"actor/pg_clipfrac": pg_clipfrac.detach().item(), "actor/ppo_kl": ppo_kl.detach().item(),
               "actor/pg_clipfrac_lower": pg_clipfrac_lower.detach().item()}
    return agg_loss(pg_losses, mask, loss_agg_mode), metrics


def kl_penalty(log_prob: torch.Tensor, ref_log_prob: torch.Tensor, kl_type: str = "low_var_kl") -> torch.Tensor:
    """Per-token KL(policy || base) estimate (verl's kl_penalty; J. Schulman's k1, k2, k3)."""
    if kl_type in ("kl", "k1"):
        return log_prob - ref_log_prob
    if kl_type == "abs":
        return (log_prob - ref_log_prob).abs()
    if kl_type in ("mse", "k2"):
        return 0.5 * (log_prob - ref_log_prob).square()
    if kl_type in ("low_var_kl", "k3"):
        kl = torch.clamp(ref_log_prob - log_prob, min=-20, max=20)
        return torch.clamp((torch.exp(kl) - kl - 1).contiguous(), min=-10, max=10)
    raise NotImplementedError(f"kl_type {kl_type!r}")


def kl_loss(log_prob: torch.Tensor, ref_log_prob: torch.Tensor, response_mask: torch.Tensor,
            kl_type: str = "low_var_kl", loss_agg_mode: str = "token-mean") -> torch.Tensor:
    """KL(policy || base) estimator per token (verl's kl_penalty), aggregated like the policy loss."""
    return agg_loss(kl_penalty(log_prob, ref_log_prob, kl_type), response_mask.float(), loss_agg_mode)


def entropy(logits: torch.Tensor, response_mask: torch.Tensor, loss_agg_mode: str = "token-mean") -> torch.Tensor:
    """Mean token entropy of the policy over response tokens (verl's compute_entropy_loss)."""
    p = F.softmax(logits, dim=-1)
    token_entropy = torch.logsumexp(logits, dim=-1) - torch.sum(p * logits, dim=-1)
    return agg_loss(token_entropy, response_mask.float(), loss_agg_mode)


@dataclass(frozen=True)
class LossWeights:
    """Coefficients of one step's objective: pg_loss - entropy_coef * H + kl_coef * KL.

    `temperature` is the sampling temperature: log-probs, entropy and KL are
    those of the distribution the rollouts were drawn from, logits / T, as
    verl's actor computes them (dp_actor divides its logits by the rollout
    temperature).
    """
    clip_ratio: float = 0.2
    loss_agg_mode: str = "token-mean"
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    kl_type: str = "low_var_kl"
    temperature: float = 1.0


def grpo_objective(logits: torch.Tensor, responses: torch.Tensor, response_mask: torch.Tensor,
                   advantages: torch.Tensor, weights: LossWeights,
                   ref_log_prob: torch.Tensor | None = None,
                   regularised: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
    """The scalar loss of one on-policy update and its metrics (verl's actor composition).

    On-policy: the behaviour log-probs are the current ones, detached, so the
    ratio is 1 and clipping only matters through its gradient mask. `logits`
    are the model's raw logits; `ref_log_prob` are already at the temperature.
    `regularised` [B] bool restricts the KL and entropy terms to those rows (the
    zero-variance filter on those terms only; `loss_rows`); the metrics
    actor/entropy and actor/kl_loss stay those of every row, so that variants
    compare on the same measurement, and actor/entropy_term, actor/kl_term are the
    terms in the loss.
    """
    if regularised is not None:
        return _objective_regularising_rows(logits, responses, response_mask, advantages, weights, ref_log_prob,
                                            regularised)
    logits = logits / weights.temperature
    log_prob = token_log_probs(logits, responses)
    pg_loss, metrics = policy_loss(log_prob.detach(), log_prob, advantages, response_mask,
                                   weights.clip_ratio, weights.loss_agg_mode)
    ent = entropy(logits if weights.entropy_coef > 0 else logits.detach(), response_mask, weights.loss_agg_mode)
    loss = pg_loss - weights.entropy_coef * ent if weights.entropy_coef > 0 else pg_loss
    metrics = {**metrics, "actor/pg_loss": pg_loss.item(), "actor/entropy": ent.item()}
    if ref_log_prob is not None:
        kl = kl_loss(log_prob, ref_log_prob, response_mask, weights.kl_type, weights.loss_agg_mode)
        loss = loss + weights.kl_coef * kl
        metrics["actor/kl_loss"] = kl.item()
        metrics["actor/kl_coef"] = weights.kl_coef
    return loss, metrics


def _objective_regularising_rows(logits, responses, response_mask, advantages, weights, ref_log_prob,
                                 regularised):
    """grpo_objective with the KL and entropy terms over the `regularised` rows only (token-mean
    over their tokens); no such row: the step's loss is the policy gradient alone."""
    logits = logits / weights.temperature
    log_prob = token_log_probs(logits, responses)
    pg_loss, metrics = policy_loss(log_prob.detach(), log_prob, advantages, response_mask,
                                   weights.clip_ratio, weights.loss_agg_mode)
    reg_mask = response_mask * regularised.to(response_mask.dtype)[:, None]
    any_rows = bool(regularised.any())
    with torch.no_grad():
        ent_all = entropy(logits, response_mask, weights.loss_agg_mode)
    loss = pg_loss
    metrics = {**metrics, "actor/pg_loss": pg_loss.item(), "actor/entropy": ent_all.item(),
               "actor/regularised_rows": int(regularised.sum())}
    if weights.entropy_coef > 0 and any_rows:
        ent = entropy(logits, reg_mask, weights.loss_agg_mode)
        loss = loss - weights.entropy_coef * ent
        metrics["actor/entropy_term"] = ent.item()
    if ref_log_prob is not None:
        with torch.no_grad():
            metrics["actor/kl_loss"] = kl_loss(log_prob, ref_log_prob, response_mask, weights.kl_type,
                                               weights.loss_agg_mode).item()
        metrics["actor/kl_coef"] = weights.kl_coef
        if any_rows:
            kl = kl_loss(log_prob, ref_log_prob, reg_mask, weights.kl_type, weights.loss_agg_mode)
            loss = loss + weights.kl_coef * kl
            metrics["actor/kl_term"] = kl.item()
    return loss, metrics
