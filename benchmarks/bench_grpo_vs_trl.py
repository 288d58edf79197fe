"""Throughput of the local GRPO backend against TRL's GRPOTrainer.

Both train the same tiny base model on the same split at identical settings
(B_p problems x n rollouts per step, one update per step, same max new tokens,
temperature, top-p, learning rate, KL and entropy coefficients, token-mean
loss, group-normalised advantages, the project grader as reward), on the CPU
with the same torch thread count. Each backend runs in its own subprocess so
that peak memory is its own. Prints rollouts/s, tokens/s and peak memory of
each, their ratio, and the local backend's share of the machine's measured
matmul FLOP rate (~8 * params * tokens FLOPs per rollout: 2 to sample, 6 to
train; the frozen reference forward for the KL adds 2 more, not counted).

    .venv/bin/python benchmarks/bench_grpo_vs_trl.py \
        --model results/embedded/model/base --train-file results/embedded/splits/easy/train.parquet

Needs the `bench` extra (trl).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def memory_kib() -> dict:
    """Current and peak resident memory of this process (Linux /proc)."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0])
    return {"rss_kib": out.get("VmRSS", 0), "peak_kib": out.get("VmHWM", 0)}


def load_problems(train_file: str):
    from isocompute.data.schema import ground_truths, read_problems

    df = read_problems(train_file)
    return [list(map(dict, p)) for p in df["prompt"]], list(ground_truths(df))


# --- the two backends ---------------------------------------------------------------

def run_local(args) -> dict:
    from isocompute.config import check_config
    from isocompute.data.schema import read_problems
    from isocompute.grid import Cell
    from isocompute.model.io import load_policy
    from isocompute.train.backends.local import LocalGRPO, Problems

    cfg = check_config({
        "seed": 0, "splits": {"names": ["easy", "hard"]},
        "sampling": {"temperature": args.temperature, "top_p": 1.0, "max_new_tokens": args.max_new_tokens},
        "train": {"lr_base": args.lr, "B_ref": args.bp * args.n, "warmup_steps": 0, "kl_coef": args.kl,
                  "entropy_coef": args.entropy, "regularized_splits": ["easy"]}})
    model, tok = load_policy(args.model)
    train = Problems.from_frame(read_problems(args.train_file), tok)
    before = memory_kib()
    trainer = LocalGRPO(cfg, Cell("easy", args.bp, args.n, args.warmup + args.steps, 0), model, tok, train, train)
    tokens = rollouts = 0
    prompt_tokens = []
    for step in range(1, args.warmup + args.steps + 1):
        if step == args.warmup + 1:
            start, cpu_start = time.perf_counter(), time.process_time()
        metrics, _ = trainer.step(step)
        if step > args.warmup:
            tokens += metrics["perf/tokens_generated"]
            rollouts += args.bp * args.n
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    prompt_tokens = sum(len(p) for p in train.prompt_ids) / len(train)
    return {"backend": "local", "seconds": seconds, "cpu_seconds": cpu_seconds, "rollouts": rollouts, "tokens": tokens,
            "prompt_tokens_mean": prompt_tokens, "params": sum(p.numel() for p in model.parameters()),
            "rss_before_train_kib": before["rss_kib"], **memory_kib()}


def run_trl(args) -> dict:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from isocompute.grading import grade_many

    prompts, truths = load_problems(args.train_file)
    data = Dataset.from_list([{"prompt": p, "ground_truth": t} for p, t in zip(prompts, truths)])
    model = AutoModelForCausalLM.from_pretrained(args.model)
    tok = AutoTokenizer.from_pretrained(args.model)
    counted = {"tokens": 0, "rollouts": 0, "on": False}

    def correctness(completions, ground_truth, completion_ids=None, **_):
        texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
        if counted["on"]:
            counted["tokens"] += sum(len(ids) for ids in completion_ids)
            counted["rollouts"] += len(texts)
        return [float(v) for v in grade_many(texts, [str(g) for g in ground_truth])]

    class Clock(TrainerCallback):
        def on_step_begin(self, targs, state, control, **kw):
            if state.global_step == args.warmup:
                counted["on"] = True
                counted["start"], counted["cpu_start"] = time.perf_counter(), time.process_time()

        def on_step_end(self, targs, state, control, **kw):
            if state.global_step == args.warmup + args.steps:
                counted["seconds"] = time.perf_counter() - counted["start"]
                counted["cpu_seconds"] = time.process_time() - counted["cpu_start"]

    out = tempfile.mkdtemp(prefix="trl_bench_")
    config = GRPOConfig(
        output_dir=out, per_device_train_batch_size=args.bp * args.n, gradient_accumulation_steps=1,
        num_generations=args.n, max_completion_length=args.max_new_tokens, temperature=args.temperature,
        top_p=1.0, learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.01,
        max_grad_norm=1.0, beta=args.kl, entropy_coef=args.entropy, loss_type="dapo", scale_rewards="group",
        num_iterations=1, epsilon=0.2, max_steps=args.warmup + args.steps, logging_steps=1, report_to="none",
        use_cpu=True, bf16=False, save_strategy="no", seed=0, dataloader_num_workers=0, log_completions=False)
    before = memory_kib()
    trainer = GRPOTrainer(model=model, reward_funcs=[correctness], args=config, train_dataset=data,
                          processing_class=tok, callbacks=[Clock()])
    trainer.train()
    return {"backend": "trl", "seconds": counted["seconds"], "cpu_seconds": counted["cpu_seconds"], "rollouts": counted["rollouts"],
            "tokens": counted["tokens"], "rss_before_train_kib": before["rss_kib"], **memory_kib()}


