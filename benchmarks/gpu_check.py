"""GPU check, part 2: the cluster path on one GPU of a node with PyPI (vLLM, verl, Snakemake),
in at most 8 minutes, as one command that writes a JSON of results (rewritten after each step).

  0. doctor   `isocompute doctor` on the verl study's config; nothing else runs unless it passes
  1. data     the embedded study's data stages (pool, base model, avg@16 with the
              local sampler, splits) through Snakemake, sized for minutes
  2. vllm     the vLLM sampler's avg@16 on the pool (a few hundred problems)
              against the local sampler's pass rates from step 1, in float32: the
              CPU twin's agreement test (agreement_z, |z| < 4) on CUDA
  3. verl     one real verl GRPO run of one tiny cell (~5 steps, 1 GPU) through the
              train rule (snakemake, same command, same files), then its score rule;
              SDPA attention (no flash-attn needed); the CPU twin's weight-sync check
              on the log-probs it logged (weight_sync)

It runs in the environment benchmarks/gpu_check_install.sh builds from envs/gpu-check.lock.txt:
the cluster's lock plus Snakemake, resolved in CI beside the CPU twin's (envs/cpu-twin.lock.txt),
so the GPU runs the versions `make test` ran on the CPU, plus CUDA.

Part 1 (the local backend on CUDA vs the CPU, the matmul peak, the embedded study's
training; a bare offline node: no Snakemake, Ray, verl, vLLM) is benchmarks/gpu_check_local.py.

    benchmarks/gpu_check_install.sh             # a venv from PyPI only (no conda, no URLs)
    benchmarks/gpu_check.sh                     # = python benchmarks/gpu_check.py --out gpu_check.json
    python benchmarks/gpu_check.py --dry-run    # what it would run; verl's command resolved by verl

--dry-run runs on a CPU machine (and in `make test`): it writes the plan, every command
parsed by the parser of the program that will run it, the Snakemake dry run of the verl
cell and verl's resolution of the command the train rule's own `isocompute train` builds
(`python -m verl.trainer.main_ppo --cfg job --resolve`). Run from the repository root.
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

from isocompute.cluster.agreement import Z_BOUND, agreement_z   # the CPU twin's statistic, here on CUDA
# the CPU twin's weight-sync criterion (weight_sync.verdict, judged from step 2: update 1 moves the actor)
from isocompute.train.backends.verl.weight_sync import judge_metrics

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
VERL_CELL = ("easy", 4, 8)                          # 5 steps of B = 32
SDPA = "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"
VERL = {
    # The weight-sync check judges from step 2: update 1 must move the actor well past the rounding
    # between vLLM and the trainer, so a full learning rate of the CPU twin's size at once.
    "train": {"backend": "verl", "max_response_length": 16, "lr_base": 1.0e-2, "warmup_steps": 1},
    "grid": {"easy": {"B_p": [VERL_CELL[1]], "n": [VERL_CELL[2]], "B_max": 32, "C_max": 5 * 32}},
    # 8 Ray CPUs on 1 GPU: 3 for verl's workers, 1 for TransferQueue's controller, 3 storage
    # units and 1 to start the rest; verl's default of 8 units would make tq.init wait forever.
    "cluster": {"train": {"gpus": 1, "cpus_per_gpu": 8},
                "verl": {"max_prompt_length": 64, "max_token_len_per_gpu": 4096, "gpu_memory_utilization": 0.3,
                         "storage_units": 3,
                         # verl's FSDP model defaults to flash_attention_2; SDPA is torch's own
                         "extra_overrides": [SDPA]}},
}
# float32, as the local sampler and the CPU twin's vLLM test sample (the schema's bfloat16 is a
# GPU's speed default): then both samplers draw from one distribution up to kernel rounding,
# and their pass rates must agree within sampling error (agreement_z).
VLLM = {"sampling": {"backend": "vllm"},
        "cluster": {"vllm": {"max_model_len": 128, "gpu_memory_utilization": 0.3, "dtype": "float32"}}}


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
        self.commands: list[list[str]] = []  # every command of the plan, for --dry-run to parse

    def run(self, argv: list[str], *, safe: bool = False, **env) -> dict:
        """Run `argv` in the scratch directory; a dry run only prints it, unless it is `safe` (a dry run itself)."""
        record = {"command": shlex.join(argv)}
        self.commands.append(argv)
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
        n = STUDY["difficulty"]["samples"]
        z = agreement_z((both["vllm"] * n).round(), (both["local"] * n).round(), n)
        result.update(agreement_z=round(z, 3), ok=abs(z) < Z_BOUND,
                      agreement=f"|z| {'<' if abs(z) < Z_BOUND else '>='} {Z_BOUND}: "
                                f"{'within' if abs(z) < Z_BOUND else 'beyond'} sampling error")
        result.update(problems=len(both), samples=STUDY["difficulty"]["samples"],
                      mean_local=round(float(both["local"].mean()), 4), mean_vllm=round(float(both["vllm"].mean()), 4),
                      mean_abs_diff=round(float((both["local"] - both["vllm"]).abs().mean()), 4),
                      correlation=round(float(both["local"].corr(both["vllm"])), 4),
                      rollouts_per_s=round(len(both) * STUDY["difficulty"]["samples"] / rec["seconds"], 1))
    return result


def train_rule_command(steps: Steps, config: Path) -> list[str]:
    """The `isocompute train` command the train rule runs for the verl cell (Snakemake's dry
    run with its shell commands), as argv; the train_options job it reads is run for real (it
    writes one JSON), so the train command sees the file the rule gives it."""
    split, B_p, n = VERL_CELL
    rec = steps.run([str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--cores", "1", "-n", "-p",
                     str(layout().run_files(split, B_p, n).marker), "--configfile", str(config)], safe=True)
    found = {}
    for line in rec.get("output", "").splitlines():
        line = line.strip().removeprefix("Shell command:").strip()  # snakemake -p's line
        for sub in ("train", "train-options"):
            if line.startswith(f"isocompute {sub} ") and (sub != "train" or f"bp{B_p}_n{n}" in line):
                found[sub] = [str(BIN / "isocompute"), *shlex.split(line.split(" > ")[0])[1:]]
    if "train" not in found:
        raise RuntimeError(f"no `isocompute train` command in Snakemake's dry run: {rec.get('error', '')[-2000:]}")
    if "train-options" in found:
        opts = found["train-options"]
        (steps.work / opts[opts.index("--out") + 1]).parent.mkdir(parents=True, exist_ok=True)
        ran = steps.run(found["train-options"], safe=True)
        if not ran.get("ok"):
            raise RuntimeError(f"the train_options job failed: {ran.get('error')}")
    return found["train"]


def resolved_verl_command(steps: Steps, config: Path) -> dict:
    """verl's command for the verl cell, built from the train rule's own `isocompute train`
    arguments as the train job builds it (cli/train.py), then resolved by verl itself."""
    from isocompute.cli import build_parser
    from isocompute.cli.common import config_from_params
    from isocompute.grid import Cell
    from isocompute.layout import RunPaths
    from isocompute.train.backends.verl import verl_command

    work = steps.work
    rule = train_rule_command(steps, config)
    args = build_parser().parse_args(rule[1:])
    options = (work / args.options).read_text() if args.options else None
    cfg = config_from_params(args.params, options)
    cell = Cell(args.split, args.bp, args.n, args.max_steps, args.max_steps * args.bp * args.n, args.replicate,
                args.variant)
    paths = RunPaths(work / args.run_dir, work / args.train_file, work / args.val_file, str(work / args.model))
    argv = verl_command(cfg, cell, paths).argv
    proc = subprocess.run([sys.executable, *argv[1:3], "--cfg", "job", "--resolve", *argv[3:]],
                          capture_output=True, text=True, timeout=600, cwd=work)
    out = {"train_rule": shlex.join(rule), "options_file_read": options is not None, "command": shlex.join(argv)}
    if proc.returncode:
        return {**out, "resolved": None, "error": proc.stderr[-3000:]}
    resolved = yaml.safe_load(proc.stdout)
    t, m, r = resolved["trainer"], resolved["actor_rollout_ref"]["model"], resolved["actor_rollout_ref"]["rollout"]
    return {**out, "resolved": {
        "trainer.nnodes": t["nnodes"], "trainer.n_gpus_per_node": t["n_gpus_per_node"],
        "trainer.total_training_steps": t["total_training_steps"], "trainer.experiment_name": t["experiment_name"],
        "data.train_batch_size": resolved["data"]["train_batch_size"], "actor_rollout_ref.rollout.n": r["n"],
        "actor_rollout_ref.rollout.name": r["name"], "data.max_prompt_length": resolved["data"]["max_prompt_length"],
        "actor_rollout_ref.model.path": m["path"],
        "actor_rollout_ref.model.override_config.attn_implementation":
            (m.get("override_config") or {}).get("attn_implementation")}}


# What part 2 needs of `isocompute doctor`'s checklist: not flash-attn (SDPA attention), not a
# SLURM profile (one node, no scheduler); the study's model and data do not exist before step 1.
DOCTOR_REQUIRED = ("NVIDIA driver", "torch.cuda", "vllm", "verl", "Hydra / antlr")


def check_doctor(steps: Steps) -> dict:
    rec = steps.run([str(BIN / "isocompute"), "doctor"], safe=not steps.dry_run)  # safe: output kept
    if steps.dry_run:
        return {**rec, "ok": True, "required": list(DOCTOR_REQUIRED)}
    lines = (rec.get("output") or rec.get("error") or "").splitlines()
    status = {name: line.split()[0] for line in lines for name in DOCTOR_REQUIRED
              if line.strip() and line.split(None, 1)[-1].startswith(name)}
    missing = [n for n in DOCTOR_REQUIRED if status.get(n) != "ok"]
    return {**rec, "ok": not missing, "checks": status, "required_not_ok": missing}


def parse_commands(commands: list[list[str]]) -> list[dict]:
    """Every command of the plan, parsed by the parser of the program that runs it."""
    from isocompute.cli import build_parser

    out = []
    for argv in commands:
        prog = Path(argv[0]).name
        row = {"program": prog, "argv0": argv[1] if len(argv) > 1 else None}
        try:
            if prog == "isocompute":
                args = build_parser().parse_args(argv[1:])
                if getattr(args, "params", None):
                    from isocompute.cli.common import config_from_params

                    config_from_params(args.params)
            elif prog == "snakemake":
                from snakemake.cli import get_argument_parser

                get_argument_parser().parse_args(argv[1:])
            else:
                raise ValueError(f"no parser for {prog}")
            row["ok"] = True
        except (Exception, SystemExit) as exc:
            row.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        out.append(row)
    return out


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
                      avg_at_k=[round(float(v), 4) for v in evals.get(f"avg@{STUDY['eval']['k']}", [])],
                      weight_sync=judge_metrics(steps.work / files.metrics))
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
    out = Path(args.out)
    report = {"part": 2, "work": str(work), "dry_run": args.dry_run}

    def save():
        report["seconds"] = round(time.perf_counter() - start, 1)
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(json.dumps(report, indent=2, default=str))
        os.replace(tmp, out)

    def step(name, fn, *a):
        try:
            report[name] = fn(*a)
        except Exception as exc:  # a failure is a row of the JSON, never a crash
            report[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        save()
        return report[name]

    doctor = step("doctor", check_doctor, steps)
    if args.dry_run or doctor.get("ok"):
        data = step("data", lambda: snakemake(steps, work / "local.yaml", *L.split_files("easy").values(), L.pool,
                                              dry_run=args.dry_run))
        if args.dry_run or data.get("ok"):
            step("vllm", check_vllm, steps)
            step("verl", check_verl, steps, work / "verl.yaml")
    if args.dry_run:
        report.setdefault("verl", {})["command"] = step("verl_command", resolved_verl_command, steps,
                                                        work / "verl.yaml")
        report.pop("verl_command", None)
        report["parsed"] = parse_commands(steps.commands)
    save()
    print(json.dumps({k: report[k] for k in report if k not in ("data",)}, indent=2, default=str)[:6000])
    failed = [k for k in ("doctor", "data", "vllm", "verl") if k in report and '"ok": false' in json.dumps(report[k])]
    failed += [p["argv0"] for p in report.get("parsed", []) if not p["ok"]]
    return 1 if failed or (not args.dry_run and "verl" not in report) else 0


if __name__ == "__main__":
    sys.exit(main())
