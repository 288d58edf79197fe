"""GPU check, part 1: what a bare, offline single-GPU node can show, in at most 15 minutes,
as one JSON that is always written.

The node: Python 3.12, torch (CUDA), transformers, numpy, pandas, pyarrow, scipy, seaborn,
tqdm, pyyaml, jinja2 -- no snakemake, ray, verl, vllm, math-verify, jsonschema, no network;
only the repository is copied there. What the local backend needs beyond that (jsonschema
for the config, math-verify for the grader) travels as wheels in benchmarks/wheels/
(benchmarks/gpu_check_wheels.sh builds it) and is unpacked into the scratch directory,
never installed. Nothing here imports verl, Ray or Snakemake.

  env     versions, the GPU, which of the packages above are importable
  wheels  unpack the carried wheels of whatever is missing
  peak    the device's matmul peak, measured here (torch matmul loop: fp32 and bf16)
  data    the embedded study's data stages, sized for minutes, as the rules run them
          (isocompute pool, base-model, difficulty, difficulty-merge, splits)
  local   the local backend on CUDA and on the CPU for two cells: rollouts/s, their
          ratio, and the share of the matmul peak the trainer's model FLOPs reach
  bf16    the same cells' steps on CUDA in fp32 and under bf16 autocast: where it helps
  study   the embedded study's grid (config/config.yaml), cell by cell, largest batch
          first, on this data, as much as the budget leaves

Every step has its own deadline (and the whole run one budget); a failure or a timeout is
a row of the JSON, never a crash. The JSON is rewritten whole (temporary file, then rename)
after every step, and on SIGTERM / SIGINT (the running step is killed and marked).

    python benchmarks/gpu_check_local.py --out gpu_check_local.json          # on the node
    python benchmarks/gpu_check_local.py --device cpu --size tiny --out x.json  # a CPU machine
    python benchmarks/gpu_check_local.py --dry-run --out plan.json            # the commands only

Run it from anywhere with the node's python; it puts src/ and the unpacked wheels on the
PYTHONPATH of every step. Part 2 (vLLM, verl, Snakemake; a node with PyPI) is
benchmarks/gpu_check.py.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check_worker as worker  # noqa: E402  (stdlib-only helpers, also run as the steps' worker)

EXPERIMENT = "gpu_check"
MISSING_ON_NODE = ["snakemake", "ray", "verl", "vllm", "math_verify", "jsonschema"]

# The embedded study, sized for minutes (head dim 32, 400 problems); `tiny` is the test
# suite's size, for exercising part 1 on a CPU machine.
SIZES = {
    "full": {
        "study": {"experiment": EXPERIMENT, "seed": 0, "pool": {"n_problems": 400, "instruction": ""},
                  "base_model": {"hidden_size": 128, "num_layers": 2, "num_heads": 4, "intermediate_size": 256,
                                 "corpus_size": 20000, "pretrain_steps": 800, "pretrain_threads": 8},
                  "difficulty": {"samples": 16, "extremely_hard_samples": 16},
                  "sampling": {"batch_size": 2048, "chunk_size": 400},
                  "splits": {"names": ["easy", "hard"], "val_size": 20, "bands": {"easy": [0.05, 1.0]}},
                  "train": {"lr_base": 1.0e-4, "B_ref": 64, "eval_interval": 5}, "eval": {"k": 4, "samples": 4}},
        "cells": [("easy", 8, 8), ("easy", 16, 8)], "c_max": 1280,
        "caps": {"env": 60, "peak": 90, "pool": 60, "base_model": 240, "difficulty": 180, "difficulty_merge": 30,
                 "splits": 30, "local": 150, "bf16": 120, "study_cell": 90},
    },
    "tiny": {
        "study": {"experiment": EXPERIMENT, "seed": 0, "pool": {"n_problems": 300, "instruction": ""},
                  "base_model": {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "intermediate_size": 64,
                                 "corpus_size": 4000, "pretrain_steps": 300, "pretrain_batch_size": 64,
                                 "pretrain_threads": 1},
                  "difficulty": {"samples": 16, "extremely_hard_samples": 24},
                  "sampling": {"batch_size": 512, "chunk_size": 128, "max_new_tokens": 8},
                  "splits": {"names": ["easy", "hard"], "val_size": 4, "bands": {"easy": [0.05, 1.0]}},
                  "train": {"lr_base": 1.0e-3, "B_ref": 8, "eval_interval": 2, "eval_schedule": "steps"},
                  "eval": {"k": 4, "samples": 4}},
        "cells": [("easy", 2, 2), ("easy", 2, 4)], "c_max": 16,
        "caps": {"env": 60, "peak": 30, "pool": 60, "base_model": 120, "difficulty": 120, "difficulty_merge": 30,
                 "splits": 30, "local": 90, "bf16": 60, "study_cell": 40},
    },
}


class Report:
    """The JSON of the run, rewritten whole after every change."""

    def __init__(self, path: Path, **head):
        self.path, self.data = path, {**head, "finished": False, "steps": []}
        self.write()

    def add(self, row: dict) -> dict:
        self.data["steps"].append(row)
        self.write()
        return row

    def write(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        os.replace(tmp, self.path)


class Steps:
    """Runs each step under its own deadline and the run's budget; every outcome is a row."""

    def __init__(self, report: Report, work: Path, budget_s: float, dry_run: bool, env: dict):
        self.report, self.work, self.dry_run, self.env = report, work, dry_run, env
        self.deadline = time.monotonic() + budget_s
        self.child: subprocess.Popen | None = None
        self.current: dict | None = None

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def command(self, name: str, argv: list[str], cap_s: float, **extra) -> dict:
        """Run `argv` in the scratch directory in its own process group, killed at its deadline."""
        row = {"step": name, "command": argv, **extra}
        if self.dry_run:
            return self.report.add(row)
        timeout = min(cap_s, self.left() - 5)
        if timeout < 5:
            return self.report.add({**row, "ok": False, "error": "time budget used up"})
        start = time.perf_counter()
        self.current = row
        out = self.work / "logs" / f"{name.replace('/', '_')}.log"
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w") as log:
            self.child = subprocess.Popen(argv, cwd=self.work, env=self.env, stdout=subprocess.PIPE, stderr=log,
                                          text=True, start_new_session=True)
            try:
                stdout, _ = self.child.communicate(timeout=timeout)
                row.update(ok=self.child.returncode == 0, rc=self.child.returncode)
            except subprocess.TimeoutExpired:
                kill_group(self.child)
                stdout, _ = self.child.communicate()
                row.update(ok=False, rc=None, error=f"deadline: killed after {timeout:.0f} s")
        self.child, self.current = None, None
        row["seconds"] = round(time.perf_counter() - start, 2)
        row["log"] = str(out)
        if not row["ok"] and "error" not in row:
            row["error"] = out.read_text()[-2500:]
        result = worker.last_json_line(stdout)
        if result is not None:
            row["result"] = result
        return self.report.add(row)

    def local(self, name: str, fn, *args, **kwargs) -> dict:
        """An in-process step (stdlib only): its exception is the row's error."""
        start = time.perf_counter()
        try:
            row = {"step": name, "ok": True, **(fn(*args, **kwargs) or {})}
        except Exception as exc:  # a failure is a row, never a crash
            row = {"step": name, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()[-2000:]}
        row["seconds"] = round(time.perf_counter() - start, 2)
        return self.report.add(row)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def isocompute(*args: str) -> list[str]:
    """The `isocompute` command as the node runs it (the package is not installed there)."""
    return [sys.executable, "-c", "import sys; from isocompute.cli import main; sys.exit(main())", *args]


