"""Throughput of the local GRPO backend against TRL's GRPOTrainer, and against itself
at an earlier commit, in one run.

All train the same tiny base model on the same split at identical settings (B_p
problems x n rollouts per step, one update per step, same max new tokens,
temperature, top-p, learning rate, KL and entropy coefficients, token-mean loss,
group-normalised advantages, the project grader as reward), on the CPU with the
same torch thread count, each in its own subprocess (its peak memory is its own).
Two measurements per backend:

  steady   the update loop alone, after `--warmup` untimed steps: rollouts/s,
           tokens/s, and the local backend's share of the machine's measured
           matmul FLOP rate, both per CPU-second (~8 * params * tokens FLOPs per rollout, prompt
           tokens counted per rollout: 2 to sample, 6 to train; the frozen
           reference forward for the KL adds 2 more, not counted). A rough share, high
           for the local backend, which runs each group's prompt once (~1.8x at 16 x 8):
           benchmarks/bench_step.py counts a step's FLOPs exactly)
  job      a whole training job from process start to exit, as a study runs it:
           for the local backend `isocompute train` on one grid cell of
           `--job-steps` steps (start-up, model load, generation, log-probs,
           updates, checkpoints and the cell's validation evaluations on
           `--val-file`); for TRL its trainer for the same steps (start-up,
           model load, training; it has no validation schedule to run)

Rates are per wall-second and per CPU-second of the process (CPU-seconds stay
comparable when other jobs share the machine). `--baseline REV` adds the local
backend of commit REV (a temporary git worktree), the "before" of a speed change.

Each measurement runs `--repeats` times (default 3), the backends interleaved, and the
run of median rollouts per CPU-second is reported with the range over all runs: one
64-step job varies by about +-20% from run to run on a 2-core machine, more than the
differences this bench is asked to tell apart.

    .venv/bin/python benchmarks/bench_grpo_vs_trl.py [--baseline REV] [--quick] \
        [--model results/embedded/model/base] [--train-file results/embedded/splits/easy/train.parquet]

`--quick`: 3 steady steps and a 6-step job at B_p 4, n 4 (tests run it on a tiny model).

TRL runs in a venv of its own (`--trl-python`): verl 0.9.1 patches trl whenever it is
importable and fails on trl 1.16, so the project's venv must not hold it. Make it once with

    python3 -m venv .venv-trl && .venv-trl/bin/pip install torch==2.13.0 \
        && .venv-trl/bin/pip install -c constraints.txt -e ".[bench]"

and pass `--trl-python .venv-trl/bin/python`; without one the TRL rows are skipped and say so.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


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


def bench_config(args, steps: int) -> dict:
    """The checked config of one Easy grid cell, B_p x n for `steps` steps, at the bench's settings."""
    from isocompute.config import check_config

    B = args.bp * args.n
    return check_config({
        "seed": 0, "splits": {"names": ["easy", "hard"]},
        "grid": {"easy": {"B_p": [args.bp], "n": [args.n], "B_max": B, "C_max": steps * B},
                 "hard": {"B_p": [args.bp], "n": [args.n], "B_max": B, "C_max": steps * B}},
        "sampling": {"temperature": args.temperature, "top_p": 1.0, "max_new_tokens": args.max_new_tokens},
        "train": {"lr_base": args.lr, "B_ref": B, "warmup_steps": 0, "kl_coef": args.kl,
                  "entropy_coef": args.entropy, "regularized_splits": ["easy"]}})


def bench_cell(cfg: dict):
    from isocompute.grid import grid_cells

    return next(c for c in grid_cells(cfg) if c.split == "easy")


# --- the two backends ---------------------------------------------------------------

def run_local(args) -> dict:
    from isocompute.data.schema import read_problems
    from isocompute.model.io import load_policy
    from isocompute.train.backends.local import LocalGRPO, Problems

    cfg = bench_config(args, args.warmup + args.steps)
    model, tok = load_policy(args.model)
    train = Problems.from_frame(read_problems(args.train_file), tok)
    before = memory_kib()
    trainer = LocalGRPO(cfg, bench_cell(cfg), model, tok, train, train)
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

def matmul_gflops(size: int = 1024, reps: int = 20, shape: tuple[int, int, int] | None = None) -> tuple[float, float]:
    """Best-of-reps fp32 matmul rate, per wall-second and per CPU-second of this process: the
    machine's FLOP limit at this thread count. The share of the peak divides a per-CPU-second
    rate by the per-CPU-second peak, which stays near the quiet machine's when other jobs
    share the cores (a wall-clock best of 20 does not: every repeat may be preempted).
    `shape` (m, k, n): [m, k] x [k, n] instead of the square of `size`."""
    import torch

    m, k, n = shape or (size, size, size)
    a, b = torch.randn(m, k), torch.randn(k, n)
    torch.mm(a, b)
    best = best_cpu = float("inf")
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        torch.mm(a, b)
        best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, time.process_time() - c)
    flops = 2 * m * k * n / 1e9
    return flops / best, flops / max(best_cpu, 1e-9)


