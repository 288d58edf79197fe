"""Study design before a study runs: which design would establish what the analysis claims, and at
what cost. `assurance` answers it from a finished pilot (`isocompute design PILOT`: truths drawn
from the pilot's bootstrap replicates, `pilot`), `power` on one known truth at a time, the
hand-made ones or a finished study's point fits (`truth`); both judge with the analysis' own chain
(`chain`) and price with the cost model of `isocompute.cluster.plan`, at unit costs measured on a
finished study (`costs`) or a config's cluster.throughput.

`reliability` asks whether the assurance is calibrated, on synthetic pilots of known truths.
The benchmarks print `power`'s numbers (benchmarks/power_nstar.py, benchmarks/power_cost.py) and
`reliability`'s table (benchmarks/bench_design_reliability.py); nothing here imports a benchmark.
"""