def worker_cmd(*args: str) -> list[str]:
    return [sys.executable, str(REPO / "benchmarks" / "gpu_check_worker.py"), *args]


# --- the commands (the rules' --params, from the checked config) ---------------------------

def data_commands(cfg: dict, threads: int) -> list[tuple[str, list[str]]]:
    """The data stages as rules/data.smk runs them, for one difficulty part (what Snakemake
    would run is checked in tests/benchmarks/test_gpu_check.py)."""
    from isocompute.layout import StudyLayout

    L = StudyLayout(EXPERIMENT)

    def params(*sections, extra=None):
        return json.dumps({k: cfg[k] for k in ("seed", *sections)} | (extra or {}), sort_keys=True)

    return [
        ("pool", isocompute("pool", "--params", params("pool"), "--out", L.pool)),
        ("base_model", isocompute("base-model", "--params", params("pool", "base_model"), "--pool", L.pool,
                                  "--out", L.embedded_model)),
        ("difficulty", isocompute("difficulty", "--params", params("sampling", "difficulty"), "--pool", L.pool,
                                  "--model", L.embedded_model, "--part", "0", "--parts", "1",
                                  "--threads", str(threads), "--out", L.difficulty_part(0))),
        ("difficulty_merge", isocompute("difficulty-merge", "--params", params("difficulty"),
                                        "--pool", L.pool, "--parts", L.difficulty_part(0), "--out", L.difficulty)),
        ("splits", isocompute("splits", "--params", params("splits"), "--pool", L.pool,
                              "--difficulty", L.difficulty, "--out-dir", L.splits_dir)),
    ]