def worker(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    result = run_local(args) if args.backend == "local" else run_trl(args)
    print("RESULT " + json.dumps(result), flush=True)


# --- the parent: subprocesses, timed ---------------------------------------------------

def timed_run(cmd: list[str], env: dict, what: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run `cmd`; (process, wall seconds, CPU seconds of the child), or exit naming `what`."""
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-5000:])
        sys.exit(f"bench: {what} failed (exit {proc.returncode})")
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return proc, wall, cpu


def worker_args(args) -> list[str]:
    return ["--model", args.model, "--train-file", args.train_file, "--bp", str(args.bp), "--n", str(args.n),
            "--max-new-tokens", str(args.max_new_tokens), "--temperature", str(args.temperature),
            "--lr", str(args.lr), "--kl", str(args.kl), "--entropy", str(args.entropy), "--threads", str(args.threads)]


def python_of(args, backend: str) -> str:
    return args.trl_python if backend == "trl" else sys.executable


def steady(args, backend: str, src: Path, env: dict, label: str) -> dict:
    cmd = [python_of(args, backend), __file__, "--backend", backend, *worker_args(args), "--warmup", str(args.warmup),
           "--steps", str(args.steps)]
    proc, _, _ = timed_run(cmd, {**env, "PYTHONPATH": str(src)}, f"the {label} steady-state run")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        sys.exit(f"bench: the {label} steady-state run printed no RESULT line")
    r = json.loads(line[-1][len("RESULT "):])
    return {**r, "rollouts_per_s": r["rollouts"] / r["seconds"], "tokens_per_s": r["tokens"] / r["seconds"],
            "rollouts_per_cpu_s": r["rollouts"] / r["cpu_seconds"]}


def whole_job(args, backend: str, src: Path, env: dict, label: str) -> dict:
    """One whole job from process start to exit, timed from outside."""
    env = {**env, "PYTHONPATH": str(src)}
    rollouts = args.job_steps * args.bp * args.n
    if backend == "trl":
        cmd = [python_of(args, "trl"), __file__, "--backend", "trl", *worker_args(args), "--warmup", "0",
               "--steps", str(args.job_steps)]
        _, wall, cpu = timed_run(cmd, env, f"the {label} whole job")
        return {"seconds": wall, "cpu_seconds": cpu, "rollouts": rollouts, "evaluations": 0,
                "rollouts_per_s": rollouts / wall, "rollouts_per_cpu_s": rollouts / cpu}
    sys.path.insert(0, str(REPO / "src"))
    from isocompute.jobs import as_json, train_params

    cfg = bench_config(args, args.job_steps)
    cell = bench_cell(cfg)
    with tempfile.TemporaryDirectory(prefix="bench_job_") as tmp:
        run_dir = Path(tmp) / cell.name
        cmd = [sys.executable, "-m", "isocompute", "train", "--params", as_json(train_params(cfg, cell)),
               "--split", cell.split, "--bp", str(cell.B_p), "--n", str(cell.n), "--replicate", "0",
               "--max-steps", str(cell.M_max), "--train-file", args.train_file, "--val-file", args.val_file,
               "--model", args.model, "--run-dir", str(run_dir), "--threads", str(args.threads)]
        _, wall, cpu = timed_run(cmd, env, f"the {label} whole job")
        run = json.loads((run_dir / "run.json").read_text())
    return {"seconds": wall, "cpu_seconds": cpu, "rollouts": rollouts, "evaluations": len(run["eval_steps"]),
            "in_loop_seconds": run["wall_s"], "rollouts_per_s": rollouts / wall, "rollouts_per_cpu_s": rollouts / cpu}


def median_run(runs: list[dict]) -> dict:
    """The run of median rollouts per CPU-second (the lower middle one of an even count), with
    `repeats` and the range of that rate over all runs (`rollouts_per_cpu_s_range`)."""
    ordered = sorted(runs, key=lambda r: r["rollouts_per_cpu_s"])
    return {**ordered[(len(runs) - 1) // 2], "repeats": len(runs),
            "rollouts_per_cpu_s_range": [ordered[0]["rollouts_per_cpu_s"], ordered[-1]["rollouts_per_cpu_s"]]}


@contextmanager
def checkout(rev: str | None):
    """The src/ of commit `rev` (a temporary detached worktree), or None without one."""
    if rev is None:
        yield None
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_baseline_"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tmp / "tree"), rev],
                   check=True)
    try:
        yield tmp / "tree" / "src"
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tmp / "tree")], check=False)


def trl_available(python: str) -> bool:
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('trl') is None)"
    return subprocess.run([python, "-c", probe]).returncode == 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="results/embedded/model/base")
    p.add_argument("--train-file", default="results/embedded/splits/easy/train.parquet")
    p.add_argument("--val-file", default="results/embedded/splits/easy/val.parquet")
    p.add_argument("--bp", type=int, default=16)
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--temperature", type=float, default=0.6)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--kl", type=float, default=1e-3)
    p.add_argument("--entropy", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    p.add_argument("--steps", type=int, default=8, help="timed steps")
    p.add_argument("--job-steps", type=int, default=64, help="steps of the whole job")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--baseline", metavar="REV", help="also measure the local backend of this commit")
    p.add_argument("--trl-python", default=sys.executable, help="the interpreter of a venv with TRL")
    p.add_argument("--no-trl", action="store_true", help="skip TRL")
    p.add_argument("--repeats", type=int, default=3,
                   help="runs of each measurement, the backends interleaved; the median run per CPU-second "
                        "is reported with the range over all (default: 3; --quick: 1). One 64-step job "
                        "varies by about +-20%% from run to run on a 2-core machine")
    p.add_argument("--quick", action="store_true", help="3 steady steps, a 6-step job, B_p 4 x n 4")
    p.add_argument("--backend", choices=["local", "trl"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.backend:
        worker(args)
        return 0
    if args.quick:
        args.bp, args.n, args.warmup, args.steps, args.job_steps, args.repeats = 4, 4, 1, 3, 6, 1
    if args.repeats < 1:
        sys.exit(f"bench: --repeats must be at least 1, got {args.repeats}")
    for path in (args.model, args.train_file, args.val_file):
        if not Path(path).exists():
            sys.exit(f"bench: {path} not found (build it with the pipeline, or pass --model / --train-file / "
                     f"--val-file)")
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TOKENIZERS_PARALLELISM": "false"}
    use_trl = not args.no_trl and trl_available(args.trl_python)
    if not args.no_trl and not use_trl:
        print(f"TRL not importable by {args.trl_python} (see --trl-python): its rows are skipped")
    with checkout(args.baseline) as baseline_src:
        backends = [("local", "local", REPO / "src")]
        if baseline_src is not None:
            backends.append((f"local@{args.baseline}", "local", baseline_src))
        if use_trl:
            backends.append(("trl", "trl", REPO / "src"))
        runs: dict[str, dict[str, list]] = {label: {"steady": [], "job": []} for label, _, _ in backends}
        for _ in range(args.repeats):  # the backends interleaved: a drift of the machine hits each alike
            for label, backend, src in backends:
                runs[label]["steady"].append(steady(args, backend, src, env, label))
                runs[label]["job"].append(whole_job(args, backend, src, env, label))
        results = {label: {measure: median_run(r) for measure, r in by.items()} for label, by in runs.items()}

    import torch

    torch.set_num_threads(args.threads)
    gflops_wall, gflops = matmul_gflops()
    report(args, results, gflops, gflops_wall)
    print("JSON " + json.dumps({"results": results, "matmul_gflops": gflops, "matmul_gflops_wall": gflops_wall}))
    return 0


def report(args, results: dict, gflops: float, gflops_wall: float) -> None:
    print(f"B_p={args.bp} n={args.n} max_new_tokens={args.max_new_tokens} T={args.temperature} "
          f"threads={args.threads}; steady: {args.steps} steps (+{args.warmup} warm-up); job: {args.job_steps} "
          f"steps; KL {args.kl}, entropy {args.entropy}; matmul peak {gflops:.1f} GFLOP/s per CPU-second "
          f"({gflops_wall:.1f} per wall-second); load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'backend':18s} {'measure':7s} {'rollouts/s':>11s} {'rollouts/cpu-s':>15s} {'range over runs':>16s} "
          f"{'% peak':>7s} {'seconds':>8s} {'evals':>6s} {'peak MiB':>9s}")
    ours = results["local"]
    for label, r in results.items():
        for measure in ("steady", "job"):
            m = r[measure]
            share = ""
            if measure == "steady" and "params" in m:
                flops = 8 * m["params"] * (m["prompt_tokens_mean"] + m["tokens"] / m["rollouts"])
                m["peak_share_cpu"] = m["rollouts_per_cpu_s"] * flops / 1e9 / gflops
                share = f"{100 * m['peak_share_cpu']:.1f}"
            peak = f"{m['peak_kib'] / 1024:.0f}" if "peak_kib" in m else ""
            lo, hi = m["rollouts_per_cpu_s_range"]
            spread = f"{lo:.0f}-{hi:.0f} ({m['repeats']})"
            print(f"{label:18s} {measure:7s} {m['rollouts_per_s']:11.1f} {m['rollouts_per_cpu_s']:15.1f} "
                  f"{spread:>16s} {share:>7s} {m['seconds']:8.1f} {m.get('evaluations', ''):>6} {peak:>9s}")
    for label, r in results.items():
        if label == "local":
            continue
        print(f"local / {label}: " + ", ".join(
            f"{measure} {ours[measure]['rollouts_per_s'] / r[measure]['rollouts_per_s']:.2f}x per wall-s, "
            f"{ours[measure]['rollouts_per_cpu_s'] / r[measure]['rollouts_per_cpu_s']:.2f}x per CPU-s"
            for measure in ("steady", "job")))


if __name__ == "__main__":
    sys.exit(main())
