"""Do the two backends agree? One tiny Easy cell, the same recipe, trained by the local
backend (plain PyTorch) and by verl 0.9.1's own trainer on the CPU (train.backend verl,
train.device cpu), each through `isocompute train` with the params the train rule gives
it (isocompute.jobs.train_params), on the same base model, training file and
validation file:

  (2) step-0 validation avg@4: the base model before any update, on the same problems;
      the backends sample independently, so they agree if the difference is within its
      standard error (paired over the shared problems: what is left is sampling noise;
      eval.samples = 16 per problem by default, avg@4 being the mean 0/1 score);
  (3) per-step training reward (critic/score/mean, both backends' name for the mean
      0/1 reward of a step's B_p x n rollouts) over a few steps: within noise, judged
      against the spread of the local backend over two seeds (local vs local is what
      "noise" means here);
  (4) the recipe's learning-rate schedule (train.recipe.warmup_lr, warm-up WARMUP steps):
      the learning rate of the first updates, from each backend's `actor/lr` (the local
      backend logs the rate of the step's own update; verl logs the rate its scheduler
      holds after the step, engine_workers.train_batch -> lr_scheduler_step, i.e. the
      next update's), must equal the recipe's; and the step-1 update must move the
      policy: `isocompute/ref_probs_diff_mean` (mean |p_policy - p_base| on the step's
      sampled tokens, both backends) is 0 at step 1 and, at step 2, above
      MOVED_MIN and MOVED_FACTOR times step 1's. A failed (4) exits 1.

The loss terms on one fixed batch (item 1) are isocompute.train.backends.verl.loss_parity's,
which tests/train/test_backends_agree_loss.py holds within its TOL; this script prints their max
abs differences too.

Why the backends cannot agree sample by sample: they draw different random numbers (the
local backend samples a whole batch with torch's generator; the verl path's HF rollout
server samples one request at a time with its own generator, seeded from
rollout.seed), and verl's dataloader draws a step's problems in its own order (its
sampler seeded from data.seed), so step t trains on other problems. Only distributions
can agree.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_backends_agree.py [--study DIR] [--out runs.json] [--quick]

--study reuses a study folder that has the e2e test's data (results/tinyverl/: the
base model and the Easy split; e.g. the basetemp of tests/pipeline/test_pipeline_verl_cpu.py);
without it, the tiny study's data stages are built first (about a minute). One verl
session (about 3-4 minutes on 2 cores) and two local runs (seconds each).

--quick: the same runs at the smallest sizes (B_p = 2, n = 2, 2 steps, 8 validation
problems x 4 samples; about 5 minutes on 2 busy cores with the data stages, the verl
session most of it): what `make test` runs (tests/benchmarks/test_benchmarks.py, a slow test).
Its numbers are too few to tell the backends apart by reward; it shows the comparison still
runs, and (4), which needs no statistics, is decided there too.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "config" / "tiny.yaml"   # the tiny study, as the test suite builds its data (reused with --study)

# What it starts besides plain PyTorch: the test suite's run_benchmark (tests/support/) reads this line, and
# runs the benchmark only in a test marked engine (require_engine).
STARTS_ENGINES = "verl's trainer and Ray"
EXPERIMENT = "tinyverl"  # the e2e test's (tests/pipeline/test_pipeline_verl_cpu.py), so its data can be reused
QUICK = {"bp": 2, "n": 2, "steps": 2, "val_problems": 8, "samples": 4}
FULL = {"bp": 4, "n": 8, "steps": 4, "val_problems": 64, "samples": 16}
# Warm-up over the first 3 updates: the compared steps are on the ramp (lr/3, 2lr/3, lr), where a
# schedule indexed from 0 (update 1 at lr 0) differs at every step.
WARMUP = 3
# Update 1 moved the policy when step 2's |p_policy - p_base| exceeds both: float32 rounding of
# probabilities is ~1e-7, an update of lr / 3 ~ 2e-4 moves them by ~1e-4 on this model.
MOVED_MIN, MOVED_FACTOR = 1e-6, 10
LR_RTOL = 1e-6
REF_DIFF = "isocompute/ref_probs_diff_mean"
VERL_CLUSTER = {"train": {"gpus": 1, "cpus_per_gpu": 8},
                "verl": {"storage_units": 1, "max_prompt_length": 64, "max_token_len_per_gpu": 512}}


def study_config(B_p: int, n: int, steps: int, backend: str, seed: int = 0, samples: int = 4) -> dict:
    import yaml

    from isocompute.train.recipe import MIN_EVALUATIONS

    # Only step 0 is compared, but a run must validate at MIN_EVALUATIONS steps at least.
    interval = max(1, steps // (MIN_EVALUATIONS - 1))

    return {
        **yaml.safe_load(TINY.read_text()), "experiment": EXPERIMENT, "seed": seed,
        "grid": {"easy": {"B_p": [B_p], "n": [n], "B_max": B_p * n, "C_max": B_p * n * steps}},
        "train": {"backend": backend, "device": "cpu", "max_response_length": 16, "lr_base": 1e-3, "B_ref": 8,
                  "warmup_steps": WARMUP, "probe_problems": 0, "eval_schedule": "steps", "eval_interval": interval},
        "eval": {"k": 4, "samples": samples},
        "cluster": VERL_CLUSTER,
    }


def build_data(work: Path, timeout: float) -> None:
    """The tiny study's data stages (pool, base model, difficulty, splits) in `work`, by Snakemake
    (a study folder: the repo's config/ and workflow/, the config in config/test.yaml)."""
    import shutil

    import yaml

    if not (work / "config").is_dir():
        for folder in ("config", "workflow"):
            shutil.copytree(REPO / folder, work / folder)
    cfg = work / "config" / "test.yaml"
    cfg.write_text(yaml.safe_dump(study_config(2, 2, 4, "local"), sort_keys=False))
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    run_bounded([str(bin_dir / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
                 f"results/{EXPERIMENT}/splits/easy/train.parquet", f"results/{EXPERIMENT}/splits/easy/val.parquet",
                 "--cores", "2", "--configfile", str(cfg)], work / "data_stages.log", timeout, env)


def eval_file(work: Path, out: Path, problems: int) -> int:
    """The validation file of both backends: the Easy split's validation problems, then its
    training problems, up to `problems` (step 0 is the base model: which split a problem
    came from does not matter; more problems, a smaller standard error)."""
    import pandas as pd

    splits = work / "results" / EXPERIMENT / "splits" / "easy"
    df = pd.concat([pd.read_parquet(splits / "val.parquet"), pd.read_parquet(splits / "train.parquet")])
    df = df.head(problems).reset_index(drop=True)
    df.to_parquet(out)
    return len(df)


def run_bounded(cmd: list[str], log: Path, timeout: float, env: dict) -> float:
    """Run `cmd` in its own process group (verl's Ray processes included), killed past `timeout`."""
    t0 = time.time()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RuntimeError(f"{cmd[:3]} killed after {timeout:.0f} s; log: {log}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed ({proc.returncode}); log: {log}")
    return time.time() - t0


def train(work: Path, out: Path, backend: str, seed: int, B_p: int, n: int, steps: int, val_file: Path,
          timeout: float, samples: int) -> dict:
    """One run through `isocompute train` with the train rule's params; its dumps and metrics."""
    from isocompute import jobs
    from isocompute.config import check_config
    from isocompute.grid import grid_cells
    from isocompute.train.recipe import cell_recipe

    cfg = check_config(json.loads(json.dumps(study_config(B_p, n, steps, backend, seed, samples))))
    (cell,) = grid_cells(cfg)
    run_dir = out / f"{backend}_s{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    results = work / "results" / EXPERIMENT
    argv = [sys.executable, "-c", "import sys; from isocompute.cli import main; sys.exit(main())", "train", "--params", jobs.as_json(jobs.train_params(cfg, cell)),
            *jobs.train_args(cell).split(), "--train-file", str(results / "splits/easy/train.parquet"),
            "--val-file", str(val_file), "--model", str(results / "model/base"), "--run-dir", str(run_dir),
            "--threads", "2"]
    if backend == "verl":
        options = out / "train_options.json"
        options.write_text(jobs.as_json(jobs.train_options(cfg)))
        argv += ["--options", str(options)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    wall = run_bounded(argv, out / f"{backend}_s{seed}.log", timeout, env)
    metrics = {int(r["step"]): r["data"] for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())}
    rewards = [metrics[s]["critic/score/mean"] for s in range(1, steps + 1)]
    recipe = cell_recipe(cfg, cell)
    return {"backend": backend, "seed": seed, "wall_s": wall, "rewards": rewards, "B": B_p * n,
            "step0": avg_at_k(run_dir / "generations" / "0.jsonl"),
            "logged_lr": [metrics[s].get("actor/lr") for s in range(1, steps + 1)],
            "recipe_lr": [recipe.lr_at(k) for k in range(1, steps + 2)],
            "ref_diff": [metrics[s].get(REF_DIFF) for s in range(1, steps + 1)]}


def avg_at_k(dump: Path) -> dict:
    """avg@4 of a validation dump (the mean 0/1 score: with k <= samples per problem, the unbiased
    avg@k is the mean over samples), its standard error over problems, and the per-problem means."""
    per_problem: dict[str, list[float]] = {}
    for line in dump.read_text().splitlines():
        r = json.loads(line)
        per_problem.setdefault(r["input"], []).append(float(r["score"]))
    means = [sum(v) / len(v) for v in per_problem.values()]
    m = sum(means) / len(means)
    sd = math.sqrt(sum((x - m) ** 2 for x in means) / (len(means) - 1)) if len(means) > 1 else float("nan")
    return {"avg": m, "se": sd / math.sqrt(len(means)), "problems": len(means),
            "samples": sum(len(v) for v in per_problem.values()),
            "per_problem": {k: sum(v) / len(v) for k, v in per_problem.items()}}


def paired(a: dict, b: dict) -> tuple[float, float]:
    """b - a over the problems both evaluated, and its standard error (paired over problems:
    what is left is the two backends' independent sampling)."""
    keys = sorted(set(a["per_problem"]) & set(b["per_problem"]))
    d = [b["per_problem"][k] - a["per_problem"][k] for k in keys]
    m = sum(d) / len(d)
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1)) if len(d) > 1 else float("nan")
    return m, sd / math.sqrt(len(d))