TRAIN_SAMPLING_KEYS = ("temperature", "top_p", "max_new_tokens", "batch_size")  # rules/common.smk


def train_params(cfg: dict, device: str, schedule: tuple[float, float]) -> dict:
    """The train rule's --params (isocompute.jobs.train_params: the node has no Snakemake to ask,
    and jobs imports the cluster tools) with train.device set; `schedule`: (min_compute, C_max)
    of the split's shared evaluation schedule."""
    return {"seed": cfg["seed"], "experiment": cfg["experiment"], "train": {**cfg["train"], "device": device},
            "sampling": {k: cfg["sampling"][k] for k in TRAIN_SAMPLING_KEYS},
            "eval": {"samples": cfg["eval"]["samples"], "extra_sets": []},
            "schedule": {"min_compute": float(schedule[0]), "C_max": float(schedule[1])},
            "grading": cfg["grading"]}


def train_command(cfg: dict, split: str, B_p: int, n: int, max_steps: int, run_dir: str, device: str,
                  threads: int, schedule: tuple[float, float]) -> list[str]:
    """The train rule's command for a local-backend cell on `device`, outside results/."""
    from isocompute.layout import StudyLayout

    files = StudyLayout(EXPERIMENT).split_files(split)
    params = json.dumps(train_params(cfg, device, schedule), sort_keys=True)
    return isocompute("train", "--params", params, "--split", split,
                      "--bp", str(B_p),
                      "--n", str(n), "--max-steps", str(max_steps), "--train-file", files["train"],
                      "--val-file", files["val"], "--replicate", "0", "--model", StudyLayout(EXPERIMENT).embedded_model,
                      "--run-dir", run_dir, "--threads", str(threads))


