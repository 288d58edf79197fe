# Figures of the study (paper Figs. 5-11 and the appendix frontiers), one per
# file, PNG and PDF, declared for `snakemake --report`.


rule figures:
    input:
        evals=f"{RESULTS}/analysis/{{split}}/evals.parquet",
        tables=f"{RESULTS}/analysis/{{split}}/tables",
    output:
        report(
            directory(f"{RESULTS}/analysis/{{split}}/figures"),
            patterns=["{name}.png"],
            caption="../workflow/report/figures.rst",
            category="Analysis",
            subcategory="{split}",
        ),
    log:
        f"{RESULTS}/logs/analysis/{{split}}/figures.log",
    conda:
        ANALYSIS_ENV
    shell:
        "isocompute figures --evals {input.evals} --tables {input.tables} --out {output} > {log} 2>&1"
