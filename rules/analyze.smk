# Analysis: a split's scored runs -> study tables -> record points, sigmoid fits,
# frontiers (fixed B_p, fixed B, joint), the n*(C) law, optima, sensitivity,
# interference and the extrapolation check (isocompute analyze).


rule collect:
    input:
        split_eval_tables,
    output:
        evals=f"{RESULTS}/analysis/{{split}}/evals.parquet",
        train=f"{RESULTS}/analysis/{{split}}/train_pass_rates.parquet",
    params:
        runs=split_run_dirs,
    log:
        f"{RESULTS}/logs/analysis/{{split}}/collect.log",
    conda:
        ANALYSIS_ENV
    shell:
        "isocompute collect {params.runs} --out-evals {output.evals} --out-train {output.train} > {log} 2>&1"


rule analyze:
    input:
        evals=f"{RESULTS}/analysis/{{split}}/evals.parquet",
        train=f"{RESULTS}/analysis/{{split}}/train_pass_rates.parquet",
    output:
        directory(f"{RESULTS}/analysis/{{split}}/tables"),
    params:
        flags=analysis_flags(),
    log:
        f"{RESULTS}/logs/analysis/{{split}}/analyze.log",
    benchmark:
        f"{RESULTS}/benchmarks/analysis/{{split}}/analyze.tsv"
    conda:
        ANALYSIS_ENV
    shell:
        "isocompute analyze {input.evals} --train-table {input.train} {params.flags} --no-figures"
        " --out {output} > {log} 2>&1"
