"""Benchmark of the analysis chain at paper scale: 60 runs x 200 evaluation points.

Writes a synthetic evaluation table to CSV, then runs `isocompute analyze`
through the command-line code path (CSV -> all tables and figures, default
settings: 200 bootstrap resamples, 100 grid points) and prints the time per
phase. Target: under 10 s wall-clock on the 2-core development machine.

    .venv/bin/python benchmarks/bench_analysis.py [--bootstrap N] [--blas-threads N|auto] [--keep DIR] [--quick]

--quick runs the same chain on 2 B_p x 4 n runs of 30 points with 10 bootstrap
resamples (seconds; what `make test` runs, in tests/benchmarks/test_benchmarks.py), and
judges no target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 10.0
B_PS = (32, 64, 128, 256, 512, 1024)
NS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
QUICK = {"B_ps": B_PS[:2], "ns": NS[:4], "points": 30, "bootstrap": 10}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blas-threads", default="auto",
                        help="set OPENBLAS_NUM_THREADS for the run (default: auto, leave the environment "
                             "as it is)")
    parser.add_argument("--bootstrap", type=int, default=None, help="bootstrap resamples (default: 200)")
    parser.add_argument("--points", type=int, default=None, help="evaluation points per run (default: 200)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the table and outputs in this folder")
    parser.add_argument("--quick", action="store_true",
                        help=f"{len(QUICK['B_ps'])} B_p x {len(QUICK['ns'])} n, {QUICK['points']} points, "
                             f"{QUICK['bootstrap']} resamples unless given (a smoke run)")
    args = parser.parse_args(argv)
    size = QUICK if args.quick else {"B_ps": B_PS, "ns": NS, "points": 200, "bootstrap": 200}
    args.points = size["points"] if args.points is None else args.points
    args.bootstrap = size["bootstrap"] if args.bootstrap is None else args.bootstrap
    if "numpy" in sys.modules and args.blas_threads != "auto":
        print("note: numpy already imported, --blas-threads has no effect", file=sys.stderr)
    if args.blas_threads != "auto":
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)

    import pandas as pd

    from isocompute.analysis.fits.synthetic import synthetic_evals
    from isocompute.cli import main as cli_main

    work = Path(tempfile.mkdtemp(prefix="bench_analysis_")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        evals = synthetic_evals(B_ps=size["B_ps"], ns=size["ns"], points=args.points, noise=0.01, seed=0)
        csv = work / "evals.csv"
        evals.to_csv(csv, index=False)
        runs = evals.groupby(["B_p", "n"]).ngroups
        print(f"table: {runs} runs x {args.points} evaluation points = {len(evals)} rows -> {csv}")

        out = work / "analysis"
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        rc = cli_main(["analyze", str(csv), "--out", str(out), "--bootstrap", str(args.bootstrap)])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if rc != 0:
            print(f"isocompute analyze failed with exit status {rc}", file=sys.stderr)
            return rc

        timings = pd.read_csv(out / "timings.csv")
        print(f"\n{'phase':<20}{'seconds':>10}")
        for phase, seconds in zip(timings["phase"], timings["seconds"]):
            print(f"{phase:<20}{seconds:>10.2f}")
        other = wall - timings["seconds"].sum()
        print(f"{'(imports, writing)':<20}{other:>10.2f}")
        print(f"{'total (wall)':<20}{wall:>10.2f}")
        print(f"{'total (CPU)':<20}{cpu:>10.2f}")
        figures = len(list((out / "figures").iterdir()))
        verdict = ("no target (quick)" if args.quick
                   else f"{'within' if wall < TARGET_S else 'OVER'} the {TARGET_S:.0f} s target")
        print(f"\n{figures} figure files; load average at start {load:.1f} on {os.cpu_count()} cores; "
              f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; {verdict}")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
