"""What a study design costs on this machine: re-measure the unit costs of the power analysis
(`isocompute.design.costs.measure`) on a finished study, and print how well the cost model
(`isocompute.cluster.plan.job_seconds`) prices each of its jobs.

    PYTHONPATH=src .venv/bin/python benchmarks/power_cost.py [results/replicate_pilot]   # re-measure
"""

from __future__ import annotations

import sys
from pathlib import Path

from isocompute.design.costs import measure


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        units, runs = measure(Path(args[0] if args else "results/replicate_pilot"))
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None
    print(runs.round(2).to_string(index=False))
    err = runs["model_s"] - runs["job_s"]
    print(f"\n{units}\nmodel - measured job seconds: mean {err.mean():+.2f}, sd {err.std():.2f}, "
          f"total {runs['model_s'].sum():.0f} vs {runs['job_s'].sum():.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
