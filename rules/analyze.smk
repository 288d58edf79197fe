# Analysis: a split's scored runs -> study tables -> record points, sigmoid fits,
# frontiers (fixed B_p, fixed B, joint), the n*(C) law, optima, sensitivity,
# interference, the extrapolation check and the allocation advisor's table
# (isocompute analyze).


rule collect:
    input:
        split_eval_tables,
    output:
        evals=LAYOUT.analysis_evals("{split}"),
        train=LAYOUT.analysis_train("{split}"),
    log:
        LAYOUT.log("analysis/{split}/collect"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        runs=collected_dirs,
    shell:
        "isocompute collect {params.runs} --out-evals {output.evals} --out-train {output.train} > {log} 2>&1"


rule analyze:
    input:
        evals=LAYOUT.analysis_evals("{split}"),
        train=LAYOUT.analysis_train("{split}"),
    output:
        # Of the tables, what the analysis may say (summary) and the allocation
        # advisor's table go into the report (the constrained wildcard picks them),
        # as CSV beside the HTML of rule headline.
        report(
            directory(LAYOUT.analysis_tables("{split}")),
            patterns=["{table,summary|recommendations}.csv"],
            caption="../workflow/report/recommendations.rst",
            category="3. Analysis tables",
            subcategory="{split}",
            labels={"table": "{table}", "file": "{table}.csv"},
        ),
    log:
        LAYOUT.log("analysis/{split}/analyze"),
    benchmark:
        LAYOUT.benchmark("analysis/{split}/analyze")
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        cfg=analysis_params_json(),
    shell:
        "isocompute analyze {input.evals} --train-table {input.train} --params {params.cfg:q} --no-figures"
        " --out {output} > {log} 2>&1"
