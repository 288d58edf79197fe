"""Where a local training step's time goes, against the matrix-product peak of the same
machine in the same run: the ceiling a step made of the model's products could reach.

For each finished run given (its run.json: params, data, base model, cell), a trainer is
rebuilt as `isocompute train` builds it, on one thread as the rules run it, and after
--warm-up steps it times --steps more:

  ms/step        wall time of a step, split as the run's metrics split it (sampling,
                 grading, update)
  GFLOP/step     every product and attention of one step (torch's FlopCounterMode):
                 sampling, the KL anchor's forward, the policy's forward and backward
  GFLOP/s        what the step reaches, and its share of the peak below
  peak           torch.mm on one thread at the model's own products ([B*T, d] x [d, f]), best of 20

The grader starts its sandbox worker at its first slow-path verdict (~0.6 s), which a
short window counts in full: over a whole replication run grading is ~1% of the step.

With --ops, torch's profiler adds the 12 operators with the most self time. A step far
below the peak is bound by per-operator overhead and memory-bound element-wise work, not
by arithmetic.

    PYTHONPATH=src python benchmarks/bench_step.py results/replicate/runs/easy/bp16_n2_s3 \\
        results/replicate/runs/easy/bp16_n16_s3 [--steps 100] [--ops]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def trainer_of(run_dir: Path, scratch: Path):
    """A fresh trainer of the run's cell, from its base model (the run itself is not touched)."""
    from isocompute.cli.common import config_from_params
    from isocompute.grid import Cell
    from isocompute.layout import RunPaths
    from isocompute.train.backends.local.trainer import _local_trainer

    run = json.loads((run_dir / "run.json").read_text())
    cfg = config_from_params(json.dumps(run["config"]))
    cell = Cell(run["split"], run["B_p"], run["n"], run["M_max"], int(cfg["schedule"]["C_max"]), run["replicate"],
                run.get("variant", ""))
    paths = RunPaths(scratch, Path(run["train_file"]), Path(run["val_file"]), run["model"], ())
    return _local_trainer(cfg, cell, paths)[0], run


def matmul_peak(d: int, f: int, rows: int) -> float:
    """GFLOP/s of torch.mm on [rows, d] x [d, f] and [rows, f] x [f, d], best of both
    (bench_grpo_vs_trl.matmul_gflops: best of 20 repeats, per wall-second)."""
    from bench_grpo_vs_trl import matmul_gflops

    return max(matmul_gflops(shape=(rows, d, f))[0], matmul_gflops(shape=(rows, f, d))[0])


def measure(run_dir: Path, steps: int, warm_up: int, ops: bool) -> dict:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with tempfile.TemporaryDirectory() as scratch:
        trainer, run = trainer_of(run_dir, Path(scratch))
        for step in range(1, warm_up + 1):
            trainer.step(step)
        counter = FlopCounterMode(display=False)
        with counter:
            trainer.step(warm_up + 1)
        first = warm_up + 2
        shares = {"gen": 0.0, "reward": 0.0, "update": 0.0}
        start = time.perf_counter()
        for step in range(first, first + steps):
            metrics, _ = trainer.step(step)
            for key in shares:
                shares[key] += metrics[f"timing_s/{key}"]
        seconds = (time.perf_counter() - start) / steps
        table = None
        if ops:
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for step in range(first + steps, first + steps + min(steps, 20)):
                    trainer.step(step)
            table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
        config = trainer.model.config
    flops = counter.get_total_flops()
    rows = run["B_p"] * run["n"] * 24  # ~ prompt + answer tokens of a step's rollouts
    return {"run": run_dir.name, "B": run["B_p"] * run["n"], "ms_per_step": 1000 * seconds,
            **{f"{k}_share": v / steps / seconds for k, v in shares.items()},
            "gflop_per_step": flops / 1e9, "gflop_per_s": flops / seconds / 1e9,
            "peak_gflop_per_s": matmul_peak(config.hidden_size, config.intermediate_size, rows), "ops": table}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="finished local-backend run folders (with run.json)")
    ap.add_argument("--steps", type=int, default=100, help="timed steps per run (default 100)")
    ap.add_argument("--warm-up", type=int, default=10, help="untimed steps first (default 10)")
    ap.add_argument("--ops", action="store_true", help="also print the profiler's 12 costliest operators")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # as the rules run a local job (--threads 1 on a 2-core machine)
    print(f"{'run':<16}{'B':>5}{'ms/step':>10}{'sampling':>10}{'grading':>9}{'update':>8}"
          f"{'GFLOP/step':>12}{'GFLOP/s':>9}{'peak':>8}{'share':>7}")
    for run_dir in args.runs:
        if not (run_dir / "run.json").is_file():
            ap.error(f"{run_dir}: no run.json (a finished run of the local backend is expected)")
        r = measure(run_dir, args.steps, args.warm_up, args.ops)
        print(f"{r['run']:<16}{r['B']:>5}{r['ms_per_step']:>10.1f}{r['gen_share']:>10.1%}{r['reward_share']:>9.1%}"
              f"{r['update_share']:>8.1%}{r['gflop_per_step']:>12.3f}{r['gflop_per_s']:>9.1f}"
              f"{r['peak_gflop_per_s']:>8.1f}{r['gflop_per_s'] / r['peak_gflop_per_s']:>7.1%}", flush=True)
        if r["ops"]:
            print(r["ops"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