# --- the machine's matmul rate -----------------------------------------------------

def matmul_gflops(size: int = 1024, reps: int = 20) -> float:
    """Best-of-reps fp32 matmul rate: the machine's FLOP limit at this thread count."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t)
    return 2 * size ** 3 / best / 1e9


def worker(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    result = run_local(args) if args.backend == "local" else run_trl(args)
    print("RESULT " + json.dumps(result), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="results/embedded/model/base")
    p.add_argument("--train-file", default="results/embedded/splits/easy/train.parquet")
    p.add_argument("--bp", type=int, default=16)
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--temperature", type=float, default=0.6)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--kl", type=float, default=1e-3)
    p.add_argument("--entropy", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    p.add_argument("--steps", type=int, default=8, help="timed steps")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--backend", choices=["local", "trl"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.backend:
        worker(args)
        return 0
    for path in (args.model, args.train_file):
        if not Path(path).exists():
            sys.exit(f"bench: {path} not found (build it with the pipeline, or pass --model / --train-file)")
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TOKENIZERS_PARALLELISM": "false"}
    results = {}
    for backend in ("local", "trl"):
        cmd = [sys.executable, __file__, "--backend", backend] + [a for a in sys.argv[1:]]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not line:
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-5000:])
            sys.exit(f"bench: the {backend} run failed")
        results[backend] = json.loads(line[-1][len("RESULT "):])

    import torch

    torch.set_num_threads(args.threads)
    gflops = matmul_gflops()
    print(f"B_p={args.bp} n={args.n} max_new_tokens={args.max_new_tokens} T={args.temperature} "
          f"threads={args.threads} steps={args.steps} (+{args.warmup} warm-up), KL {args.kl}, entropy {args.entropy}")
    # Wall-clock rates, and rates per CPU-second of the (single-threaded) process,
    # which stay comparable when other jobs share the machine.
    print(f"{'backend':8s} {'rollouts/s':>11s} {'tokens/s':>9s} {'rollouts/cpu-s':>15s} {'peak MiB':>9s} "
          f"{'train MiB':>10s}")
    for name, r in results.items():
        r["rollouts_per_s"] = r["rollouts"] / r["seconds"]
        r["tokens_per_s"] = r["tokens"] / r["seconds"]
        r["rollouts_per_cpu_s"] = r["rollouts"] / r["cpu_seconds"]
        print(f"{name:8s} {r['rollouts_per_s']:11.1f} {r['tokens_per_s']:9.0f} {r['rollouts_per_cpu_s']:15.1f} "
              f"{r['peak_kib'] / 1024:9.0f} {(r['peak_kib'] - r['rss_before_train_kib']) / 1024:10.0f}")
    loc, trl = results["local"], results["trl"]
    print(f"local / TRL: {loc['rollouts_per_s'] / trl['rollouts_per_s']:.2f}x rollouts/s, "
          f"{loc['tokens_per_s'] / trl['tokens_per_s']:.2f}x tokens/s (wall clock); "
          f"{loc['rollouts_per_cpu_s'] / trl['rollouts_per_cpu_s']:.2f}x rollouts per CPU-second")
    tokens_per_rollout = loc["prompt_tokens_mean"] + loc["tokens"] / loc["rollouts"]
    flops_per_rollout = 8 * loc["params"] * tokens_per_rollout
    achieved = loc["rollouts_per_s"] * flops_per_rollout / 1e9
    achieved_cpu = loc["rollouts_per_cpu_s"] * flops_per_rollout / 1e9
    print(f"local: {loc['params']} params, {tokens_per_rollout:.1f} tokens/rollout -> {achieved:.2f} GFLOP/s wall, "
          f"{achieved_cpu:.2f} GFLOP per CPU-second = {100 * achieved / gflops:.1f}% / {100 * achieved_cpu / gflops:.1f}% "
          f"of the measured matmul peak {gflops:.1f} GFLOP/s ({args.threads} thread(s))")
    print("JSON " + json.dumps({"results": results, "matmul_gflops": gflops, "local_gflops": achieved,
                                "local_gflops_per_cpu_s": achieved_cpu}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