def z_score(diff: float, se: float) -> float:
    """diff / se; NaN when se is 0 (both runs scored every problem alike: nothing to scale by)."""
    return diff / se if se > 0 else float("nan")


def update_lrs(run: dict) -> dict[int, float]:
    """{update: learning rate} as the run logged it: the local backend's `actor/lr` at step k is
    update k's; verl's is update k + 1's (the rate after its scheduler stepped)."""
    shift = 1 if run["backend"] == "verl" else 0
    return {k + 1 + shift: lr for k, lr in enumerate(run["logged_lr"]) if lr is not None}


def schedule_check(run: dict) -> dict:
    """(4) for one run: the logged learning rates against the recipe's, and whether update 1
    moved the policy (step 2's REF_DIFF against step 1's)."""
    got = update_lrs(run)
    want = {k: run["recipe_lr"][k - 1] for k in got}
    lr_ok = bool(got) and all(abs(got[k] - want[k]) <= LR_RTOL * max(want[k], 1e-30) for k in got)
    diff = run["ref_diff"]
    moved = (len(diff) >= 2 and None not in diff[:2]
             and diff[1] > max(MOVED_MIN, MOVED_FACTOR * diff[0]))
    return {"update_lr": got, "recipe_lr": want, "lr_ok": lr_ok, "ref_diff_steps_1_2": diff[:2],
            "update_1_moved": bool(moved), "ok": lr_ok and bool(moved)}


