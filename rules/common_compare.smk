# Studies side by side (config `compare`; paper Figs. 12 and 13), the named functions
# of rules/compare.smk and the check of its entries. Finished
# experiments' analyses, read from their own results folders, drawn in one
# figure each (isocompute compare). An entry naming a missing analysis stops
# the workflow by name here, before any job (isocompute.analysis.outputs.compare).

import shlex

from isocompute.analysis.outputs.compare import check_comparisons, comparison_sources

try:
    # This workflow's own analyses count as present, with the B_p its grid trains:
    # it makes them first.
    check_comparisons(
        config,
        made_here={
            path: {c.B_p for c in CELLS if c.split == s}
            for s in analysis_splits()
            for path in (LAYOUT.analysis_evals(s), LAYOUT.analysis_tables(s))
        },
    )
except ConfigError as _err:
    sys.stderr.write(f"isocompute config error: {_err}\n")
    sys.exit(1)


wildcard_constraints:
    comparison="|".join(sorted(config["compare"])) or "none",


def comparison_inputs(wildcards):
    """Each compared analysis: its evaluation table and its tables folder."""
    spec = config["compare"][wildcards.comparison]
    return [p for s in comparison_sources(spec) for p in (s.evals, s.tables)]


def comparison_args(wildcards):
    """The command line of an entry: --experiment LABEL RESULTS per experiment (either
    may hold '='), and the figure's options: a changed entry redraws its figure only."""
    spec = config["compare"][wildcards.comparison]
    args = [
        a
        for e in spec["experiments"]
        for a in ("--experiment", e["label"], experiment_results(e))
    ]
    args += ["--splits", *spec["splits"], "--figure", spec["figure"]]
    if spec["B_p"] is not None:
        args += ["--bp", str(spec["B_p"])]
    if spec["title"]:
        args += ["--title", spec["title"]]
    return shlex.join(args)


def experiment_results(entry):
    return entry.get("results") or f"{LAYOUT.root}/{entry['experiment']}"


def comparison_stem(wildcards, output):
    return os.path.splitext(output.png)[0]


def compare_targets():
    return [f"{LAYOUT.compare_stem(name)}.png" for name in sorted(config["compare"])]
