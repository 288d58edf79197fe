"""CLI glue of the analysis rules: `isocompute collect` (a split's runs into
one evaluation table and one training pass-rate table) and `isocompute
figures` (every figure from the analysis tables, written atomically)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path


def cmd_collect(args) -> int:
    from isocompute.analysis.collect import collect_runs
    from isocompute.data.schema import write_parquet_atomic

    evals, rates = collect_runs(args.runs)
    write_parquet_atomic(evals, args.out_evals)
    write_parquet_atomic(rates, args.out_train)
    print(f"collected {evals[['B_p', 'n']].drop_duplicates().shape[0]} runs, {len(evals)} evaluation points")
    return 0


def cmd_figures(args) -> int:
    import pandas as pd

    from isocompute.analysis.collect import load_analysis
    from isocompute.analysis.plots import plot_all

    evals = pd.read_parquet(args.evals)
    results = load_analysis(args.tables, evals)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        paths = plot_all(results, tmp)
        shutil.rmtree(out, ignore_errors=True)
        tmp.replace(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"{len(paths)} figure files -> {out}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("collect", help="Gather a split's scored runs into study tables.",
                       description="Concatenate evals.parquet and train_pass_rates.jsonl of run directories.")
    p.add_argument("runs", nargs="+", help="run directories (results/{exp}/runs/{split}/bp{B_p}_n{n})")
    p.add_argument("--out-evals", required=True)
    p.add_argument("--out-train", required=True)
    p.set_defaults(func=cmd_collect)
    p = sub.add_parser("figures", help="Draw every figure from analysis tables.",
                       description="Read the tables of `isocompute analyze` and draw the paper's figures.")
    p.add_argument("--evals", required=True, help="the collected evaluation table")
    p.add_argument("--tables", required=True, help="folder written by `isocompute analyze`")
    p.add_argument("--out", required=True, help="figure folder (replaced atomically)")
    p.set_defaults(func=cmd_figures)