def schedule_lines(runs: list[dict], checks: list[dict]) -> list[str]:
    lines = [f"(4) learning rate of the first updates (warm-up {WARMUP}; peak {runs[0]['recipe_lr'][-1]:.3g}) and "
             "the step-1 update (|p_policy - p_base| at steps 1, 2):"]
    for r, c in zip(runs, checks):
        lrs = "  ".join(f"u{k} {v:.3g} (recipe {c['recipe_lr'][k]:.3g})" for k, v in c["update_lr"].items())
        d1, d2 = [f"{x:.1e}" if x is not None else "-" for x in (c["ref_diff_steps_1_2"] + [None, None])[:2]]
        lines.append(f"    {r['backend']}_s{r['seed']}: {lrs}; moved {d1} -> {d2}: "
                     f"{'ok' if c['ok'] else 'FAIL'}"
                     + ("" if c["lr_ok"] else " (learning rate differs from the recipe)")
                     + ("" if c["update_1_moved"] else " (update 1 did not move the policy)"))
    return lines


def loss_diffs() -> dict:
    from isocompute.train.backends.verl.loss_parity import TOL, max_abs_diffs

    out = {}
    for agg in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum"):
        d = max_abs_diffs(agg)
        d.pop("_values")
        out[agg] = d
    return {"tolerance": TOL, "max_abs_diff": out}