def embedded_grid() -> list[tuple[str, int, int, int, tuple[float, float]]]:
    """The embedded study's cells (config/config.yaml's grid), largest batch first, each with its
    split's schedule range (the smallest batch to C_max: train.eval_min_compute is not set there)."""
    import yaml

    grid = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["grid"]
    cells = [(split, bp, n, g["C_max"] // (bp * n), (min(g["B_p"]) * min(g["n"]), g["C_max"]))
             for split, g in grid.items() for bp in g["B_p"] for n in g["n"]
             if bp * n <= g["B_max"] and g["C_max"] // (bp * n) >= 1]
    return sorted(cells, key=lambda c: (-c[1] * c[2], c[0], c[1]))


# --- the run -----------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="gpu_check_local.json", help="the JSON of results (written from the start)")
    ap.add_argument("--work", default=None, help="scratch directory (default: a new temporary one)")
    ap.add_argument("--budget-s", type=float, default=840, help="wall-clock budget of all steps (default 14 min)")
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"],
                    help="auto: cuda when torch sees a GPU, else cpu (then CUDA rows are skipped)")
    ap.add_argument("--size", default="full", choices=sorted(SIZES), help="full: the node's; tiny: a CPU check")
    ap.add_argument("--wheels", default=str(REPO / "benchmarks" / "wheels"), help="folder of carried wheels")
    ap.add_argument("--threads", type=int, default=min(os.cpu_count() or 2, 8))
    ap.add_argument("--dry-run", action="store_true", help="write the plan (every command), run nothing")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    work = Path(args.work or tempfile.mkdtemp(prefix="gpu_check_local-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    size = SIZES[args.size]
    report = Report(out, part=1, dry_run=args.dry_run, size=args.size, work=str(work), budget_s=args.budget_s,
                    python=sys.version.split()[0], study=size["study"])   # the embedded study's config, as given
    site = work / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO / "src")]),
           "TOKENIZERS_PARALLELISM": "false"}
    sys.path[:0] = [str(site), str(REPO / "src")]
    steps = Steps(report, work, args.budget_s, args.dry_run, env)

    def on_signal(signum, _frame):
        if steps.child is not None:
            kill_group(steps.child)
        report.data["interrupted"] = {"signal": signal.Signals(signum).name,
                                      "during": (steps.current or {}).get("step")}
        report.write()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        run(steps, report, args, size, site, work)
    except Exception as exc:  # the JSON says what broke, whatever broke
        report.data["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}"
    report.data["finished"] = True
    report.data["failed"] = [r["step"] for r in report.data["steps"] if r.get("ok") is False]
    report.write()
    print(json.dumps(worker.summary(report.data), indent=1))
    return 1 if report.data["failed"] or "error" in report.data else 0


def run(steps: Steps, report: Report, args, size: dict, site: Path, work: Path) -> None:
    caps, threads = size["caps"], args.threads
    env_row = steps.command("env", worker_cmd("env", *MISSING_ON_NODE), caps["env"])
    steps.local("wheels", worker.unpack_missing, Path(args.wheels), site,
                [] if args.dry_run else (env_row.get("result") or {}).get("missing", MISSING_ON_NODE))
    cuda = (env_row.get("result") or {}).get("cuda", False)
    device = "cpu" if args.device == "cpu" or (args.device == "auto" and not cuda and not args.dry_run) else "cuda"
    report.data["device"] = device
    peak = steps.command("peak", worker_cmd("peak", device), caps["peak"]).get("result") or {}

    from isocompute.config import check_config

    cfg = check_config(json.loads(json.dumps(size["study"])))
    for name, argv in data_commands(cfg, threads):
        if steps.command(name, argv, caps[name]).get("ok") is False:
            break  # the later stages read this one's output; their rows say why they did not run
    model_dir = work / f"results/{EXPERIMENT}/model/base"
    params = {} if args.dry_run else worker.model_params(model_dir)

    devices = ["cuda", "cpu"] if device == "cuda" else ["cpu"]
    local_schedule = (min(B_p * n for _, B_p, n in size["cells"]), size["c_max"])
    for split, B_p, n in size["cells"]:
        steps_ = size["c_max"] // (B_p * n)
        rows = {}
        for dev in devices:
            run_dir = f"local/{dev}/bp{B_p}_n{n}"
            rows[dev] = steps.command(f"local/{dev}/{split}/bp{B_p}_n{n}",
                                      train_command(cfg, split, B_p, n, steps_, run_dir, dev, threads, local_schedule),
                                      caps["local"], device=dev)
            if rows[dev].get("ok") and not args.dry_run:
                rows[dev].update(worker.run_rates(work / run_dir, B_p, n, params, peak.get(dev, {}),
                                                  cfg["train"]["kl_coef"] > 0 and split in cfg["train"][
                                                      "regularized_splits"]))
                report.write()
        if "cuda" in rows and rows["cuda"].get("rollouts_per_s") and rows["cpu"].get("rollouts_per_s"):
            rows["cuda"]["cuda_over_cpu"] = round(rows["cuda"]["rollouts_per_s"] / rows["cpu"]["rollouts_per_s"], 2)
            report.write()
    if device == "cuda":
        for split, B_p, n in size["cells"]:
            steps.command(f"bf16/{split}/bp{B_p}_n{n}", worker_cmd("bf16", json.dumps(
                {"params": train_params(cfg, "cuda", local_schedule), "threads": threads,
                 "split": split, "B_p": B_p, "n": n, "model": str(model_dir),
                 "train_file": str(work / f"results/{EXPERIMENT}/splits/{split}/train.parquet"),
                 "val_file": str(work / f"results/{EXPERIMENT}/splits/{split}/val.parquet")})), caps["bf16"])
    else:
        report.add({"step": "bf16", "ok": None, "skipped": "no CUDA device"})

    for split, B_p, n, m_max, schedule in embedded_grid():
        if split not in cfg["splits"]["names"]:
            continue
        if not args.dry_run and steps.left() < 15:
            report.add({"step": f"study/{split}/bp{B_p}_n{n}", "ok": None, "skipped": "budget used up"})
            continue
        have = None if args.dry_run else worker.train_problems(work / f"results/{EXPERIMENT}/splits/{split}")
        if have is not None and have < B_p:
            report.add({"step": f"study/{split}/bp{B_p}_n{n}", "ok": None,
                        "skipped": f"{have} training problems, fewer than B_p = {B_p}"})
            continue
        run_dir = f"study/{split}/bp{B_p}_n{n}"
        row = steps.command(f"study/{split}/bp{B_p}_n{n}",
                            train_command(cfg, split, B_p, n, m_max, run_dir, device, threads, schedule), caps["study_cell"],
                            M_max=m_max)
        if not args.dry_run:
            row.update(worker.run_progress(work / run_dir, B_p, n))
            if str(row.get("error", "")).startswith("deadline"):  # as much as fits: cut, not failed
                row.update(ok=None, cut_at_deadline=True)
            report.write()


if __name__ == "__main__":
    sys.exit(main())
