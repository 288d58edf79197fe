"""The analysis chain: evaluation tables -> record points -> sigmoid fits ->
frontiers and n*(C) -> the n* law with bootstrap intervals -> figures; and
the adaptive sweep's pruning rule (adaptive) with its offline replay
(adaptive_replay).

Pure functions over frames live in records, fits (the paper's method), fits_noise
(the default, noise-aware one; `methods` registers both), frontier, nstar,
bootstrap, studies; `isocompute.schedule` (below the analysis: the training recipe
reads it too) says when runs are evaluated; reading files is in io, writing in
pipeline.write_analysis, figures in plots (the `isocompute analyze` command is
`isocompute.cli.analysis`). Import the module that holds a name: this package
imports nothing, so that the command line starts without loading pandas and scipy.
"""