def report(runs: list[dict], losses: dict, checks: list[dict]) -> str:
    lines = ["(1) loss terms on one fixed batch, max |local - verl| (tolerance %g):" % losses["tolerance"]]
    for agg, d in losses["max_abs_diff"].items():
        lines.append(f"    {agg:20s} " + "  ".join(f"{k} {v:.1e}" for k, v in d.items()))
    lines.append("(2) step-0 validation avg@4 (base model):")
    for r in runs:
        s = r["step0"]
        lines.append(f"    {r['backend']:5s} seed {r['seed']}: {s['avg']:.3f} +- {s['se']:.3f} "
                     f"({s['problems']} problems x {s['samples'] // s['problems']} samples)")
    local = [r for r in runs if r["backend"] == "local"]
    verl = [r for r in runs if r["backend"] == "verl"]
    for other in local[1:] + verl:
        diff, se = paired(local[0]["step0"], other["step0"])
        lines.append(f"    {other['backend']}_s{other['seed']} - local_s{local[0]['seed']}: {diff:+.3f}, paired se "
                     f"{se:.3f}, z = {z_score(diff, se):+.2f}")
    steps = len(runs[0]["rewards"])
    B = runs[0]["B"]
    lines.append(f"(3) training reward per step (mean of {B} rollouts; binomial se of one step "
                 "~ sqrt(p(1-p)/B)):")
    lines.append("    step  " + "  ".join(f"{r['backend']}_s{r['seed']:<3d}" for r in runs))
    for t in range(steps):
        lines.append(f"    {t + 1:4d}  " + "  ".join(f"{r['rewards'][t]:9.3f}" for r in runs))
    means = {f"{r['backend']}_s{r['seed']}": sum(r["rewards"]) / steps for r in runs}
    lines.append("    mean  " + "  ".join(f"{m:9.3f}" for m in means.values()))
    p = sum(means.values()) / len(means)
    se_mean = math.sqrt(max(p * (1 - p), 1e-9) / (B * steps))
    spread = max(means[f"local_s{r['seed']}"] for r in local) - min(means[f"local_s{r['seed']}"] for r in local)
    lines.append(f"    se of a run's mean reward over {steps} steps ~ {se_mean:.3f} (binomial, rollouts "
                 f"independent); the local seeds' means span {spread:.3f}")
    for v in verl:
        d = means[f"verl_s{v['seed']}"] - sum(means[f"local_s{r['seed']}"] for r in local) / len(local)
        lines.append(f"    verl - mean(local): {d:+.3f} (z = {d / (se_mean * math.sqrt(1 + 1 / len(local))):+.2f})")
    lines += schedule_lines(runs, checks)
    lines.append("    wall: " + ", ".join(f"{r['backend']}_s{r['seed']} {r['wall_s']:.0f} s" for r in runs))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--study", type=Path, default=None, help="a study folder with the e2e test's data (results/tinyverl)")
    p.add_argument("--work", type=Path, default=Path("/tmp/isocompute_bench_backends_agree"))
    p.add_argument("--bp", type=int, default=None, help=f"B_p (default: {FULL['bp']})")
    p.add_argument("--n", type=int, default=None, help=f"n (default: {FULL['n']})")
    p.add_argument("--steps", type=int, default=None, help=f"training steps (default: {FULL['steps']})")
    p.add_argument("--val-problems", type=int, default=None, help=f"default: {FULL['val_problems']}")
    p.add_argument("--samples", type=int, default=None,
                   help=f"validation samples per problem (eval.samples; default: {FULL['samples']})")
    p.add_argument("--quick", action="store_true",
                   help="the sizes of QUICK where not given: " + ", ".join(f"{k} {v}" for k, v in QUICK.items()))
    p.add_argument("--local-seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--verl-seeds", type=int, nargs="+", default=[0])
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per run (verl: its whole process group)")
    p.add_argument("--out", type=Path, default=None, help="JSON of every number")
    args = p.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)

    work = (args.study or args.work / "study").resolve()
    if not (work / "results" / EXPERIMENT / "splits" / "easy" / "train.parquet").is_file():
        build_data(work, args.timeout)
    out = (args.work / "runs").resolve()
    out.mkdir(parents=True, exist_ok=True)
    val = out / "val.parquet"
    eval_file(work, val, args.val_problems)
    runs = [train(work, out, "local", s, args.bp, args.n, args.steps, val, args.timeout, args.samples)
            for s in args.local_seeds]
    runs += [train(work, out, "verl", s, args.bp, args.n, args.steps, val, args.timeout, args.samples)
             for s in args.verl_seeds]
    losses = loss_diffs()
    checks = [schedule_check(r) for r in runs]
    print(report(runs, losses, checks))
    if args.out:
        args.out.write_text(json.dumps({"runs": runs, "losses": losses, "schedule": checks}, indent=2))
    return 0 if all(c["ok"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
