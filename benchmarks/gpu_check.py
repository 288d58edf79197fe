"""The GPU check: what only a GPU shows, on one GPU, in at most 8 minutes, as one
command that writes a JSON of results.

  1. data     the embedded study's data stages (pool, base model, avg@16 with the
              local sampler, splits) through Snakemake, sized for minutes
  2. local    the local GRPO backend on CUDA for two grid cells, timed against the
              same cells on the CPU: rollouts/s of each and their ratio
  3. vllm     the vLLM sampler's avg@16 on the pool (a few hundred problems)
              against the local sampler's pass rates from step 1
  4. verl     one real verl GRPO run of one tiny cell (~5 steps, 1 GPU) through the
              train rule (snakemake, same command, same files), then its score rule

    benchmarks/gpu_check.sh                     # = python benchmarks/gpu_check.py --out gpu_check.json
    python benchmarks/gpu_check.py --dry-run    # what it would run; verl's command resolved by verl

--dry-run runs on a CPU machine (and in `make test`): it prints the plan, the
Snakemake dry run of the verl cell and verl's resolution of its command
(`python -m verl.trainer.main_ppo --cfg job --resolve`), and writes them as JSON.
Run from the repository root, in the GPU environment (envs/verl.yaml).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EXPERIMENT = "gpu_check"

# The embedded study, sized for a few minutes: a base model with head dim 32
# (vLLM's and flash-attn's kernels take no smaller), 400 problems, small grids.
STUDY = {
    "experiment": EXPERIMENT,
    "seed": 0,
    "pool": {"n_problems": 400, "instruction": ""},
    "base_model": {"hidden_size": 128, "num_layers": 2, "num_heads": 4, "intermediate_size": 256,
                   "corpus_size": 20000, "pretrain_steps": 800, "pretrain_threads": 8},
    "difficulty": {"samples": 16, "extremely_hard_samples": 16},
    "sampling": {"batch_size": 2048, "chunk_size": 400},
    # A minutes-pretrained model solves little: Easy is "at least one of 16".
    "splits": {"names": ["easy", "hard"], "val_size": 20, "bands": {"easy": [0.05, 1.0]}},
    "train": {"lr_base": 1.0e-4, "B_ref": 64, "eval_interval": 5},
    "eval": {"k": 4, "samples": 4},
}
LOCAL_CELLS = [("easy", 8, 8), ("easy", 16, 8)]    # the local backend, CUDA vs CPU
LOCAL_C_MAX = 1280                                  # 20 and 10 steps
VERL_CELL = ("easy", 4, 8)                          # 5 steps of B = 32
VERL = {
    "train": {"backend": "verl", "max_response_length": 16},
    "grid": {"easy": {"B_p": [VERL_CELL[1]], "n": [VERL_CELL[2]], "B_max": 32, "C_max": 5 * 32}},
    # 8 Ray CPUs on 1 GPU: 3 for verl's workers, 1 for TransferQueue's controller, 3 storage
    # units and 1 to start the rest; verl's default of 8 units would make tq.init wait forever.
    "cluster": {"train": {"gpus": 1, "cpus_per_gpu": 8},
                "verl": {"max_prompt_length": 64, "max_token_len_per_gpu": 4096, "gpu_memory_utilization": 0.3,
                         "storage_units": 3}},
}
VLLM = {"sampling": {"backend": "vllm"},
        "cluster": {"vllm": {"max_model_len": 128, "gpu_memory_utilization": 0.3}}}


def deep(base: dict, update: dict) -> dict:
    out = json.loads(json.dumps(base))
    for k, v in update.items():
        out[k] = deep(out.get(k, {}), v) if isinstance(v, dict) else v
    return out


def verl_study() -> dict:
    return deep(STUDY, VERL)


def layout():
    from isocompute.layout import StudyLayout

    return StudyLayout(EXPERIMENT)


class Steps:
    """Runs commands under one time budget; each result lands in the JSON."""

    def __init__(self, work: Path, budget_s: float, dry_run: bool):
        self.work, self.dry_run, self.deadline = work, dry_run, time.monotonic() + budget_s
        self.env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(self, argv: list[str], *, safe: bool = False, **env) -> dict:
        """Run `argv` in the scratch directory; a dry run only prints it, unless it is `safe` (a dry run itself)."""
        record = {"command": shlex.join(argv)}
        print("$ " + record["command"], flush=True)
        if self.dry_run and not safe:
            return record
        left = self.deadline - time.monotonic()
        if left < 5:
            return {**record, "ok": False, "error": "time budget used up"}
        start = time.perf_counter()
        try:
            proc = subprocess.run(argv, cwd=self.work, env={**self.env, **env}, capture_output=True, text=True,
                                  timeout=left)
        except subprocess.TimeoutExpired:
            return {**record, "ok": False, "error": f"timed out after {left:.0f} s", "seconds": left}
        record.update(ok=proc.returncode == 0, seconds=round(time.perf_counter() - start, 2))
        if proc.returncode:
            record["error"] = (proc.stdout + proc.stderr)[-3000:]
        elif safe:
            record["output"] = proc.stdout
        return record


def snakemake(steps: Steps, config: Path, *targets: str, dry_run: bool = False) -> dict:
    argv = [str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--cores", str(os.cpu_count() or 2),
            *(["-n"] if dry_run else []), *targets, "--configfile", str(config)]
    record = steps.run(argv, safe=dry_run)
    if dry_run and "output" in record:
        jobs = [line.split()[1].rstrip(":") for line in record.pop("output").splitlines()
                if line.startswith(("rule ", "localrule "))]
        record["jobs"] = {rule: jobs.count(rule) for rule in dict.fromkeys(jobs)}
    return record


def train_command(cfg: dict, split: str, B_p: int, n: int, run_dir: Path, device: str) -> list[str]:
    """The train rule's command for a local-backend cell on `device`, outside results/."""
    L = layout()
    params = {k: cfg[k] for k in ("seed", "sampling")}
    params["train"] = {**cfg["train"], "device": device}
    params["eval"] = {"samples": cfg["eval"]["samples"]}
    files = L.split_files(split)
    return [str(BIN / "isocompute"), "train", "--params", json.dumps(params), "--split", split, "--bp", str(B_p),
            "--n", str(n), "--max-steps", str(LOCAL_C_MAX // (B_p * n)), "--train-file", files["train"],
            "--val-file", files["val"], "--model", L.embedded_model, "--run-dir", str(run_dir),
            "--threads", str(os.cpu_count() or 2)]


def check_local(steps: Steps) -> dict:
    out = []
    for split, B_p, n in LOCAL_CELLS:
        cell = {"cell": f"{split}/bp{B_p}_n{n}", "rollouts": LOCAL_C_MAX // (B_p * n) * B_p * n}
        for device in ("cuda", "cpu"):
            rec = steps.run(train_command(STUDY, split, B_p, n, Path(f"local/{device}/bp{B_p}_n{n}"), device))
            cell[device] = rec
            if rec.get("ok"):
                cell[f"{device}_rollouts_per_s"] = round(cell["rollouts"] / rec["seconds"], 1)
        if "cuda_rollouts_per_s" in cell and "cpu_rollouts_per_s" in cell:
            cell["cuda_over_cpu"] = round(cell["cuda_rollouts_per_s"] / cell["cpu_rollouts_per_s"], 2)
        out.append(cell)
    return {"cells": out}


def check_vllm(steps: Steps) -> dict:
    L = layout()
    cfg = deep(STUDY, VLLM)
    params = {k: cfg[k] for k in ("seed", "sampling", "difficulty")} | {"cluster": {"vllm": cfg["cluster"]["vllm"]}}
    rec = steps.run([str(BIN / "isocompute"), "difficulty", "--params", json.dumps(params), "--pool", L.pool,
                     "--model", L.embedded_model, "--threads", "8", "--out", "vllm/difficulty.parquet"])
    result = {"sample": rec}
    if rec.get("ok"):
        local = pd.read_parquet(steps.work / L.difficulty).set_index("problem_id")["avg_at_samples"]
        counts = pd.read_parquet(steps.work / "vllm" / "difficulty.parquet").set_index("problem_id")
        vllm = counts["correct"] / counts["samples"]
        both = pd.concat({"local": local, "vllm": vllm}, axis=1, join="inner")
        result.update(problems=len(both), samples=STUDY["difficulty"]["samples"],
                      mean_local=round(float(both["local"].mean()), 4), mean_vllm=round(float(both["vllm"].mean()), 4),
                      mean_abs_diff=round(float((both["local"] - both["vllm"]).abs().mean()), 4),
                      correlation=round(float(both["local"].corr(both["vllm"])), 4),
                      rollouts_per_s=round(len(both) * STUDY["difficulty"]["samples"] / rec["seconds"], 1))
    return result


def resolved_verl_command(work: Path) -> dict:
    """The verl command of the verl cell as the train rule builds it, resolved by verl itself."""
    from isocompute.config import check_config
    from isocompute.grid import find_cell, grid_cells
    from isocompute.layout import run_paths
    from isocompute.train.backends.verl import verl_command

    cfg = check_config(verl_study())
    cell = find_cell(grid_cells(cfg), *VERL_CELL)
    paths = run_paths(cfg, cell)
    paths = type(paths)(work / paths.run_dir, work / paths.train_file, work / paths.val_file,
                        str(work / paths.model))
    argv = verl_command(cfg, cell, paths).argv
    proc = subprocess.run([sys.executable, *argv[1:3], "--cfg", "job", "--resolve", *argv[3:]],
                          capture_output=True, text=True, timeout=600, cwd=work)
    if proc.returncode:
        return {"command": shlex.join(argv), "resolved": None, "error": proc.stderr[-3000:]}
    resolved = yaml.safe_load(proc.stdout)
    t, r = resolved["trainer"], resolved["actor_rollout_ref"]["rollout"]
    return {"command": shlex.join(argv), "resolved": {
        "trainer.nnodes": t["nnodes"], "trainer.n_gpus_per_node": t["n_gpus_per_node"],
        "trainer.total_training_steps": t["total_training_steps"], "data.train_batch_size":
            resolved["data"]["train_batch_size"], "actor_rollout_ref.rollout.n": r["n"],
        "actor_rollout_ref.rollout.name": r["name"], "data.max_prompt_length": resolved["data"]["max_prompt_length"],
        "actor_rollout_ref.model.path": resolved["actor_rollout_ref"]["model"]["path"]}}


def check_verl(steps: Steps, config: Path) -> dict:
    split, B_p, n = VERL_CELL
    files = layout().run_files(split, B_p, n)
    rec = snakemake(steps, config, str(files.evals), dry_run=steps.dry_run)
    result = {"train_and_score": rec}
    if rec.get("ok") and not steps.dry_run:
        evals = pd.read_parquet(steps.work / files.evals)
        run = json.loads((steps.work / files.marker).read_text())
        result.update(steps=run.get("steps"), seconds=run.get("seconds"), evaluations=len(evals),
                      dropped_prompts=run.get("dropped_prompts"),
                      avg_at_k=[round(float(v), 4) for v in evals.get(f"avg@{STUDY['eval']['k']}", [])])
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="gpu_check.json", help="JSON of the results (or of the plan with --dry-run)")
    ap.add_argument("--work", default=None, help="scratch directory (default: a new temporary one)")
    ap.add_argument("--budget-s", type=float, default=470, help="wall-clock budget of all steps")
    ap.add_argument("--dry-run", action="store_true", help="print what would run; resolve verl's command")
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="gpu_check-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "local.yaml").write_text(yaml.safe_dump(STUDY, sort_keys=False))
    (work / "verl.yaml").write_text(yaml.safe_dump(verl_study(), sort_keys=False))
    steps = Steps(work, args.budget_s, args.dry_run)
    start = time.perf_counter()
    L = layout()
    report = {"work": str(work), "dry_run": args.dry_run}
    report["data"] = snakemake(steps, work / "local.yaml", *L.split_files("easy").values(), L.pool,
                               dry_run=args.dry_run)
    if args.dry_run or report["data"].get("ok"):
        report["local"] = check_local(steps)
        report["vllm"] = check_vllm(steps)
        report["verl"] = check_verl(steps, work / "verl.yaml")
    if args.dry_run:
        report["verl"]["command"] = resolved_verl_command(work)
    report["seconds"] = round(time.perf_counter() - start, 1)
    Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({k: report[k] for k in report if k not in ("data",)}, indent=2, default=str)[:6000])
    failed = [k for k in ("data", "local", "vllm", "verl") if k in report and '"ok": false' in json.dumps(report[k])]
    return 1 if failed or (not args.dry_run and "verl" not in report) else 0


if __name__ == "__main__":
    sys.exit(main())
