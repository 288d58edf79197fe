"""The GRPO loss math of docs/methods.md section 3 as pure tensor functions.

Shapes: B rollouts (rows), R response tokens, V vocabulary. Advantages, the
clipped policy loss, the KL estimator, entropy and loss aggregation are verl's
own `core_algos` functions, so the local backend and the verl backend optimise
the same objective; this module only adds what verl leaves to its trainer (row
selection for the decoupled baseline and the zero-variance filter) in the same
shape. Learning rate and warm-up are the recipe's (`train.recipe`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from omegaconf import OmegaConf
from verl.trainer.ppo import core_algos
from verl.utils import torch_functional as verl_F


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
    # verl's vectorised GRPO estimator: the same statistics as its per-row loop
    # ("grpo"; unbiased std, singleton groups mean 0 / std 1) without the loop.
    advantages, _ = core_algos.compute_grpo_vectorized_outcome_advantage(
        outcome_token_rewards(rewards, response_mask), response_mask.float(), np.asarray(group_index),
        epsilon=eps, norm_adv_by_std_in_grpo=norm_by_std)
    return advantages


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

    verl's default path loops over rows to bound memory for 150k-token
    vocabularies; for small ones its vectorised log-softmax is the same math
    without a Python loop per row.
    """
    if logits.shape[-1] <= small_vocab:
        return verl_F.logprobs_from_logits_naive(logits, tokens)
    return verl_F.logprobs_from_logits(logits, tokens)


def policy_loss(old_log_prob: torch.Tensor, log_prob: torch.Tensor, advantages: torch.Tensor,
                response_mask: torch.Tensor, clip_ratio: float = 0.2,
                loss_agg_mode: str = "token-mean") -> tuple[torch.Tensor, dict]:
    """verl's 'vanilla' PPO clipped-ratio loss (dual-clip c = 3), aggregated by `loss_agg_mode`."""
    config = OmegaConf.create({"clip_ratio": clip_ratio, "clip_ratio_low": None, "clip_ratio_high": None,
                               "clip_ratio_c": 3.0, "global_batch_info": {}})
    loss_fn = core_algos.get_policy_loss_fn("vanilla")
    return loss_fn(old_log_prob, log_prob, advantages, response_mask.float(), loss_agg_mode, config)


def kl_loss(log_prob: torch.Tensor, ref_log_prob: torch.Tensor, response_mask: torch.Tensor,
            kl_type: str = "low_var_kl", loss_agg_mode: str = "token-mean") -> torch.Tensor:
    """KL(policy || base) estimator per token (verl's kl_penalty), aggregated like the policy loss."""
    kld = core_algos.kl_penalty(log_prob, ref_log_prob, kl_type)
    return core_algos.agg_loss(kld, response_mask.float(), loss_agg_mode)


def entropy(logits: torch.Tensor, response_mask: torch.Tensor, loss_agg_mode: str = "token-mean") -> torch.Tensor:
    """Mean token entropy of the policy over response tokens (verl's compute_entropy_loss)."""
    return core_algos.compute_entropy_loss(logits, response_mask.float(), loss_agg_mode)


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
