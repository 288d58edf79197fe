"""Study design before a study runs: which design would establish that n* rises, and at what
cost (`power`), judged on known truths, the hand-made ones or a finished study's own fits
(`truth`), with the analysis' own chain (`chain`) and the cost model of `isocompute.cluster.plan`
priced with unit costs measured on a finished study (`costs`).

The benchmarks print its numbers (benchmarks/power_nstar.py, benchmarks/power_cost.py);
nothing here imports a benchmark.
"""
