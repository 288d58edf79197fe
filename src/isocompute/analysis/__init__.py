"""The analysis chain, in rooms by stage; a module imports only from its own room or
the rooms below it (the layers contract in pyproject.toml):

    inputs/    reading and checking the evaluation and training tables, collecting a
               split's runs, the recipe variants' runs, the cross-evaluation table
    fits/      record points, the sigmoid fits (the paper's method and the noise-aware
               default), pooling, the method registry, the analysis settings
    frontier/  the compute-optimal envelope, the n* law, bootstrap intervals, what may
               be claimed, the secondary studies, the allocation advice
    adaptive/  the adaptive sweep's pruning rule and its offline replay
    outputs/   the tables folder analyze writes and its readers (manifest, headline,
               figure index, comparisons of studies)
    plots/     the figures, drawn from the tables
    pipeline   the chain end to end: `run_analysis` (frames in, frames out) and
               `write_analysis` (the one writer of the tables folder)

adaptive, outputs and plots sit side by side and do not import each other.
`isocompute.schedule` (below the analysis: the training recipe reads it too) says
when runs are evaluated; the `isocompute analyze` command is `isocompute.cli.analysis`.
This package imports nothing, so that the command line starts without pandas and scipy.
"""
