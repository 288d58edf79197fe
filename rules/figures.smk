# Figures of the study (paper Figs. 5-11 and the appendix frontiers), one per
# file, PNG and PDF, declared for `snakemake --report`; and the figure index
# (docs/figures.md: which config, rule and file give each paper figure) for the report.


rule figures:
    input:
        evals=LAYOUT.analysis_evals("{split}"),
        tables=LAYOUT.analysis_tables("{split}"),
    output:
        report(
            directory(LAYOUT.analysis_figures("{split}")),
            patterns=["{name}.png"],
            caption="../workflow/report/figures.rst",
            category="Analysis",
            subcategory="{split}",
        ),
    log:
        LAYOUT.log("analysis/{split}/figures"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    shell:
        "isocompute figures --evals {input.evals} --tables {input.tables} --out {output} > {log} 2>&1"


rule figure_index:
    input:
        FIGURE_INDEX_DOC,
    output:
        report(
            LAYOUT.figure_index,
            caption="../workflow/report/figure_index.rst",
            category="Figure index",
        ),
    log:
        LAYOUT.log("figure_index"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    shell:
        "isocompute figure-index {input} --out {output} > {log} 2>&1"
