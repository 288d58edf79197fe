"""`isocompute design PILOT`: which candidate design, run for real, would establish what the analysis
claims, at what cost, judged from a finished pilot study (`isocompute.design.assurance`)."""

from __future__ import annotations

import argparse
from pathlib import Path

DESIGN_DESCRIPTION = """\
Assurance of candidate study designs from a finished pilot: for each design,
the chance that it establishes each claim the analysis makes (n*(C) rises;
n* at C_max determined; the law's U with a usable interval), averaged over
the pilot's uncertainty. Each simulated study draws its truth from one of
the pilot's bootstrap replicates (bootstrap_fits.csv), so a replicate in
which n = 8 never overtakes 4 is a truth the design must face; each run gets
the pilot's run-to-run variation (measured between its seeds where a cell
has 2+, else a stated prior, or --run-sd); its evaluations are binomial from
the design's validation problems x 4 samples. Each study is analysed by the
analysis' own chain. The share of the simulated studies that establish a
claim is printed raw and recalibrated, by a map per claim measured on
synthetic pilots of known truths (isocompute.design.recalibrate), because
the raw share is over-confident. Also the false-claim rate on the pilot's fitted null
(every n of a B_p on one curve), and each design's cost by plan's cost
model: GPU-hours under --configfile's cluster.throughput, else CPU-hours of
the local backend at the unit costs measured on the replication.

PILOT: results/<experiment>/analysis (with --split when it holds several),
results/<experiment>/analysis/<split>, a tables folder, or an evaluation
table (analysed here, --pilot-bootstrap replicates).

A design (--designs, one quoted argument each): 'pilot' (the pilot's own
grid, C_max, validation size, evaluations per doubling and seeds), a named
design of the replication (E15, E17, ...: isocompute.design.power.DESIGNS),
or changes to the pilot's design as KEY=VALUE words: B_p=16 (or 4,8,16),
n=2-32 (powers of two) or 2,4,8, C=2^18, val=400, dbl=4 (evaluations per
doubling), seeds=2, B_max=256, name=NAME. Default: the pilot's design, and
it trained 4x further, with 4x the validation problems, and both.
"""


def register(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("design", help="Assurance and cost of candidate study designs, from a finished pilot study.",
                       description=DESIGN_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pilot", metavar="PILOT", type=Path, help="a finished study's analysis folder or evaluation table")
    p.add_argument("--designs", nargs="+", default=None, metavar="DESIGN",
                   help="candidate designs (above); default: pilot, 'C x4', 'val x4', 'C x4 val x4'")
    p.add_argument("--split", default=None, help="the pilot's split, where it has several")
    p.add_argument("--draws", type=int, default=20, metavar="D",
                   help="truths drawn from the pilot's bootstrap replicates per design (default: 20)")
    p.add_argument("--seeds", type=int, default=1, metavar="K",
                   help="simulated studies on each drawn truth; as many again on the fitted null (default: 1)")
    p.add_argument("--bootstrap", type=int, default=50, metavar="R",
                   help="bootstrap replicates of each simulated study's analysis (default: 50, for time; the "
                        "analysis' own is 200: confirm a chosen design with --bootstrap 200)")
    p.add_argument("--run-sd", type=float, default=None, metavar="SD",
                   help="sd of a run's asymptote about its cell's, in reward (default: measured between the "
                        "pilot's seeds, else the prior isocompute.design.pilot.RUN_SD_PRIOR)")
    p.add_argument("--pilot-bootstrap", type=int, default=None, metavar="R",
                   help="bootstrap replicates when PILOT is an evaluation table (default: the analysis')")
    p.add_argument("--configfile", type=Path, default=None, metavar="CONFIG",
                   help="price the designs in GPU-hours by this config's cluster.throughput (as `isocompute plan`); "
                        "default: CPU-hours of the local backend")
    p.add_argument("--cores", type=int, default=2, help="cores the local backend's jobs share, for the wall clock "
                                                        "(default: 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated noise (default: 0)")
    p.add_argument("--out", type=Path, default=None, metavar="CSV", help="write the table as CSV (and the "
                                                                         "simulated studies beside it, *_studies.csv)")
    p.set_defaults(func=cmd_design)
    return p


def cmd_design(args) -> int:
    from isocompute import atomic
    from isocompute.cli.common import progress
    from isocompute.config import load_config
    from isocompute.design.assurance import Plan, assess, default_designs, design_of, table_text
    from isocompute.design.pilot import read_pilot
    from isocompute.errors import InputError

    for flag, value, least in (("--draws", args.draws, 1), ("--seeds", args.seeds, 1), ("--bootstrap", args.bootstrap, 2),
                               ("--cores", args.cores, 1)):
        if value < least:
            raise InputError(f"{flag} {value}: must be at least {least}")
    config = load_config(args.configfile) if args.configfile is not None else None
    pilot = read_pilot(args.pilot, args.split, run_sd=args.run_sd, bootstrap=args.pilot_bootstrap)
    designs = ([design_of(t, pilot.design) for t in args.designs] if args.designs
               else default_designs(pilot.design))
    plan = Plan(draws=args.draws, seeds=args.seeds, bootstrap=args.bootstrap, seed=args.seed)
    table, studies = assess(designs, pilot, plan, config, args.cores,
                            progress=lambda total: progress(total=total, desc="design: simulated studies", unit="study"))
    print(table_text(table, pilot, plan))
    if args.out is not None:
        atomic.write_text(args.out, table.to_csv(index=False))
        atomic.write_text(args.out.with_name(args.out.stem + "_studies.csv"), studies.to_csv(index=False))
    return 0
