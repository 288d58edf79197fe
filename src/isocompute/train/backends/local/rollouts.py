"""What the local backend feeds its model and reads back: a split's problems,
tokenised; the problems of each step; packed responses and their logits (the
prompt's KV cache shared by its n rollouts); validation samples in verl's dump
format. Pure of the run loop (`trainer.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from isocompute.grading import grade_many
from isocompute.sampling import LocalSampler, SamplingParams


@dataclass
class Problems:
    """One split file, tokenised: prompt ids, the dump's decoded input, answers, ids."""
    prompt_ids: list[list[int]]
    inputs: list[str]
    ground_truths: list[str]
    problem_ids: list[str]

    @classmethod
    def from_frame(cls, df, tokenizer) -> "Problems":
        from isocompute.data.schema import ground_truths, problem_ids
        from isocompute.model.io import render_prompts

        ids = render_prompts(tokenizer, df["prompt"])
        # verl dumps the prompt decoded without special tokens; so do we.
        inputs = tokenizer.batch_decode(ids, skip_special_tokens=True)
        return cls(ids, inputs, list(ground_truths(df)), [str(p) for p in problem_ids(df)])

    def __len__(self) -> int:
        return len(self.prompt_ids)


def set_training(model, mode: bool) -> None:
    """model.train(mode), without walking the module tree where that changes nothing: a model
    already in that mode, or a lean module (no layer of it acts differently in training;
    its flag alone is set). `train()` visits every module, ~1 ms a call at the embedded
    model's size, two or three times a step."""
    from isocompute.lean_module import LeanModule

    if isinstance(model, LeanModule):
        model.training = mode
    elif model.training != mode:
        model.train(mode)


def derived_seed(*parts: int) -> int:
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def problems_for_step(step: int, B_p: int, num_problems: int, seed: int) -> np.ndarray:
    """Indices of the B_p problems of update `step` (1-based).

    Like verl's shuffled dataloader with drop_last: each epoch is a seeded
    permutation cut into num_problems // B_p batches, so no problem repeats
    within a step. A pure function of the step, so a resumed run draws what an
    uninterrupted one would, and runs with different B_p share one order.
    """
    if B_p > num_problems:
        raise ValueError(f"B_p = {B_p} exceeds the {num_problems} training problems of the split")
    steps_per_epoch = num_problems // B_p
    epoch, offset = divmod(step - 1, steps_per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(num_problems)
    return order[offset * B_p:(offset + 1) * B_p]


def pack_responses(completions: list[list[int]], pad_id: int, device):
    """Right-padded completions [B, R] and their mask (1 on generated tokens, EOS included)."""
    from torch.nn.utils.rnn import pad_sequence

    rows = [torch.tensor(c if c else [pad_id], dtype=torch.long) for c in completions]
    ids = pad_sequence(rows, batch_first=True, padding_value=pad_id)
    lengths = torch.tensor([len(c) for c in completions])
    mask = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).long()
    return ids.to(device), mask.to(device)


def response_logits(model, prompts, row_group: torch.Tensor, responses: torch.Tensor,
                    response_mask: torch.Tensor) -> torch.Tensor:
    """Logits predicting each response token, [B, R, V], for rows that share G prompts.

    Each distinct prompt is run once and its KV cache fanned out to its rows
    (row_group[b] = the prompt of row b), so n rollouts of a problem do not
    pay n times for the prompt; gradients flow back through the shared cache.
    """
    from isocompute.forward import causal_lm, select_rows

    p_ids, p_attn, p_pos = prompts
    forward = causal_lm(model)
    cache = forward.new_cache()
    # The prompt's last position predicts response token 0.
    first = select_rows(forward(p_ids, p_attn, p_pos, cache, logits_to_keep=1)[:, -1:], row_group)
    R = responses.shape[1]
    if R == 1:
        return first.float()
    cache.batch_select_indices(row_group)
    attn = torch.cat([p_attn[row_group], response_mask[:, :R - 1]], dim=-1)
    pos = p_pos[row_group, -1:] + 1 + torch.arange(R - 1, device=responses.device)
    rest = forward(responses[:, :R - 1], attn, pos, cache)
    return torch.cat([first, rest], dim=1).float()


def evaluate(sampler: LocalSampler, val: Problems, samples: int, params: SamplingParams, seed: int,
             step: int) -> list[dict]:
    """`samples` completions per validation problem as verl dump records (+ problem_id, sample, n_tokens),
    from `sampler`'s model.

    The sampling generator is seeded from (seed, step) alone, so an
    evaluation does not depend on the training RNG stream or on resumption.
    """
    model, tokenizer = sampler.model, sampler.tokenizer
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(derived_seed(seed, 1, step))
    was_training = model.training
    set_training(model, False)
    completions = sampler.sample(val.prompt_ids, samples, params, generator=generator)
    set_training(model, was_training)
    flat = [c for group in completions for c in group]
    texts = tokenizer.batch_decode(flat, skip_special_tokens=True)
    gts = [gt for gt in val.ground_truths for _ in range(samples)]
    scores = grade_many(texts, gts)
    records = []
    for i, (text, tokens, gt, score) in enumerate(zip(texts, flat, gts, scores)):
        p = i // samples
        records.append({"input": val.inputs[p], "output": text, "gts": gt, "score": float(score), "step": step,
                        "problem_id": val.problem_ids[p], "sample": i % samples, "n_tokens": len(tokens)})
    return records
