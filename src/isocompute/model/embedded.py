"""The embedded base model (stands in for Qwen2.5-7B-Instruct on a laptop):
a tiny Llama/Qwen2 causal LM over the character tokenizer, pretrained for a
few minutes on a generated corpus disjoint from the pool.

Corpus targets are correct only with a family-dependent probability (the rest
are near misses), so the model's per-problem pass rates spread over 0..1 and
RL has something to sharpen.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from isocompute.data.pool import Family, draw_expression, evaluate, problem_text
from isocompute.errors import ConfigError
from isocompute.model.tokenizer import build_char_tokenizer

log = logging.getLogger(__name__)


def build_model(tokenizer, cfg: dict, seed: int):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    m = cfg["base_model"]
    common = dict(
        vocab_size=len(tokenizer), hidden_size=m["hidden_size"], intermediate_size=m["intermediate_size"],
        num_hidden_layers=m["num_layers"], num_attention_heads=m["num_heads"],
        num_key_value_heads=m["num_heads"], max_position_embeddings=m["max_position_embeddings"],
        tie_word_embeddings=True, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, rms_norm_eps=1e-5,
    )
    torch.manual_seed(seed)
    if m["architecture"] == "qwen2":
        return Qwen2ForCausalLM(Qwen2Config(**common))
    return LlamaForCausalLM(LlamaConfig(**common))


def near_miss(answer: int, rng: np.random.Generator) -> int:
    """A plausible wrong answer: off by 1-3, or one digit changed."""
    while True:
        if rng.random() < 0.5:
            wrong = answer + int(rng.choice([-3, -2, -1, 1, 2, 3]))
        else:
            s = str(abs(answer))
            i = int(rng.integers(len(s)))
            s = s[:i] + str(int(rng.integers(10))) + s[i + 1:]
            wrong = int(s) * (-1 if answer < 0 else 1)
        if wrong != answer:
            return wrong


def build_corpus(families: list[Family], size: int, seed: int, exclude: set[str],
                 instruction: str) -> pd.DataFrame:
    """Pretraining examples (prompt text, target answer), none of them a pool problem.

    Expressions are drawn i.i.d. (with repeats) from each family's own seeded
    stream, and draws that are pool problems are skipped. The stream does not
    depend on the pool, so the corpus of a small family covers its whole
    expression space (each expression seen with fresh noisy targets) and
    changing the pool's size changes the corpus only by the skipped draws.
    """
    rows = []
    per_family = [size // len(families) + (i < size % len(families)) for i in range(len(families))]
    for fam_i, (fam, count) in enumerate(zip(families, per_family)):
        rng = np.random.default_rng([seed, 3, fam_i])          # expressions
        target_rng = np.random.default_rng([seed, 4, fam_i])   # noisy targets, one per draw
        kept, tries = 0, 0
        while kept < count:
            tries += 1
            if tries > 20 * count + 1000:
                raise ConfigError(
                    f"config key 'pool.families' ({fam.name}): almost every problem of this family is in "
                    f"the pool, so the pretraining corpus cannot avoid it; widen digits/operands or lower "
                    f"pool.n_problems")
            expr = draw_expression(fam, rng)
            truth = evaluate(expr)
            # Drawn for skipped expressions too, so both streams stay pool-independent.
            target = truth if target_rng.random() < fam.corpus_accuracy else near_miss(truth, target_rng)
            if expr in exclude:
                continue
            rows.append((fam.name, f"{problem_text(expr)} {instruction}".strip(), target, truth))
            kept += 1
    df = pd.DataFrame(rows, columns=["family", "problem", "target", "truth"])
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def encode_corpus(tokenizer, corpus: pd.DataFrame) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded [N, T] ids and labels (-100 on prompt and padding)."""
    from isocompute.model.io import render_prompts

    prompts = render_prompts(tokenizer, [[{"role": "user", "content": p}] for p in corpus["problem"]])
    answers = [tokenizer(f"\\boxed{{{t}}}", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
               for t in corpus["target"]]
    width = max(len(p) + len(a) for p, a in zip(prompts, answers))
    ids = torch.full((len(prompts), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full((len(prompts), width), -100, dtype=torch.long)
    for i, (p, a) in enumerate(zip(prompts, answers)):
        seq = p + a
        ids[i, :len(seq)] = torch.tensor(seq)
        labels[i, len(p):len(seq)] = torch.tensor(a)
    return ids, labels


def pretrain_lr(step: int, steps: int, peak: float, warmup: int, schedule: str = "constant",
                floor: float = 0.1) -> float:
    """Linear warm-up, then constant or cosine decay to `floor * peak`."""
    if step < warmup:
        return peak * (step + 1) / warmup
    if schedule == "constant":
        return peak
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (floor + (1 - floor) * 0.5 * (1 + np.cos(np.pi * progress)))


@dataclass(frozen=True)
class Pretraining:
    """The pretraining schedule (the config's model.pretrain_* keys)."""

    steps: int
    batch_size: int
    lr: float
    schedule: str = "constant"

    @classmethod
    def of(cls, m: dict) -> "Pretraining":
        """From the config's `model` section."""
        return cls(m["pretrain_steps"], m["pretrain_batch_size"], m["pretrain_lr"], m["pretrain_lr_schedule"])


def pretrain(model, ids: torch.Tensor, labels: torch.Tensor, how: Pretraining, *, seed: int, progress=None) -> dict:
    """Next-token pretraining on the answer tokens for a fixed number of steps."""
    steps, batch_size, lr, schedule = how.steps, how.batch_size, how.lr, how.schedule
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
    model.train()
    start = time.perf_counter()
    step, losses = 0, []
    warmup = 100
    while step < steps:
        idx = torch.randint(0, ids.shape[0], (batch_size,), generator=g)
        x, y = ids[idx], labels[idx]
        width = int((y != -100).nonzero()[:, 1].max()) + 1  # trim shared right padding
        x, y = x[:, :width], y[:, :width]
        attn = (x != model.config.pad_token_id).long()
        for group in opt.param_groups:
            group["lr"] = pretrain_lr(step, steps, lr, warmup, schedule)
        loss = model(input_ids=x, attention_mask=attn, labels=y).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        step += 1
        if progress is not None:
            progress.update(1)
            if step % 50 == 0:
                progress.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    model.eval()
    return {"steps": step, "seconds": time.perf_counter() - start,
            "final_loss": float(np.mean(losses[-50:])) if losses else float("nan")}


def save_model_dir(model, tokenizer, out: Path, meta: dict) -> None:
    """A complete Hugging Face model directory (what verl and vLLM take)."""
    from transformers import GenerationConfig

    out.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(
        do_sample=True, temperature=0.6, top_p=1.0, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, max_new_tokens=16)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / "isocompute_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True))


def build_embedded_base_model(cfg: dict, pool: pd.DataFrame, out_dir: Path, progress_factory=None) -> dict:
    """Build, pretrain and save the embedded model; returns its metadata."""
    m = cfg["base_model"]
    torch.set_num_threads(m["pretrain_threads"])
    families = [Family.from_config(f) for f in cfg["pool"]["families"]]
    exclude = set(pool["extra_info"].map(lambda e: e.get("expression", "")))
    corpus = build_corpus(families, m["corpus_size"], cfg["seed"], exclude, cfg["pool"]["instruction"])
    overlap = set(corpus["problem"]) & set(pool["prompt"].map(lambda p: p[0]["content"]))
    assert not overlap, f"corpus overlaps the pool: {sorted(overlap)[:3]}"
    tokenizer = build_char_tokenizer()
    model = build_model(tokenizer, cfg, cfg["seed"])
    ids, labels = encode_corpus(tokenizer, corpus)
    n_params = sum(p.numel() for p in model.parameters())
    log.info("embedded model: %d parameters, corpus %d examples, %d tokens wide", n_params, len(ids), ids.shape[1])
    bar = progress_factory(total=m["pretrain_steps"], desc="pretrain") if progress_factory else None
    stats = pretrain(model, ids, labels, Pretraining.of(m), seed=cfg["seed"], progress=bar)
    if bar is not None:
        bar.close()
    meta = {"parameters": n_params, "corpus_examples": len(corpus),
            "corpus_accuracy": {f.name: f.corpus_accuracy for f in families}, **stats,
            "architecture": m["architecture"]}
    log.info("pretraining: %s", stats)
    save_model_dir(model, tokenizer, out_dir, meta)
    return meta
