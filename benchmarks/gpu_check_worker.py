"""Helpers of benchmarks/gpu_check_local.py (GPU check, part 1), stdlib-only at import, and
its worker: `python gpu_check_worker.py env|peak|bf16 ...` runs one measurement in its own
process (a CUDA fault kills the worker, not the check) and prints its result as the last
line of stdout, one JSON object."""

from __future__ import annotations

import importlib.util
import json
import struct
import sys
import time
import zipfile
from pathlib import Path


def last_json_line(stdout: str | None):
    for line in reversed((stdout or "").strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def summary(data: dict) -> dict:
    keys = ("step", "ok", "seconds", "error", "skipped", "rollouts_per_s", "cuda_over_cpu", "share_of_peak",
            "steps_done", "M_max", "bf16_speedup")
    return {"device": data.get("device"), "finished": data.get("finished"), "failed": data.get("failed"),
            "interrupted": data.get("interrupted"),
            "steps": [{k: (str(r[k])[:200] if k == "error" else r[k]) for k in keys if k in r} for r in data["steps"]]}


# --- carried wheels ----------------------------------------------------------------------

def _wheel_fits(name: str) -> bool:
    """A wheel this interpreter can import: pure Python, or built for its CPython on this
    machine's Linux architecture (name-version-pythontag-abitag-platformtag.whl)."""
    import platform

    py, abi, plat = name[:-4].split("-")[-3:]
    if abi == "none" and plat == "any":
        return True
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return (tag in py.split(".") or abi == "abi3") and sys.platform == "linux" and platform.machine() in plat


def _top_level(zf: zipfile.ZipFile) -> set[str]:
    names = {n.split("/")[0] for n in zf.namelist()}
    return {n.removesuffix(".py") for n in names if not n.endswith((".dist-info", ".data")) and
            not n.endswith((".pth",))}


def unpack_missing(wheels: Path, site: Path, missing: list[str]) -> dict:
    """Unpack every carried wheel whose packages this interpreter lacks into `site` (a folder
    on the steps' PYTHONPATH). A wheel is a zip: unpacking it is installing it without pip."""
    wanted = {"jsonschema", "math_verify"} & set(missing)
    out = {"wheels_dir": str(wheels), "unpacked": [], "present": [], "unfit": []}
    if not wanted:
        return {**out, "note": "nothing to unpack"}
    if not wheels.is_dir():
        raise FileNotFoundError(f"{wheels}: no carried wheels (benchmarks/gpu_check_wheels.sh builds them); "
                                f"missing: {sorted(wanted)}")
    site.mkdir(parents=True, exist_ok=True)
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as zf:
            tops = _top_level(zf)
            if all(importlib.util.find_spec(t) is not None for t in tops if t.isidentifier()):
                out["present"].append(whl.name)
                continue
            if not _wheel_fits(whl.name):
                out["unfit"].append(whl.name)
                continue
            zf.extractall(site)
            out["unpacked"].append(whl.name)
    importlib.invalidate_caches()
    sys.path.insert(0, str(site)) if str(site) not in sys.path else None
    still = [m for m in sorted(wanted) if importlib.util.find_spec(m) is None]
    if still:
        raise ModuleNotFoundError(f"still missing after unpacking: {still} ({out})")
    return out


# --- runs' files ---------------------------------------------------------------------------

def model_params(model_dir: Path) -> dict:
    """Parameter counts from the safetensors header (no torch): total and without embeddings."""
    total = embed = 0
    for f in model_dir.glob("*.safetensors"):
        with f.open("rb") as fh:
            header = json.loads(fh.read(struct.unpack("<Q", fh.read(8))[0]))
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            count = 1
            for d in meta["shape"]:
                count *= d
            total += count
            embed += count if "embed_tokens" in name else 0
    return {"total": total, "non_embedding": total - embed}


def _metrics(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def run_rates(run_dir: Path, B_p: int, n: int, params: dict, peak: dict, regularised: bool) -> dict:
    """Rollouts/s of a finished run and the share of the measured matmul peak its model FLOPs reach.

    Model FLOPs per generated token: 2N for sampling, 6N for the update's forward and backward,
    2N more for the frozen reference model's forward on regularised splits (N: parameters
    without the embedding). Prompt tokens and attention are left out: a lower bound.
    """
    rows = [r for r in _metrics(run_dir) if r["step"] > 0]
    if not rows:
        return {"error_rates": "no metrics.jsonl rows"}
    train_s = sum(r["data"].get("timing_s/step", 0.0) for r in rows)
    tokens = rows[-1]["data"].get("perf/tokens_generated_cumulative", 0)
    out = {"steps_done": rows[-1]["step"], "rollouts": len(rows) * B_p * n, "train_s": round(train_s, 2),
           "wall_s": round(rows[-1]["data"].get("time/wall_s", 0.0), 2), "tokens": tokens,
           "rollouts_per_s": round(len(rows) * B_p * n / train_s, 1) if train_s else None}
    N = params.get("non_embedding")
    if N and train_s:
        flops = (2 + 6 + (2 if regularised else 0)) * N * tokens
        out["model_tflops_per_s"] = round(flops / train_s / 1e12, 6)
        for dtype, tflops in peak.items():
            out.setdefault("share_of_peak", {})[dtype] = round(out["model_tflops_per_s"] / tflops, 8)
    return out


def train_problems(split_dir: Path) -> int | None:
    """Rows of a split's train.parquet (None when it cannot be read: the step's row says why)."""
    try:
        import pyarrow.parquet as pq

        return pq.ParquetFile(split_dir / "train.parquet").metadata.num_rows
    except Exception:
        return None


def run_progress(run_dir: Path, B_p: int, n: int) -> dict:
    rows = _metrics(run_dir)
    vals = [(r["step"], r["data"]["val/score/mean"]) for r in rows if "val/score/mean" in r["data"]]
    return {"steps_done": rows[-1]["step"] if rows else 0, "rollouts": (rows[-1]["step"] if rows else 0) * B_p * n,
            "wall_s": round(rows[-1]["data"].get("time/wall_s", 0.0), 2) if rows else None,
            "val_first_last": [vals[0], vals[-1]] if vals else None}


# --- worker commands ---------------------------------------------------------------------

def cmd_env(names: list[str]) -> dict:
    out = {"python": sys.version.split()[0], "executable": sys.executable,
           "missing": [m for m in names if importlib.util.find_spec(m) is None]}
    import importlib.metadata as md

    for dist in ("torch", "transformers", "numpy", "pandas", "pyarrow", "scipy", "seaborn", "tqdm", "PyYAML",
                 "jinja2", "tokenizers", "safetensors"):
        try:
            out.setdefault("versions", {})[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out.setdefault("versions", {})[dist] = None
    import torch

    out["cuda"] = torch.cuda.is_available()
    if out["cuda"]:
        p = torch.cuda.get_device_properties(0)
        out["gpu"] = {"name": p.name, "memory_gib": round(p.total_memory / 2**30, 1),
                      "capability": f"{p.major}.{p.minor}", "count": torch.cuda.device_count(),
                      "torch_cuda": torch.version.cuda}
    out["cpu_threads"] = torch.get_num_threads()
    return out


def cmd_peak(device: str) -> dict:
    """TFLOP/s of a square matmul loop, per dtype, at torch's default precision (fp32 is
    IEEE fp32, as the local backend trains; TF32 is off unless a user turns it on)."""
    import torch

    out = {}
    plan = ([("fp32", torch.float32, 8192), ("bf16", torch.bfloat16, 8192)] if device == "cuda"
            else [("fp32", torch.float32, 1024)])
    for name, dtype, size in plan:
        a = torch.randn(size, size, device=device, dtype=dtype)
        b = torch.randn(size, size, device=device, dtype=dtype)
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        for _ in range(3):
            a @ b
        sync()
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < 2.0:
            for _ in range(10):
                a @ b
            reps += 10
            sync()
        seconds = time.perf_counter() - start
        out[name] = round(2 * size**3 * reps / seconds / 1e12, 3)
    return {device: out}


def cmd_bf16(spec: dict) -> dict:
    """k = 3 steps of a cell on CUDA in fp32, then 3 under bf16 autocast, from the same start.

    Each mode runs twice and the second counts: the first run of a mode pays its warm-up
    (CUDA context, cuBLAS's first kernels of that dtype). On an H200 (2026-12-04) a single,
    cold bf16 pass read 0.016-0.07x of fp32: a warm-up, not a speed (docs/gpu_check.md)."""
    import torch

    from isocompute.cli.common import config_from_params
    from isocompute.data.schema import read_problems
    from isocompute.grid import Cell
    from isocompute.model.io import load_policy
    from isocompute.train.backends.local import LocalGRPO, Problems

    cfg = config_from_params(json.dumps(spec["params"]))
    cell = Cell(spec["split"], spec["B_p"], spec["n"], 3, 3 * spec["B_p"] * spec["n"])
    out = {}
    for mode in ("fp32", "bf16", "fp32", "bf16"):  # the later run of each mode counts
        model, tok = load_policy(spec["model"], device="cuda")
        train = Problems.from_frame(read_problems(spec["train_file"]), tok)
        val = Problems.from_frame(read_problems(spec["val_file"]), tok)
        trainer = LocalGRPO(cfg, cell, model, tok, train, val)
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode == "bf16"):
            for step in (1, 2, 3):
                trainer.step(step)
        torch.cuda.synchronize()
        out[mode] = round(3 * cell.B_p * cell.n / (time.perf_counter() - start), 1)
    return {"rollouts_per_s": out, "bf16_speedup": round(out["bf16"] / out["fp32"], 3)}


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    result = {"env": lambda: cmd_env(rest), "peak": lambda: cmd_peak(rest[0]),
              "bf16": lambda: cmd_bf16(json.loads(rest[0]))}[command]()
    print(json.dumps(result), flush=True)
