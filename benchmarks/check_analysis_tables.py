"""Does a change of the analysis code change a number? Re-run `isocompute analyze`
on collected inputs and compare every CSV of tables/ exactly with a reference.

    # the embedded study: the baseline's collected inputs and tables, the analyze rule's --params
    python benchmarks/check_analysis_tables.py study /work/baseline/results/embedded/analysis/{easy,hard} \
        --config /work/baseline/config/config.yaml        # or --params '<the rule's JSON>'
    # small synthetic studies, the reference computed by other code (a source tree, e.g. `git archive`)
    python benchmarks/check_analysis_tables.py synthetic --reference-src /tmp/before/src --work /tmp/check [--quick]

`synthetic --quick` runs one case only (QUICK_CASE: seconds, where the five take
minutes, the embedded study's 200 resamples most of them); `make test` runs it with this
checkout as its own reference, and the study mode on a copy and on a changed copy of its
tables (tests/benchmarks/test_benchmarks.py). A case's folder under --work holds its inputs,
its reference tables (reference/) and analyze_options.json, the options both runs are given.

Each CSV is read back with pandas and compared with
`assert_frame_equal(check_exact=True)`; params.json is not compared (its shape
may change). The analysis runs in a subprocess with this checkout's `src/` (or
`--src`) first on PYTHONPATH. Exit status 1 when a table differs or is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from isocompute import jobs
from isocompute.config import check_config

HERE = Path(__file__).resolve().parents[1]
RUN = "import sys; from isocompute.cli import main; sys.exit(main(sys.argv[1:]))"

# name -> (analyze options, how the synthetic study is made)
SYNTHETIC = {
    "noise_problems": (["--bootstrap", "12", "--grid-points", "30"], dict(problems=200, seeds=1)),
    "noise_seeds_pool_none": (["--bootstrap", "10", "--grid-points", "25", "--pool", "none", "--min-compute", "2000"],
                              dict(problems=200, seeds=2)),
    "noise_unknown_se": (["--bootstrap", "8", "--grid-points", "25", "--no-observed-range"], dict(sd=0.01)),
    "paper_ema": (["--method", "paper", "--ema", "0.5", "--bootstrap", "8", "--grid-points", "25"],
                  dict(sd=0.01)),
    # What the analyze rule passes for a config without an analysis section (the embedded study's):
    # the schema's defaults, filled in by check_config (a job's --params are filled with nothing).
    "rule_params_defaults": (["--params", jobs.as_json(jobs.analysis_params(check_config({})))],
                             dict(problems=200, seeds=1)),
}


QUICK_CASE = "noise_seeds_pool_none"  # the fastest case (about a second), two seeds a cell


def analyze(evals: Path, train: Path | None, out: Path, options, src: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-c", RUN, "analyze", str(evals), "--out", str(out), "--no-figures", *options]
    if train is not None:
        cmd += ["--train-table", str(train)]
    subprocess.run(cmd, check=True, env=env)


def compare(reference: Path, got: Path, new_columns=()) -> tuple[int, list[str]]:
    """(tables compared, problems) of every CSV in `reference` against `got`; a column of
    `new_columns` that `got` has and the reference lacks is left out (a change that adds a column
    keeps every number of the others)."""
    problems, count = [], 0
    for path in sorted(reference.glob("*.csv")):
        if path.name == "timings.csv":      # wall-clock seconds, not results
            continue
        count += 1
        other = got / path.name
        if not other.is_file():
            problems.append(f"{path.name}: missing")
            continue
        try:
            a, b = (_read(p) for p in (path, other))
            b = b.drop(columns=[c for c in new_columns if c in b.columns and c not in a.columns])
            pd.testing.assert_frame_equal(a, b, check_exact=True)
        except AssertionError as exc:
            problems.append(f"{path.name}: {str(exc).splitlines()[0:4]}")
    return count, problems


def _read(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def synthetic_inputs(work: Path, names=tuple(SYNTHETIC)) -> dict[str, tuple[Path, Path, list[str]]]:
    import numpy as np

    from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study

    cases = {}
    for name in names:
        options, how = SYNTHETIC[name]
        d = work / name
        d.mkdir(parents=True, exist_ok=True)
        evals = synthetic_study((16, 32), (4, 8, 16, 32), c_max=2 ** 15,
                                eval_steps=lambda B, M: np.unique(np.linspace(0, M, 14).astype(int)),
                                noise=EvalNoise(seed=3, **how))
        evals["tokens"] = evals["compute"] * 40.0
        rng = np.random.default_rng(0)
        train = evals[evals["step"] > 0][["B_p", "n", "step", "compute"]].drop_duplicates()
        train = train.loc[train.index.repeat(3)].assign(problem_id=np.tile([0, 1, 2], len(train)))
        train["pass_rate"] = rng.random(len(train))
        evals.to_parquet(d / "evals.parquet")
        train.to_parquet(d / "train_pass_rates.parquet")
        (d / "analyze_options.json").write_text(json.dumps(options))   # what the case's tables are made with
        cases[name] = (d / "evals.parquet", d / "train_pass_rates.parquet", options)
    return cases


def rule_params(config: Path) -> str:
    """The analyze rule's --params for a config file (rules/common.smk, `analysis_params_json`)."""
    import yaml

    return jobs.as_json(jobs.analysis_params(check_config(yaml.safe_load(config.read_text()) or {})))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("study", help="a split's analysis folder: evals.parquet, train_pass_rates.parquet, tables/")
    s.add_argument("split_dirs", nargs="+", type=Path)
    given = s.add_mutually_exclusive_group(required=True)
    given.add_argument("--params", help="the analyze rule's --params JSON")
    given.add_argument("--config", type=Path, help="the study's config file: --params as the analyze rule builds "
                                                   "them (seed, analysis, eval.k)")
    y = sub.add_parser("synthetic", help="small synthetic studies, reference by --reference-src")
    y.add_argument("--reference-src", type=Path, required=True)
    y.add_argument("--work", type=Path, default=None)
    y.add_argument("--quick", action="store_true", help=f"the case {QUICK_CASE} only (a smoke run)")
    for p in (s, y):
        p.add_argument("--src", type=Path, default=HERE / "src", help="the code under test")
        p.add_argument("--new-columns", default="", help="comma-separated columns the code under test adds: "
                                                          "left out where the reference lacks them")
    args = ap.parse_args(argv)

    bad, total = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        if args.what == "study":
            params = args.params if args.config is None else rule_params(args.config)
            json.loads(params)
            cases = {d.name: (d / "evals.parquet", d / "train_pass_rates.parquet", ["--params", params],
                              d / "tables") for d in args.split_dirs}
        else:
            work = args.work or Path(tmp)
            cases = {}
            names = (QUICK_CASE,) if args.quick else tuple(SYNTHETIC)
            for name, (evals, train, options) in synthetic_inputs(work, names).items():
                ref = work / name / "reference"
                if not (ref / "fits.csv").is_file():
                    analyze(evals, train, ref, options, args.reference_src)
                cases[name] = (evals, train, options, ref)
        for name, (evals, train, options, ref) in cases.items():
            out = Path(tmp) / f"{name}_now"
            analyze(evals, train if train.is_file() else None, out, options, args.src)
            count, problems = compare(ref, out, [c for c in args.new_columns.split(",") if c])
            total += count
            bad += len(problems)
            print(f"{name}: {count} tables compared, {len(problems)} differ" + "".join(f"\n  {p}" for p in problems))
    print(f"total: {total} tables compared exactly, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
