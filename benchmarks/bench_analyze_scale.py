"""How `isocompute analyze` scales with the rows of its evaluation table.

A study with seeds and a dense evaluation schedule (several seeds of every cell
of 4 B_p x 8 n, each run validated at a few hundred to a few thousand
compute-matched points, binomial noise from 100 problems x 4 samples) reaches
10^5 to 10^6 rows. This writes such a table (`scale_study`, in
isocompute.analysis.fits.synthetic) as parquet at each asked size and runs the command
line's code path (`isocompute analyze TABLE --params ... --no-figures`, the
analyze rule's invocation with the default config) in a fresh interpreter per
size, reading its wall time and peak RSS (`resource.getrusage` of the child).
With `--before SRC` each size is also run with another checkout's src/ (the
code before a change) and the tables of the two are compared, byte for byte
(every file but timings.csv).

    .venv/bin/python benchmarks/bench_analyze_scale.py [--rows 1e4 1e5 1e6] [--before /path/to/src]
        [--bootstrap N] [--keep DIR] [--quick]

--quick: one table of about 2,000 rows, 20 bootstrap resamples (seconds).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
QUICK = {"rows": [2e3], "bootstrap": 20}


def analyze_params(bootstrap: int) -> str:
    """The analyze rule's --params with the schema's defaults (config/config.yaml's analysis
    section), `bootstrap` resamples."""
    from isocompute import jobs
    from isocompute.config import check_config

    cfg = check_config({})
    cfg["analysis"]["bootstrap"] = bootstrap
    return jobs.as_json(jobs.analysis_params(cfg))


# The child: run analyze by the CLI's own entry point, then report its peak RSS (KiB on Linux).
_CHILD = """
import json, resource, sys, time
from isocompute.cli import main
start = time.perf_counter()
rc = main(sys.argv[1:])
wall = time.perf_counter() - start
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"rc": rc, "wall_s": wall, "cpu_s": use.ru_utime + use.ru_stime,
                  "peak_rss_mb": use.ru_maxrss / 1024}), file=sys.stderr)
"""


def run_analyze(src: Path, table: Path, out: Path, params: str, timeout: float | None = None) -> dict:
    """Wall time, CPU time and peak RSS of `isocompute analyze` with `src` on the import path (on a
    shared machine the CPU time is the steadier of the two times)."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    cmd = [sys.executable, "-c", _CHILD, "analyze", str(table), "--params", params, "--no-figures", "--out", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    try:
        result = json.loads(last)
    except ValueError:
        result = {"rc": proc.returncode, "wall_s": wall, "cpu_s": float("nan"), "peak_rss_mb": float("nan")}
    if proc.returncode != 0 or result["rc"] != 0:
        raise SystemExit(f"isocompute analyze ({src}) failed on {table}:\n{proc.stderr[-3000:]}")
    result["process_wall_s"] = wall
    return result


def same_tables(a: Path, b: Path) -> list[str]:
    """Files that differ between two analyze folders: timings.csv left out, and MANIFEST.json
    compared without its entry for timings.csv (the one file that differs run to run)."""
    def manifest(path: Path):
        if not path.is_file():
            return None
        files = json.loads(path.read_text())
        files.get("files", {}).pop("timings.csv", None)
        return files

    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ = []
    for name in names:
        if name == "timings.csv":
            continue
        if name == "MANIFEST.json":
            same = manifest(a / name) == manifest(b / name)
        else:
            same = (a / name).is_file() and (b / name).is_file() and filecmp.cmp(a / name, b / name, shallow=False)
        if not same:
            differ.append(name)
    return differ


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=float, nargs="+", default=None, help="table sizes (default: 1e4 1e5)")
    parser.add_argument("--before", type=Path, default=None,
                        help="src/ of the code before a change: run it too and compare the tables")
    parser.add_argument("--bootstrap", type=int, default=None, help="bootstrap resamples (default: 200)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the tables and outputs in this folder")
    parser.add_argument("--quick", action="store_true", help="one table of about 2,000 rows, 20 resamples")
    args = parser.parse_args(argv)
    rows = args.rows or (QUICK["rows"] if args.quick else [1e4, 1e5])
    bootstrap = args.bootstrap if args.bootstrap is not None else QUICK["bootstrap"] if args.quick else 200
    sys.path.insert(0, str(SRC))
    from isocompute.analysis.fits.synthetic import scale_study, scale_study_shape

    params = analyze_params(bootstrap)

    work = Path(tempfile.mkdtemp(prefix="bench_analyze_scale_")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        print(f"{'rows':>9} {'runs':>5} {'seeds':>5} {'code':<7} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}  tables")
        for size in rows:
            evals = scale_study(size)
            table = work / f"evals_{int(size)}.parquet"
            evals.to_parquet(table, index=False)
            runs = evals.groupby(["B_p", "n", "seed"]).ngroups
            seeds = scale_study_shape(size)["seeds"]
            codes = [("after", SRC)] + ([("before", args.before)] if args.before else [])
            outs = {}
            for name, src in codes:
                outs[name] = work / f"analysis_{int(size)}_{name}"
                res = run_analyze(src, table, outs[name], params)
                verdict = ""
                if name == "before":
                    diff = same_tables(outs["after"], outs["before"])
                    verdict = "identical" if not diff else "DIFFER: " + ", ".join(diff)
                print(f"{len(evals):>9} {runs:>5} {seeds:>5} {name:<7} {res['wall_s']:>8.1f} {res['cpu_s']:>8.1f} "
                      f"{res['peak_rss_mb']:>12.0f}  {verdict}", flush=True)
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
